/**
 * The discovery routes: the OpenAPI document, the x402 manifest, `/api/services`, `llms.txt` and the
 * catalog page, each computed once from the catalog. With the marketplace, the manifest and
 * `llms.txt` list its sellers too (`/discovery/*`), and the page shows them and the live feed.
 *
 * @module
 */
import type { Hono } from 'hono'
import {
  catalogPageRenderer,
  type DiscoveryOptions,
  llmsTxt,
  openApiDocument,
  servicesDocument,
  x402Manifest,
} from '../discovery/index.js'
import { listedDiscoveryRoutes } from '../discovery/listed.js'
import { catalogPageRoute } from '../discovery/pageMarketplace.js'
import { inferenceOpenApi } from '../inference/openapi.js'
import { errorFields } from '../startup.js'
import type { GatewayAppOptions, GatewayEnv } from './app.js'

const jsonHeaders = { 'content-type': 'application/json; charset=utf-8' }

/**
 * What the discovery documents say of the gateway: where it is, whom it pays, which parts it has.
 *
 * @example
 * ```ts
 * const discovery = discoveryOptionsOf(options)
 * ```
 */
export function discoveryOptionsOf(options: GatewayAppOptions): DiscoveryOptions {
  return {
    publicBaseUrl: options.seller.publicBaseUrl,
    payTo: options.seller.payTo,
    network: options.seller.network,
    asset: options.seller.asset,
    jobs: options.jobs !== undefined,
    ...(options.ledger.emulated ? { testMoney: { ledgerUrl: options.ledger.url } } : {}),
    marketplace: options.marketplace !== undefined,
  }
}

/**
 * Registers the discovery routes on `app`.
 *
 * @example
 * ```ts
 * mountDiscoveryRoutes(app, options, discoveryOptionsOf(options))
 * ```
 */
export function mountDiscoveryRoutes(
  app: Hono<GatewayEnv>,
  options: GatewayAppOptions,
  discovery: DiscoveryOptions,
): void {
  const { catalog, logger } = options
  const sales = options.marketplace?.activity
  const inference = options.inference
  const extra =
    inference === undefined
      ? undefined
      : inferenceOpenApi({
          topUps: inference.topUps,
          network: discovery.network,
          asset: discovery.asset,
          payTo: discovery.payTo,
        })
  const documents = {
    openapi: JSON.stringify(openApiDocument(catalog, discovery, extra)),
    manifest: JSON.stringify(x402Manifest(catalog, discovery)),
    services: JSON.stringify(servicesDocument(catalog, discovery)),
    llms: llmsTxt(catalog, discovery),
    page: catalogPageRenderer(catalog, discovery),
  }

  // With the marketplace: the x402 manifest and llms.txt with listed sellers, and /discovery/*.
  if (options.marketplace)
    app.route('/', listedDiscoveryRoutes({ catalog, discovery, store: options.marketplace.store }))
  app.get('/openapi.json', () => new Response(documents.openapi, { headers: jsonHeaders }))
  app.get(
    '/.well-known/x402.json',
    () => new Response(documents.manifest, { headers: jsonHeaders }),
  )
  app.get('/api/services', () => new Response(documents.services, { headers: jsonHeaders }))
  app.get(
    '/llms.txt',
    () =>
      new Response(documents.llms, { headers: { 'content-type': 'text/plain; charset=utf-8' } }),
  )
  // With the marketplace, the page shows its listed sellers and live feed as they are now.
  const market = options.marketplace
  const pageSources = market && {
    ...market,
    reviews: market.reviews?.store,
    activity: sales?.store,
  }
  app.get(
    '/',
    catalogPageRoute(documents.page, pageSources, (error) =>
      logger.warn({ event: 'catalog_page_failed', error: errorFields(error, options.redact) }),
    ),
  )
}
