/**
 * The gateway's Hono application, generated from the catalog: every paid endpoint is a `POST` whose
 * body is validated before payment (400 naming the field, 413 over the limit), priced by the Hono
 * adapter (`tollgate/hono`), then served by its upstream family. A failed or timed-out upstream call
 * answers ≥ 500, which the paywall records as a failed paid call: the refund worker pays it back,
 * exactly once, with the operator key. Streamed chat passes through byte for byte after settlement.
 *
 * ```
 * request ─▶ request id, metrics, log ─▶ route
 *   POST <catalog path>  ─▶ paywall (validate ▸ 402 ▸ settle) ─▶ callUpstream ─▶ 200 | 502/504 (refunded)
 *   GET  <free path>     ─▶ callUpstream
 *   POST /open/v1/chat/completions ─▶ paywall ─▶ inference API, keyless   (GET /open/v1/models: its list)
 *   POST /v1/chat/completions (bearer key) · GET /v1/models · POST /v1/credit/<usdc> (paywall)
 *   GET  /openapi.json /.well-known/x402.json /api/services /llms.txt /   (computed once)
 *   GET  /blobs/:name  /healthz  /readyz  /metrics
 *   /v1/jobs/…           ─▶ escrowed jobs: terms (402), signed moves relayed to the ledger, reviews
 * ```
 *
 * This module builds the app only; `server/server.ts` wires configuration, stores, ledger and listening.
 * Each area's routes have their module, mounted here in order: the middleware
 * (`middleware.ts`), the catalog (`catalogRoutes.ts`), the inference API
 * (`inferenceRoutes.ts`), discovery (`discoveryRoutes.ts`), health and metrics
 * (`healthRoutes.ts`), jobs (`../jobs/routes.ts`) and the marketplace (`marketplaceRoutes.ts`).
 *
 * @module
 */
import { Hono } from 'hono'
import type { RequestIdVariables } from 'hono/request-id'
import { type Methods, PaymentError, type PaymentInfo, type SellerOptions } from 'tollgate'
import { type HonoPaywall, paywall, type TollgateEnv } from 'tollgate/hono'
import type { HostResolver } from 'tollgate/node'
import type { LocalBlobStore } from '../blobs/local.js'
import { type Catalog, validateCatalog } from '../catalog/catalog.js'
import { type ConsoleOptions, consoleRoutes } from '../console/routes.js'
import type { InferenceApi } from '../inference/api.js'
import type { KeyStore } from '../inference/keys.js'
import { type JobRoutesOptions, jobRoutes } from '../jobs/routes.js'
import { recordGatewaySale } from '../marketplace/activity.js'
import type { MarketplaceRoutesOptions } from '../marketplace/routes.js'
import type { GatewayMetrics } from '../metrics.js'
import { errorFields } from '../startup.js'
import { familyOperations } from '../upstreams/families.js'
import { mountCatalogRoutes } from './catalogRoutes.js'
import { discoveryOptionsOf, mountDiscoveryRoutes } from './discoveryRoutes.js'
import { mountHealthRoutes } from './healthRoutes.js'
import { mountInferenceRoutes } from './inferenceRoutes.js'
import { mountMarketplaceRoutes } from './marketplaceRoutes.js'
import { useGatewayMiddleware } from './middleware.js'

/** A pino-compatible logger. */
export type GatewayLogger = {
  info(object: Record<string, unknown>, message?: string): void
  warn(object: Record<string, unknown>, message?: string): void
  error(object: Record<string, unknown>, message?: string): void
  debug(object: Record<string, unknown>, message?: string): void
}

/** What `/healthz` says about the ledger. */
export type LedgerInfo = {
  url: string
  network: string
  emulated: boolean
  /**
   * How the local ledger was found (shown by `/healthz` and the start banner): `started` on the
   * port asked for; `joined`: a `tollgate ledger` already ran there; `moved`: that port was taken by
   * something else, so it listens on another one. `note` says it in a sentence.
   */
  local?: { mode: 'started' | 'joined' | 'moved'; note: string } | undefined
}

/** Options of {@link createGatewayApp}: everything already resolved by `server/server.ts`. */
export type GatewayAppOptions = {
  /** The catalog, with upstream base URLs resolved (real, configured or stub). */
  catalog: Catalog
  /** The seller side (payTo, ledger, store, secrets, refund signer, …) for `tollgate/hono`. */
  seller: SellerOptions & { publicBaseUrl: string; network: string; asset: string }
  /** Provider keys by the catalog's credential name. Only ever sent to the upstream. */
  providerKeys: Readonly<Record<string, string>>
  /** Where media results go; served under `/blobs/`. */
  blobs: LocalBlobStore
  metrics: GatewayMetrics
  logger: GatewayLogger
  ledger: LedgerInfo
  /** What `/healthz` reports besides the ledger (store kind, upstream mode, version). */
  health?: Readonly<Record<string, unknown>> | undefined
  /**
   * Readiness checks (`/readyz`): name → probe; a probe that throws makes the gateway not ready, and
   * `/readyz` says why (`reasons.<name>`: the error and its cause, secrets removed).
   */
  readiness?: Readonly<Record<string, () => Promise<unknown>>> | undefined
  /** Values never written in a log or an answer (database URLs, keys): replaced by `[redacted]`. */
  redact?: readonly string[] | undefined
  /** Per-attempt upstream timeout override, ms. Default each family's own. */
  upstreamTimeoutMs?: number | undefined
  /** Allow media downloads from loopback/private hosts (the stub upstreams). Default false. */
  allowInternalHosts?: boolean | undefined
  /** Resolver of media host names (tests). Default `node:dns`. */
  resolveHost?: HostResolver | undefined
  /** Fetch used for upstream calls. Default `globalThis.fetch`. */
  fetch?: typeof globalThis.fetch | undefined
  /** Escrowed jobs at `/v1/jobs` (see docs/escrow.md); off when undefined. */
  jobs?: JobRoutesOptions | undefined
  /**
   * The session methods (docs/protocol.md §7): per call on the catalog's paid routes, per streamed
   * token on the keyless inference route. Absent: one-off payments only.
   */
  sessions?:
    | { readonly perCall: Methods.SessionMethod; readonly perToken: Methods.SessionMethod }
    | undefined
  /** The marketplace's signed routes at `/v1/agent` (see docs/marketplace.md); off when undefined. */
  marketplace?: MarketplaceRoutesOptions | undefined
  /**
   * The private inference API (`/v1/…`, and the catalog services `servedBy: 'inference'`). Without
   * it those services go to their upstream like any other.
   */
  inference?: GatewayInference | undefined
  /**
   * Browser origins allowed to call the gateway (CORS): `['*']` (default), a list of origins, or
   * `['none']` for no CORS headers. Preflights are answered; the payment headers are exposed.
   */
  corsOrigins?: readonly string[] | undefined
  /** The owner's console at `/console` (see docs/inference.md); off when undefined. */
  console?: Omit<ConsoleOptions, 'fetch'> | undefined
  /**
   * Replaces what prices the paid routes, for benchmarks and tests only: given the paywall, returns
   * the `pay` every paid route (catalog, keyless inference, credit top-ups) is built with instead of
   * the paywall's own — e.g. one that serves some requests of a route without payment, after the
   * same body checks (`bench/session/passThrough.ts`, the unpaid baseline of `npm run
   * bench:session`). Default: the paywall's `pay`. The paywall itself (refund worker, lease sweeper,
   * `GatewayApp.paywall`) is built either way.
   *
   * Security: whatever it returns decides whether a paid route is paid; never set it in production.
   */
  pay?: ((paywall: HonoPaywall) => HonoPaywall['pay']) | undefined
}

/** The private inference API as the app serves it. */
export type GatewayInference = {
  api: InferenceApi
  /** Keys and credit (for the paid top-ups). */
  keys: KeyStore
  /** Credit packs sold on `POST /v1/credit/<usdc>` (USDC decimals). */
  topUps: readonly string[]
}

/** Hono variables of the gateway. */
export type GatewayEnv = {
  Variables: TollgateEnv['Variables'] & RequestIdVariables & { startedAt: number }
}

/** The built app. */
export type GatewayApp = {
  app: Hono<GatewayEnv>
  /** The Hono paywall (engine, refund worker). */
  paywall: HonoPaywall
  /** Paid calls settled and not yet finished (served or owed a refund). */
  paidInFlight(): number
}

/**
 * Builds the gateway app. Refuses an invalid catalog (every problem listed).
 *
 * @example
 * ```ts
 * const { app } = createGatewayApp({ catalog, seller, providerKeys, blobs, metrics, logger, ledger })
 * serve({ fetch: app.fetch, port: 4020 })
 * ```
 */
export function createGatewayApp(options: GatewayAppOptions): GatewayApp {
  const { catalog, metrics, logger } = options
  const checked = validateCatalog(catalog, { operations: familyOperations })
  if (checked.status === 'invalid') {
    throw new PaymentError(
      'invalid_config',
      `The catalog is invalid:\n  ${checked.problems.join('\n  ')}`,
      { details: { catalogProblems: checked.problems } },
    )
  }
  let inFlight = 0
  const onEvent = options.seller.onEvent
  const sales = options.marketplace?.activity
  const recordSale =
    sales &&
    ((payment: PaymentInfo) =>
      void recordGatewaySale(sales.store, options.seller, payment).catch((error) =>
        logger.warn({ event: 'activity_record_failed', error: errorFields(error, options.redact) }),
      ))
  const paid = paywall({
    ...options.seller,
    logger: options.seller.logger ?? logger,
    onEvent(event) {
      if (event.type === 'settled') inFlight++
      if (event.type === 'served' || event.type === 'refund_due')
        inFlight = Math.max(0, inFlight - 1)
      metrics.payment(event)
      // A payment that moved money on the ledger is a sale. A session's calls move none: its
      // sales are its settlements and its close, recorded as they are made (server/sessions.ts).
      if (
        event.type === 'settled' &&
        event.payment.amount > 0n &&
        event.payment.channelId === undefined
      ) {
        recordSale?.(event.payment)
      }
      onEvent?.(event)
    },
  })
  const discovery = discoveryOptionsOf(options)

  const app = new Hono<GatewayEnv>()
  useGatewayMiddleware(app, options)
  // The paid routes' pricing: the paywall itself, unless a benchmark or test replaced its `pay`.
  const pricing = options.pay === undefined ? paid : { pay: options.pay(paid) }
  mountCatalogRoutes(app, pricing, options)
  if (options.inference !== undefined)
    mountInferenceRoutes(app, pricing, options.inference, options.seller.trustProxy === true)
  mountDiscoveryRoutes(app, options, discovery)
  app.get('/blobs/:name', (c) => options.blobs.serve(c.req.param('name')))
  mountHealthRoutes(app, options)
  if (options.jobs) app.route('/v1/jobs', jobRoutes(options.jobs))
  mountMarketplaceRoutes(app, options, discovery)
  if (options.console)
    app.route(
      '/console',
      consoleRoutes({ ...options.console, fetch: async (i, o) => app.request(i, o) }),
    )
  app.notFound((c) =>
    c.json({ error: { code: 'not_found', message: 'No such route. See /openapi.json.' } }, 404),
  )
  app.onError((error, c) => {
    logger.error({
      requestId: c.get('requestId'),
      event: 'unhandled',
      route: c.req.path,
      error: errorFields(error, options.redact),
    })
    return c.json({ error: { code: 'internal', message: 'Internal error.' } }, 500)
  })

  return { app, paywall: paid, paidInFlight: () => inFlight }
}
