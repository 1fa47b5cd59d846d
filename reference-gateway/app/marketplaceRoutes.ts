/**
 * The marketplace's routes: the signed agent routes at `/v1/agent` (the removed names answered
 * with where they went), the live activity feed, reviews at `/v1/reviews`, and the search over the
 * gateway's own services and the listed sellers at `/v1/services`.
 *
 * @module
 */
import type { Hono } from 'hono'
import { type DiscoveryOptions, servicesDocument } from '../discovery/index.js'
import { activityRoutes } from '../marketplace/activity.js'
import { renamedRouteResponse, renamedRoutes } from '../marketplace/renamed.js'
import { reviewRoutes } from '../marketplace/reviews.js'
import { marketplaceRoutes } from '../marketplace/routes.js'
import { ownServiceItems, searchServices, servicesQuerySchema } from '../marketplace/services.js'
import type { GatewayAppOptions, GatewayEnv } from './app.js'

/**
 * Registers the marketplace's routes on `app`; nothing without `options.marketplace`.
 *
 * @example
 * ```ts
 * mountMarketplaceRoutes(app, options, discoveryOptionsOf(options))
 * ```
 */
export function mountMarketplaceRoutes(
  app: Hono<GatewayEnv>,
  options: GatewayAppOptions,
  discovery: DiscoveryOptions,
): void {
  const { catalog } = options
  const sales = options.marketplace?.activity
  if (options.marketplace) {
    for (const [removed, replacedBy] of Object.entries(renamedRoutes)) {
      app.all(removed, () => renamedRouteResponse(replacedBy))
    }
    app.route('/v1/agent', marketplaceRoutes(options.marketplace))
    if (sales)
      app.route(
        '/',
        activityRoutes({
          ...sales,
          activity: sales.store,
          store: options.marketplace.store,
          asset: options.seller.asset,
        }),
      )
    const reviews = options.marketplace.reviews
    if (reviews)
      app.route(
        '/v1/reviews',
        reviewRoutes({
          ...options.marketplace,
          reviews: reviews.store,
          purchases: reviews.purchases,
        }),
      )
    const own = ownServiceItems(servicesDocument(catalog, discovery))
    const store = options.marketplace.store
    app.get('/v1/services', async (c) => {
      const query = servicesQuerySchema.safeParse(c.req.query())
      if (!query.success) {
        const issue = query.error.issues[0]
        return c.json(
          {
            error: {
              code: 'invalid_request_body',
              message: `${issue?.path.join('.') || 'query'}: ${issue?.message ?? 'invalid'}`,
            },
          },
          400,
        )
      }
      return c.json(await searchServices(own, store, query.data))
    })
  }
}
