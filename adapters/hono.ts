/**
 * `tollgate/hono`: paid routes in a Hono 4 app — on Node (`@hono/node-server`) and on Web-standard
 * runtimes alike, since the engine speaks `Request`/`Response`.
 *
 * ```ts
 * import { Hono } from 'hono'
 * import { paywall } from 'tollgate/hono'
 *
 * const paid = paywall({ routes: { 'POST /v1/answer': '0.02' }, payTo, ledger, store, secrets })
 * app.use(paid)                                       // the route table
 * app.post('/v1/quote', paid.pay('0.01'), handler)    // or per route
 * ```
 *
 * What a paid handler sees: `c.get('tollgate')` (`{ payment, body }`); the request body is
 * untouched (the engine reads a clone), so `await c.req.json()` works as usual. Unpriced requests
 * are not touched at all.
 *
 * The outcome of a paid call: a thrown error (Hono's `c.error`) is refunded; otherwise the status
 * decides: ≥ 500 or a status the route lists in `failedStatuses` is refunded, anything else (4xx
 * included) is served. A streamed body passes through chunk by chunk; the outcome is recorded when
 * it ends, and an error mid-stream is refunded.
 *
 * @module
 */
import type { Context, MiddlewareHandler, Next } from 'hono'
import type { PriceInput } from '../src/money.js'
import { finishResponse, type PaidRoute } from '../src/paywall.js'
import {
  createSellerPaywall,
  type PaidRequestInfo,
  type PayRouteOptions,
  type SellerOptions,
  type SellerPaywall,
} from '../src/seller.js'

export type { PaidRequestInfo, PayRouteOptions, SellerOptions } from '../src/seller.js'

/** The options of {@link paywall}: the shared seller options. */
export type HonoPaywallOptions = SellerOptions

/** Hono context variables set on paid requests: `c.get('tollgate')`. */
export type TollgateEnv = { Variables: { tollgate: PaidRequestInfo } }

/** The configured paywall: middleware for the route table, with the per-route form attached. */
export type HonoPaywall = MiddlewareHandler<TollgateEnv> & {
  /** Middleware pricing one route: `app.post('/x', paid.pay('0.02'), handler)`. */
  pay(price: PriceInput, routeOptions?: PayRouteOptions): MiddlewareHandler<TollgateEnv>
  /** The engine, route table and refund worker behind it. */
  readonly seller: SellerPaywall
  /** Stops the refund worker's timer. */
  close(): Promise<void>
}

/**
 * Creates the Hono paywall from ONE options object.
 *
 * @param options - see {@link SellerOptions}; `store`, `payTo`, `ledger` and `secrets` are required.
 * @example
 * ```ts
 * const paid = paywall({ routes: { 'GET /v1/report': '0.05' }, payTo, ledger: url, store, secrets })
 * const app = new Hono<TollgateEnv>()
 * app.use(paid)
 * app.get('/v1/report', (c) => c.json({ paidBy: c.get('tollgate').payment.payer }))
 * ```
 */
export function paywall(options: HonoPaywallOptions): HonoPaywall {
  const seller = createSellerPaywall(options)
  const handled = new WeakSet<Request>()

  async function run(
    route: PaidRoute,
    c: Context<TollgateEnv>,
    next: Next,
  ): Promise<Response | undefined> {
    const raw = c.req.raw
    handled.add(raw)
    const decision = await seller.engine.handle(raw, route)
    if (decision.status === 'respond') return decision.response
    c.set('tollgate', { payment: decision.payment, body: decision.body })
    await next()
    if (c.error !== undefined) {
      void decision.complete({ error: c.error }).catch(() => {})
      return undefined
    }
    c.res = finishResponse(c.res, decision)
    return undefined
  }

  const middleware: MiddlewareHandler<TollgateEnv> = async (c, next) => {
    const raw = c.req.raw
    const route = handled.has(raw) ? undefined : seller.match(raw.method, raw.url)
    if (route === undefined) return next()
    return run(route, c, next)
  }

  return Object.assign(middleware, {
    pay(price: PriceInput, routeOptions?: PayRouteOptions): MiddlewareHandler<TollgateEnv> {
      const route = seller.route(price, routeOptions)
      return async (c, next) => (handled.has(c.req.raw) ? next() : run(route, c, next))
    },
    seller,
    close: () => seller.close(),
  })
}
