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
 * This module builds the app only; `server.ts` wires configuration, stores, ledger and listening.
 *
 * @module
 */
import { type Context, Hono } from 'hono'
import { cors } from 'hono/cors'
import { type RequestIdVariables, requestId } from 'hono/request-id'
import { routePath } from 'hono/route'
import { formatAmount, PaymentError, type PaymentInfo, type SellerOptions } from 'tollgate'
import { type HonoPaywall, paywall, type TollgateEnv } from 'tollgate/hono'
import type { HostResolver } from 'tollgate/node'
import type { LocalBlobStore } from './blobs/local.js'
import {
  type Catalog,
  type CatalogEntry,
  entries,
  type FreeEndpoint,
  type PaidEndpoint,
  routePathOf,
  validateCatalog,
  validatePathParams,
} from './catalog/catalog.js'
import { validateBody } from './catalog/shapes.js'
import {
  catalogPageRenderer,
  type DiscoveryOptions,
  llmsTxt,
  openApiDocument,
  servicesDocument,
  x402Manifest,
} from './discovery/index.js'
import { listedDiscoveryRoutes } from './discovery/listed.js'
import { catalogPageRoute } from './discovery/pageMarketplace.js'
import type { InferenceApi } from './inference/api.js'
import { receiptKeysPath } from './inference/gatewayReceipt.js'
import type { KeyStore } from './inference/keys.js'
import { inferenceOpenApi, topUpBodySchema, topUpPath } from './inference/openapi.js'
import type { ChatRequest } from './inference/request.js'
import { type JobRoutesOptions, jobRoutes } from './jobs/routes.js'
import { activityRoutes, recordGatewaySale } from './marketplace/activity.js'
import { renamedRouteResponse, renamedRoutes } from './marketplace/renamed.js'
import { reviewRoutes } from './marketplace/reviews.js'
import { type MarketplaceRoutesOptions, marketplaceRoutes } from './marketplace/routes.js'
import { ownServiceItems, searchServices, servicesQuerySchema } from './marketplace/services.js'
import type { GatewayMetrics } from './metrics.js'
import { errorFields, reasonOf } from './startup.js'
import { families, familyOperations } from './upstreams/families.js'
import { callUpstream, type UpstreamResult } from './upstreams/upstream.js'

/** A pino-compatible logger. */
export type GatewayLogger = {
  info(object: Record<string, unknown>, message?: string): void
  warn(object: Record<string, unknown>, message?: string): void
  error(object: Record<string, unknown>, message?: string): void
  debug(object: Record<string, unknown>, message?: string): void
}

/** What `/healthz` says about the ledger. */
export type LedgerInfo = { url: string; network: string; emulated: boolean }

/** Options of {@link createGatewayApp}: everything already resolved by `server.ts`. */
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
}

/** The private inference API as the app serves it. */
export type GatewayInference = {
  api: InferenceApi
  /** Keys and credit (for the paid top-ups). */
  keys: KeyStore
  /** Credit packs sold on `POST /v1/credit/<usdc>` (USDC decimals). */
  topUps: readonly string[]
}

/** Request headers a browser may send: the body type and both dialects' payment headers. */
export const corsAllowHeaders = [
  'Content-Type',
  'X-PAYMENT',
  'PAYMENT-SIGNATURE',
  'Authorization',
  'X-Request-Id',
]
/** Response headers a page may read: the 402 challenge, both dialects' receipts, retry hints. */
export const corsExposeHeaders = [
  'WWW-Authenticate',
  'PAYMENT-REQUIRED',
  'X-PAYMENT-RESPONSE',
  'PAYMENT-RESPONSE',
  'Payment-Receipt',
  'X-Request-Id',
  'Retry-After',
  'x-receipt-id',
]

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

const jsonHeaders = { 'content-type': 'application/json; charset=utf-8' }

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
      if (event.type === 'settled') recordSale?.(event.payment)
      onEvent?.(event)
    },
  })
  const discovery: DiscoveryOptions = {
    publicBaseUrl: options.seller.publicBaseUrl,
    payTo: options.seller.payTo,
    network: options.seller.network,
    asset: options.seller.asset,
    jobs: options.jobs !== undefined,
    ...(options.ledger.emulated ? { testMoney: { ledgerUrl: options.ledger.url } } : {}),
    marketplace: options.marketplace !== undefined,
  }
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

  const app = new Hono<GatewayEnv>()
  const origins = options.corsOrigins ?? ['*']
  if (!origins.includes('none')) {
    app.use(
      cors({
        origin: origins.includes('*') ? '*' : [...origins],
        allowMethods: ['GET', 'HEAD', 'POST', 'OPTIONS'],
        allowHeaders: corsAllowHeaders,
        exposeHeaders: corsExposeHeaders,
        maxAge: 600,
      }),
    )
  }
  app.use(requestId())
  // Every answer carries the request id, also a Response a handler built itself.
  app.use(async (c, next) => {
    await next()
    if (c.res.headers.has('x-request-id')) return
    const id = c.get('requestId')
    try {
      c.res.headers.set('x-request-id', id)
    } catch {
      // Immutable headers (a fetched Response passed on): answer a copy.
      const headers = new Headers(c.res.headers)
      headers.set('x-request-id', id)
      c.res = new Response(c.res.body, {
        status: c.res.status,
        statusText: c.res.statusText,
        headers,
      })
    }
  })
  app.use(async (c, next) => {
    const startedAt = performance.now()
    c.set('startedAt', startedAt)
    await next()
    const matched = routePath(c, -1)
    const route = matched === '/*' || matched === '*' || matched === '' ? 'unmatched' : matched
    const seconds = (performance.now() - startedAt) / 1000
    metrics.request(route, c.req.method, c.res.status, seconds)
    if (route !== '/metrics' && route !== '/healthz' && route !== '/readyz') {
      logger.info({
        requestId: c.get('requestId'),
        method: c.req.method,
        route,
        status: c.res.status,
        ms: Math.round(seconds * 1000),
      })
    }
  })

  function upstreamCall(
    entry: CatalogEntry,
    body: Record<string, unknown>,
    signal: AbortSignal,
    requestId: string | undefined,
    pathParams: Readonly<Record<string, string>> = {},
  ): Promise<UpstreamResult> {
    const { service, endpoint } = entry
    const credential = service.upstream.credential
    return callUpstream({
      family: families[service.family],
      operation: endpoint.upstream.operation,
      body,
      defaults: endpoint.upstream.defaults,
      params: { ...endpoint.upstream.params, ...pathParams },
      baseUrl: service.upstream.baseUrl,
      apiKey: credential === undefined ? undefined : options.providerKeys[credential],
      blobs: options.blobs,
      fetch: options.fetch,
      timeoutMs: options.upstreamTimeoutMs,
      signal,
      requestId,
      allowInternalHosts: options.allowInternalHosts ?? false,
      resolveHost: options.resolveHost,
      onEvent: (event) => metrics.upstream(event),
    })
  }

  function failure(
    entry: CatalogEntry,
    result: Extract<UpstreamResult, { status: 'failed' }>,
    requestId: string,
    charged: boolean,
  ): Response {
    logger.warn({
      requestId,
      event: 'upstream_failed',
      route: entry.endpoint.path,
      family: entry.service.family,
      reason: result.reason,
      upstreamStatus: result.upstreamStatus,
    })
    const message = charged
      ? 'The upstream service failed. This call is not charged: your payment is refunded automatically.'
      : 'The upstream service failed.'
    return Response.json(
      { error: { code: 'upstream_failed', message, reason: result.reason, requestId } },
      { status: result.retryable ? 504 : 502 },
    )
  }

  for (const entry of entries(catalog)) {
    const endpoint = entry.endpoint
    if (inference !== undefined && entry.service.servedBy === 'inference') {
      if (endpoint.kind === 'paid') {
        const route = paid.pay(endpoint.price, {
          description: `${entry.service.name}: ${endpoint.summary}`,
          // The catalog shape first (its allow-list and caps), then the inference API's own checks
          // (a model it serves keyless, the context window): refused with 400 before any payment.
          body: (input: unknown) => {
            const shaped = validateBody(endpoint.shape, input)
            if (shaped.status === 'invalid') return shaped
            return inference.api.checkKeyless(shaped.body)
          },
          maxBodyBytes: endpoint.maxBodyBytes,
        })
        app.post(endpoint.path, route, (c) => {
          metrics.settlement((performance.now() - c.get('startedAt')) / 1000)
          const outgoing = (c.env as { outgoing?: { destroy(error: Error): void } } | undefined)
            ?.outgoing
          return inference.api.serveKeyless(c.get('tollgate').body as ChatRequest, {
            requestId: c.get('requestId'),
            payment: c.get('tollgate').payment,
            signal: c.req.raw.signal,
            // On Node, a stream that broke fails the response itself: the paywall sees a failed
            // call (and refunds it) instead of a response that ended.
            fail:
              outgoing === undefined
                ? undefined
                : (error) => {
                    outgoing.destroy(error)
                    return true
                  },
          })
        })
      } else {
        app.get(endpoint.path, () => inference.api.listKeylessModels())
      }
      continue
    }
    if (endpoint.kind === 'paid') {
      const paidEntry = entry as CatalogEntry<PaidEndpoint>
      const route = paid.pay(endpoint.price, {
        description: `${entry.service.name}: ${endpoint.summary}`,
        body: (input: unknown) => {
          const result = validateBody(endpoint.shape, input)
          return result.status === 'valid'
            ? result
            : { status: 'invalid', field: result.field, message: result.message }
        },
        maxBodyBytes: endpoint.maxBodyBytes,
      })
      const handlers = [
        route,
        async (c: Context<GatewayEnv>) => {
          metrics.settlement((performance.now() - c.get('startedAt')) / 1000)
          const info = c.get('tollgate')
          const result = await upstreamCall(
            paidEntry,
            info.body as Record<string, unknown>,
            c.req.raw.signal,
            info.payment.digest,
            endpoint.pathParams === undefined ? {} : c.req.param(),
          )
          return result.status === 'ok'
            ? result.response
            : failure(paidEntry, result, c.get('requestId'), true)
        },
      ] as const
      if (endpoint.pathParams === undefined) {
        app.post(endpoint.path, ...handlers)
      } else {
        // Path parameters are checked before the paywall: a bad one is a 400, nothing charged.
        app.post(
          routePathOf(endpoint.path),
          async (c, next) => {
            const checked = validatePathParams(endpoint, c.req.param())
            if (checked.status === 'valid') return next()
            // The paywall's own 400 (RFC 9457, code invalid_request_body), for the path.
            return new Response(
              JSON.stringify({
                type: 'about:blank',
                title: 'Bad Request',
                status: 400,
                detail: checked.message,
                code: 'invalid_request_body',
                field: checked.field,
              }),
              {
                status: 400,
                headers: {
                  'content-type': 'application/problem+json',
                  'cache-control': 'no-store',
                },
              },
            )
          },
          ...handlers,
        )
      }
    } else {
      const freeEntry = entry as CatalogEntry<FreeEndpoint>
      app.get(endpoint.path, async (c) => {
        const result = await upstreamCall(freeEntry, {}, c.req.raw.signal, undefined)
        return result.status === 'ok'
          ? result.response
          : failure(freeEntry, result, c.get('requestId'), false)
      })
    }
  }

  if (inference !== undefined) {
    app.get('/v1/models', () => inference.api.listModels())
    app.get('/v1/aci/*', (c) => inference.api.aci(c.req.raw))
    app.post('/v1/aci/anchor/:id', (c) => inference.api.aci(c.req.raw))
    app.get(receiptKeysPath, () => inference.api.receiptKeys())
    app.post('/v1/chat/completions', (c) =>
      inference.api.chat(c.req.raw, { requestId: c.get('requestId') }),
    )
    for (const amount of inference.topUps) {
      const route = paid.pay(amount, {
        description: `Credit of ${amount} USDC for an API key of the private inference API`,
        body: topUpBodySchema,
        maxBodyBytes: 4096,
        // An unknown or revoked key is refunded: nothing was credited.
        failedStatuses: (status) => status >= 500 || status === 404,
      })
      app.post(topUpPath(amount), route, async (c) => {
        const info = c.get('tollgate')
        const { key_id: keyId } = info.body as { key_id: string }
        const result = await inference.keys.topUp(
          keyId,
          info.payment.amount,
          `payment:${info.payment.digest}`,
        )
        if (result.status === 'unknown_key') {
          return c.json(
            {
              error: {
                message:
                  'No such API key (or it is revoked). Your payment is refunded automatically.',
                type: 'invalid_request_error',
                code: 'key_not_found',
                param: 'key_id',
              },
            },
            404,
          )
        }
        const key = await inference.keys.get(keyId)
        return c.json({
          key_id: keyId,
          credited: result.status === 'credited' ? formatAmount(info.payment.amount) : '0.000000',
          credit: formatAmount(key?.credit ?? 0n),
        })
      })
    }
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
  app.get('/blobs/:name', (c) => options.blobs.serve(c.req.param('name')))
  app.get('/healthz', (c) =>
    c.json({ status: 'ok', ...(options.health ?? {}), ledger: options.ledger }),
  )
  app.get('/readyz', async (c) => {
    const checks: Record<string, 'ok' | 'failed'> = {}
    const reasons: Record<string, string> = {}
    await Promise.all(
      Object.entries(options.readiness ?? {}).map(async ([name, probe]) => {
        try {
          await probe()
          checks[name] = 'ok'
        } catch (error) {
          checks[name] = 'failed'
          reasons[name] = reasonOf(error, options.redact)
        }
      }),
    )
    const ready = Object.values(checks).every((v) => v === 'ok')
    return c.json(ready ? { ready, checks } : { ready, checks, reasons }, ready ? 200 : 503)
  })
  app.get(
    '/metrics',
    async () =>
      new Response(await metrics.registry.metrics(), {
        headers: { 'content-type': metrics.registry.contentType },
      }),
  )
  if (options.jobs) app.route('/v1/jobs', jobRoutes(options.jobs))
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
