/**
 * Spec 9: the old "offering" route names were removed with no aliases when they became "service"
 * names. A request to one gets a 404 whose error names the route that replaced it, so an old client
 * learns what to call instead. Only routes whose replacement is served are listed.
 *
 * @module
 */

/** Removed route → the route that replaced it. */
export const renamedRoutes: Readonly<Record<string, string>> = {
  '/v1/offerings': '/v1/services',
  '/v1/agent/offering': '/v1/agent/service',
  '/v1/agent/offerings': '/v1/agent/service',
}

/** The 404 answer to a removed route (code `route_renamed`, with `replacedBy`). */
export function renamedRouteResponse(replacedBy: string): Response {
  return Response.json(
    {
      error: {
        code: 'route_renamed',
        message: `This route was renamed and is no longer served; use ${replacedBy}.`,
        replacedBy,
      },
    },
    { status: 404 },
  )
}
