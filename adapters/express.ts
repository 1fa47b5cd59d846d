/**
 * `tollgate/express`: paid routes in an Express 5 app.
 *
 * ```ts
 * import express from 'express'
 * import { paywall } from 'tollgate/express'
 *
 * const paid = paywall({ routes: { 'POST /v1/answer': '0.02' }, payTo, ledger, store, secrets })
 * app.use(paid)                                      // the route table
 * app.post('/v1/quote', paid.pay('0.01'), handler)   // or per route
 * ```
 *
 * What a paid handler sees: `res.locals.tollgate` (`{ payment, body }`). On a route with a body
 * schema, the paywall read the body once (to validate it before payment): `req.body` is the
 * validated value (unless a body parser before the paywall already set it) and later body parsers
 * skip the request. On a route without a schema the body is not read: use your body parser as
 * usual. Unpriced requests are not touched at all.
 *
 * The outcome of a paid call is the status Express sends: ≥ 500 (what Express answers for a thrown
 * error or `next(err)` by default) or a status the route lists in `failedStatuses` is refunded; any
 * other status, 4xx included, is served. A response torn down with an error mid-stream is refunded.
 * A buyer who hangs up before the paid work starts is refunded (the handler's later answer changes
 * nothing); once it has started, the payment is served. The work starts when the handler is
 * called, or, on a route with `commit: 'manual'`, when it calls `res.locals.tollgate.commit()`.
 *
 * @module
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express'
import type {
  PaidRequestInfo,
  PaidRoute,
  PayRouteOptions,
  PriceInput,
  SellerOptions,
} from 'tollgate'
import { createSellerPaywall, type Decision, paidInfo, type SellerPaywall } from 'tollgate/adapter'
import {
  attachPaidResponse,
  nodeFetch,
  nodeRequestView,
  readNodeBody,
  sendPlain,
} from 'tollgate/node'

export type { PaidRequestInfo, PayRouteOptions, SellerOptions } from 'tollgate'

declare global {
  namespace Express {
    /**
     * `res.locals.tollgate`: what the paywall settled, set on priced requests before your handler
     * runs (`undefined` on unpriced ones). Handlers after `paid.pay(…)` see it without `undefined`.
     */
    interface Locals {
      tollgate?: PaidRequestInfo
    }
  }
}

/** `res.locals` of a handler that runs after {@link ExpressPaywall.pay}: the payment is there. */
export type PaidLocals = { tollgate: PaidRequestInfo }

/**
 * The middleware `paid.pay(price)` returns. Express infers the handlers after it in the same
 * `app.post(path, …)` call from it, so they read `res.locals.tollgate` typed and never `undefined`.
 */
export type PaidHandler = RequestHandler<
  Request['params'],
  unknown,
  Request['body'],
  Request['query'],
  PaidLocals
>

/** The options of {@link paywall}: the shared seller options. */
export type ExpressPaywallOptions = SellerOptions

/** The configured paywall: middleware for the route table, with the per-route form attached. */
export type ExpressPaywall = RequestHandler & {
  /** Middleware pricing one route: `app.post('/x', paid.pay('0.02'), handler)`. */
  pay(price: PriceInput, routeOptions?: PayRouteOptions): PaidHandler
  /** The engine, route table and refund worker behind it. */
  readonly seller: SellerPaywall
  /** Stops the refund worker's timer. */
  close(): Promise<void>
}

/**
 * Creates the Express paywall from ONE options object.
 *
 * @param options - see {@link SellerOptions}; `store`, `payTo`, `ledger` and `secrets` are required.
 * @example
 * ```ts
 * const paid = paywall({ routes: { 'GET /v1/report': '0.05' }, payTo, ledger: url, store, secrets })
 * app.use(paid)
 * app.get('/v1/report', (req, res) => res.json({ paidBy: res.locals.tollgate.payment.payer }))
 * ```
 */
export function paywall(options: ExpressPaywallOptions): ExpressPaywall {
  const seller = createSellerPaywall(options, { ledgerFetch: nodeFetch })
  const handled = new WeakSet<Request>()

  /** Answers the engine's decision, or lets the paid request through to the handler. */
  async function run(
    route: PaidRoute,
    req: Request,
    res: Response,
    next: NextFunction,
    decided: Decision | Promise<Decision> | undefined,
  ) {
    handled.add(req)
    const parsed = (req as { body?: unknown }).body
    // Only a route with a body schema needs the body before payment; others leave it unread.
    const bytes =
      route.body === undefined || decided !== undefined
        ? undefined
        : await readNodeBody(req, seller.maxBodyBytes(route), parsed)
    const decision = await (decided ??
      seller.engine.handle(nodeRequestView(req, req.originalUrl, bytes), route))
    if (decision.status === 'respond') return sendPlain(res, decision.plain)
    // A buyer who hung up while the payment settled is refunded; the handler does not run.
    if (!attachPaidResponse(res, decision)) return
    const info: PaidRequestInfo = paidInfo(decision)
    res.locals.tollgate = info
    if (route.body !== undefined && parsed === undefined) {
      ;(req as { body?: unknown }).body = decision.body
      ;(req as { _body?: boolean })._body = true
    }
    next()
  }

  /** An unpaid request is answered at once (the engine decides it without a promise). */
  function dispatch(route: PaidRoute, req: Request, res: Response, next: NextFunction) {
    if (route.body !== undefined) return void run(route, req, res, next, undefined).catch(next)
    const decision = seller.engine.handle(nodeRequestView(req, req.originalUrl, undefined), route)
    if (!(decision instanceof Promise) && decision.status === 'respond') {
      return sendPlain(res, decision.plain)
    }
    run(route, req, res, next, decision).catch(next)
  }

  const middleware: RequestHandler = (req, res, next) => {
    const route = handled.has(req) ? undefined : seller.match(req.method, req.originalUrl)
    if (route === undefined) return next()
    dispatch(route, req, res, next)
  }

  return Object.assign(middleware, {
    pay(price: PriceInput, routeOptions?: PayRouteOptions): PaidHandler {
      const route = seller.route(price, routeOptions)
      return (req, res, next) => {
        if (handled.has(req)) return next()
        dispatch(route, req, res, next)
      }
    },
    seller,
    close: () => seller.close(),
  })
}
