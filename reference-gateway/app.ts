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
 *   GET  /openapi.json /.well-known/x402.json /api/services /llms.txt /   (computed once)
 *   GET  /blobs/:name  /healthz  /readyz  /metrics
 * ```
 *
 * This module builds the app only; `server.ts` wires configuration, stores, ledger and listening.
 *
 * @module
 */
import { Hono } from 'hono'
import { type RequestIdVariables, requestId } from 'hono/request-id'
import { routePath } from 'hono/route'
import { type HonoPaywall, paywall, type TollgateEnv } from '../adapters/hono.js'
import type { SellerOptions } from '../src/seller.js'
import type { LocalBlobStore } from './blobs/local.js'
import {
  type Catalog,
  type CatalogEntry,
  entries,
  type FreeEndpoint,
  type PaidEndpoint,
  validateCatalog,
} from './catalog/catalog.js'
import { validateBody } from './catalog/shapes.js'
import {
  catalogPage,
  type DiscoveryOptions,
  llmsTxt,
  openApiDocument,
  servicesDocument,
  x402Manifest,
} from './discovery/index.js'
import type { GatewayMetrics } from './metrics.js'
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
  /** Readiness checks (`/readyz`): name → probe; a probe that throws makes the gateway not ready. */
  readiness?: Readonly<Record<string, () => Promise<unknown>>> | undefined
  /** Per-attempt upstream timeout override, ms. Default each family's own. */
  upstreamTimeoutMs?: number | undefined
  /** Allow media downloads from loopback/private hosts (the stub upstreams). Default false. */
  allowInternalHosts?: boolean | undefined
  /** Fetch used for upstream calls. Default `globalThis.fetch`. */
  fetch?: typeof globalThis.fetch | undefined
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
    throw new Error(`The catalog is invalid:\n  ${checked.problems.join('\n  ')}`)
  }
  let inFlight = 0
  const onEvent = options.seller.onEvent
  const paid = paywall({
    ...options.seller,
    logger: options.seller.logger ?? logger,
    onEvent(event) {
      if (event.type === 'settled') inFlight++
      if (event.type === 'served' || event.type === 'refund_due')
        inFlight = Math.max(0, inFlight - 1)
      metrics.payment(event)
      onEvent?.(event)
    },
  })
  const discovery: DiscoveryOptions = {
    publicBaseUrl: options.seller.publicBaseUrl,
    payTo: options.seller.payTo,
    network: options.seller.network,
    asset: options.seller.asset,
  }
  const documents = {
    openapi: JSON.stringify(openApiDocument(catalog, discovery)),
    manifest: JSON.stringify(x402Manifest(catalog, discovery)),
    services: JSON.stringify(servicesDocument(catalog, discovery)),
    llms: llmsTxt(catalog, discovery),
    page: catalogPage(catalog, discovery),
  }

  const app = new Hono<GatewayEnv>()
  app.use(requestId())
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
  ): Promise<UpstreamResult> {
    const { service, endpoint } = entry
    return callUpstream({
      family: families[service.family],
      operation: endpoint.upstream.operation,
      body,
      defaults: endpoint.upstream.defaults,
      params: endpoint.upstream.params,
      baseUrl: service.upstream.baseUrl,
      apiKey: options.providerKeys[service.upstream.credential],
      blobs: options.blobs,
      fetch: options.fetch,
      timeoutMs: options.upstreamTimeoutMs,
      signal,
      requestId,
      allowInternalHosts: options.allowInternalHosts ?? false,
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
      app.post(endpoint.path, route, async (c) => {
        metrics.settlement((performance.now() - c.get('startedAt')) / 1000)
        const info = c.get('tollgate')
        const result = await upstreamCall(
          paidEntry,
          info.body as Record<string, unknown>,
          c.req.raw.signal,
          info.payment.digest,
        )
        return result.status === 'ok'
          ? result.response
          : failure(paidEntry, result, c.get('requestId'), true)
      })
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
  app.get(
    '/',
    () => new Response(documents.page, { headers: { 'content-type': 'text/html; charset=utf-8' } }),
  )
  app.get('/blobs/:name', (c) => options.blobs.serve(c.req.param('name')))
  app.get('/healthz', (c) =>
    c.json({ status: 'ok', ...(options.health ?? {}), ledger: options.ledger }),
  )
  app.get('/readyz', async (c) => {
    const checks: Record<string, 'ok' | 'failed'> = {}
    await Promise.all(
      Object.entries(options.readiness ?? {}).map(async ([name, probe]) => {
        try {
          await probe()
          checks[name] = 'ok'
        } catch {
          checks[name] = 'failed'
        }
      }),
    )
    const ready = Object.values(checks).every((v) => v === 'ok')
    return c.json({ ready, checks }, ready ? 200 : 503)
  })
  app.get(
    '/metrics',
    async () =>
      new Response(await metrics.registry.metrics(), {
        headers: { 'content-type': metrics.registry.contentType },
      }),
  )
  app.notFound((c) =>
    c.json({ error: { code: 'not_found', message: 'No such route. See /openapi.json.' } }, 404),
  )
  app.onError((error, c) => {
    logger.error({
      requestId: c.get('requestId'),
      event: 'unhandled',
      error: error instanceof Error ? error.name : 'error',
    })
    return c.json({ error: { code: 'internal', message: 'Internal error.' } }, 500)
  })

  return { app, paywall: paid, paidInFlight: () => inFlight }
}
