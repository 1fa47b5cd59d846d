/**
 * `tollgate/koa`: paid routes in a Koa 3 app, with or without `@koa/router`.
 *
 * ```ts
 * import Koa from 'koa'
 * import { paywall } from 'tollgate/koa'
 *
 * const paid = paywall({ routes: { 'POST /v1/answer': '0.02' }, payTo, ledger, store, secrets })
 * app.use(paid)                                        // the route table
 * router.post('/v1/quote', paid.pay('0.01'), handler)  // or per route, with @koa/router
 * ```
 *
 * What a paid handler sees: `ctx.state.tollgate` (`{ payment, body }`). On a route with a body
 * schema, the paywall read the body once (to validate it before payment): `ctx.request.body` is the
 * validated value and `ctx.request.rawBody` its text (unless a body parser before the paywall
 * already set them), and `@koa/bodyparser` later skips the request. On a route without a schema the
 * body is not read: use your body parser as usual. Unpriced requests are not touched at all.
 *
 * The outcome of a paid call: a throw from downstream middleware is refunded (and re-thrown for
 * Koa's error handling); otherwise the status sent decides: ≥ 500 or a status the route lists in
 * `failedStatuses` is refunded, anything else (4xx included) is served. A streamed body (`ctx.body
 * = stream`) passes through as it comes; the success header is added before its first byte. A buyer
 * who hangs up before the paid work starts is refunded; once it has started, the payment is served.
 * The work starts when the middleware after the paywall is called, or, on a route with
 * `commit: 'manual'`, when it calls `ctx.state.tollgate.commit()`.
 *
 * @module
 */
import type { Context, Middleware, Next } from 'koa'
import type {
  PaidRequestInfo,
  PaidRoute,
  PayRouteOptions,
  PriceInput,
  SellerOptions,
} from 'tollgate'
import {
  createSellerPaywall,
  type Decision,
  type PlainResponse,
  paidInfo,
  type SellerPaywall,
} from 'tollgate/adapter'
import {
  attachPaidResponse,
  encodePlain,
  nodeFetch,
  nodeRequestView,
  readNodeBody,
} from 'tollgate/node'

export type { PaidRequestInfo, PayRouteOptions, SellerOptions } from 'tollgate'

declare module 'koa' {
  /**
   * `ctx.state.tollgate`: what the paywall settled, set on priced requests before the middleware
   * after it runs (`undefined` on unpriced ones). Middleware after `paid.pay(…)` (in a router, or
   * `app.use(paid.pay(…))`) sees it without `undefined`.
   */
  interface DefaultState {
    tollgate?: PaidRequestInfo
  }
}

/** `ctx.state` after {@link KoaPaywall.pay}: the payment is there. */
export type PaidState = { tollgate: PaidRequestInfo }

/** The options of {@link paywall}: the shared seller options. */
export type KoaPaywallOptions = SellerOptions

/** The configured paywall: middleware for the route table, with the per-route form attached. */
export type KoaPaywall = Middleware & {
  /** Middleware pricing one route: `router.post('/x', paid.pay('0.02'), handler)`. */
  pay(price: PriceInput, routeOptions?: PayRouteOptions): Middleware<PaidState>
  /** The engine, route table and refund worker behind it. */
  readonly seller: SellerPaywall
  /** Stops the refund worker's timer. */
  close(): Promise<void>
}

type BodyRequest = { body?: unknown; rawBody?: string }

/** The mount tells a paid decision when its handler is done (`PaidDecision.handled`). */
const untilHandled = { untilHandled: true } as const

/**
 * Creates the Koa paywall from ONE options object.
 *
 * @param options - see {@link SellerOptions}; `store`, `payTo`, `ledger` and `secrets` are required.
 * @example
 * ```ts
 * const paid = paywall({ routes: { 'GET /v1/report': '0.05' }, payTo, ledger: url, store, secrets })
 * app.use(paid)
 * app.use((ctx) => { ctx.body = { paidBy: ctx.state.tollgate.payment.payer } })
 * ```
 */
export function paywall(options: KoaPaywallOptions): KoaPaywall {
  const seller = createSellerPaywall(options, { ledgerFetch: nodeFetch })
  const handled = new WeakSet<object>()

  /** Answers the engine's decision, or lets the paid request through to the handler. */
  async function run(
    route: PaidRoute,
    ctx: Context,
    next: Next,
    decided: Decision | Promise<Decision> | undefined,
  ): Promise<void> {
    handled.add(ctx.req)
    const request = ctx.request as typeof ctx.request & BodyRequest
    const parsed = request.body
    // Only a route with a body schema needs the body before payment; others leave it unread.
    const bytes =
      route.body === undefined || decided !== undefined
        ? undefined
        : await readNodeBody(ctx.req, seller.maxBodyBytes(route), parsed)
    const decision = await (decided ??
      seller.engine.handle(nodeRequestView(ctx.req, ctx.originalUrl, bytes), route))
    if (decision.status === 'respond') return answer(ctx, decision.plain)
    // A buyer who hung up while the payment settled is refunded; the handler does not run.
    if (!attachPaidResponse(ctx.res, decision, untilHandled)) return
    const info: PaidRequestInfo = paidInfo(decision)
    ctx.state.tollgate = info
    if (route.body !== undefined && parsed === undefined) {
      request.body = decision.body
      request.rawBody = bytes === undefined ? '' : Buffer.from(bytes).toString('utf8')
    }
    try {
      await next()
    } catch (error) {
      decision.handled()
      void decision.complete({ error }).catch(() => {})
      throw error
    }
    decision.handled()
  }

  /** Sets an engine answer as the Koa response (Koa writes it, after the middleware above). */
  function answer(ctx: Context, plain: PlainResponse): void {
    ctx.status = plain.status
    ctx.set(encodePlain(plain).headers)
    ctx.body = plain.body
  }

  /** An unpaid request is answered at once (the engine decides it without a promise). */
  function dispatch(route: PaidRoute, ctx: Context, next: Next): Promise<void> | undefined {
    if (route.body !== undefined) return run(route, ctx, next, undefined)
    const decision = seller.engine.handle(
      nodeRequestView(ctx.req, ctx.originalUrl, undefined),
      route,
    )
    if (decision instanceof Promise || decision.status !== 'respond') {
      return run(route, ctx, next, decision)
    }
    answer(ctx, decision.plain)
    return undefined
  }

  const middleware: Middleware = (ctx, next) => {
    const route = handled.has(ctx.req) ? undefined : seller.match(ctx.method, ctx.originalUrl)
    return route === undefined ? next() : dispatch(route, ctx, next)
  }

  return Object.assign(middleware, {
    pay(price: PriceInput, routeOptions?: PayRouteOptions): Middleware<PaidState> {
      const route = seller.route(price, routeOptions)
      return (ctx, next) => (handled.has(ctx.req) ? next() : dispatch(route, ctx, next))
    },
    seller,
    close: () => seller.close(),
  })
}
