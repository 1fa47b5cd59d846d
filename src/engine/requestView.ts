/**
 * What the engine reads of a request. A Web `Request` is enough; a server adapter may instead pass
 * a {@link RequestView} of its own request object, which spares building a `Request` (headers
 * copied, URL parsed, body stream set up) on every unpaid request.
 *
 * @module
 */

/** Header look-up by name, as `Headers.get` (names are matched case-insensitively). */
export type HeaderLookup = { get(name: string): string | null }

/**
 * A request as a server adapter sees it, without a Web `Request`: the absolute URL, a header
 * look-up, and the body bytes when the route needed them read (routes with a body schema).
 */
export type RequestView = {
  /** Absolute URL: scheme, host and the request target as received. */
  readonly url: string
  /** The HTTP method, upper case (absent: not known to the adapter). */
  readonly method?: string | undefined
  readonly headers: HeaderLookup
  /** The body, read once by the adapter (undefined: no body, or not read because not needed). */
  readonly bodyBytes: Uint8Array | undefined
}

/** A Web `Request` or an adapter's {@link RequestView}. */
export type EngineRequest = Request | RequestView

/** Whether a request is an adapter's view (its body is in `bodyBytes`). */
export function isRequestView(request: EngineRequest): request is RequestView {
  return 'bodyBytes' in request
}
