/**
 * `tollgate/hono`: paid routes in a Hono 4 app — on Node (`@hono/node-server`) and on Web-standard
 * runtimes alike, since the engine speaks `Request`/`Response` and loads no Node module (run under
 * workerd by `webRuntime.int.test.ts`; what a Worker must provide: `docs/sellers.md` §10).
 *
 * ```ts
 * import { Hono } from 'hono'
 * import { paywall } from 'tollgate/hono'
 *
 * const paid = paywall({ routes: { 'POST /v1/answer': '0.02' }, payTo, ledger, store, secrets })
 * app.use(paid)                                       // the route table, as middleware
 * app.post('/v1/quote', paid.pay('0.01'), handler)    // or per route
 * serve({ fetch: paid.front(app) })                   // or the route table in front of the app
 * ```
 *
 * What a paid handler sees: `c.get('tollgate')` (`{ payment, body }`), or `tollgateOf(c)` (which
 * also works in front of the app); the request body stays readable — `await c.req.json()` and
 * `c.req.raw` work as usual (on Node the paywall reads the bytes once and hands them to
 * `@hono/node-server` as `incoming.rawBody`; elsewhere it reads a clone). Unpriced requests are not
 * touched at all. On Node a paid response is finished through the Node response (success headers
 * when its status line is written, the outcome when it ends), so it passes through unwrapped.
 *
 * Middleware or front? Both give the same answers. As middleware, every request of the app goes
 * through Hono's middleware dispatch, which costs a cheap route a measurable share of its time
 * (`npm run bench:adapters`); in front, an unpriced request costs one route-table look-up before
 * the app sees it, and a 402 never reaches the app.
 *
 * The outcome of a paid call: a thrown error (Hono's `c.error`) is refunded; otherwise the status
 * decides: ≥ 500 or a status the route lists in `failedStatuses` is refunded, anything else (4xx
 * included) is served. A streamed body passes through chunk by chunk; the outcome is recorded when
 * it ends, and an error mid-stream is refunded. A buyer who hangs up before the answer starts (on
 * Node: before the status line is written; elsewhere: before the handler returned its response) is
 * refunded if the paid work had not started yet, whatever the handler answers later, and served if
 * it had. The work starts when the handler is called, or, on a route with `commit: 'manual'`, when
 * it calls `tollgateOf(c).commit()`.
 *
 * Every mount here holds a paid answer until its payment is durable (`HandleOptions.holdsAnswer`):
 * a session call priced per request runs its handler while its voucher is written, and should that
 * write refuse it after all, the refusal is sent instead of the handler's answer.
 * `tollgateOf(c).durable()` tells a handler whose work must never happen unpaid when to start it.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Context, HonoRequest, MiddlewareHandler, Next } from 'hono'
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
  type EngineRequest,
  finishResponse,
  hungUpResponse,
  type PaidDecision,
  type PlainResponse,
  paidInfo,
  type SellerPaywall,
  watchHangUp,
} from 'tollgate/adapter'
import {
  attachPaidResponse,
  encodePlain,
  nodeRequestViewAt,
  readNodeBody,
} from 'tollgate/node/http'

export type { PaidRequestInfo, PayRouteOptions, SellerOptions } from 'tollgate'

/** The options of {@link paywall}: the shared seller options. */
export type HonoPaywallOptions = SellerOptions

/** Hono context variables set on paid requests: `c.get('tollgate')`. */
export type TollgateEnv = { Variables: { tollgate: PaidRequestInfo } }

/** A Web-standard `fetch` handler, as `app.fetch` of a Hono app (env and execution context passed on). */
export type FetchHandler<Env = unknown, ExecutionContext = unknown> = (
  request: Request,
  env?: Env,
  executionCtx?: ExecutionContext,
) => Response | Promise<Response>

/** Every mount here holds a paid answer until its payment is durable (`PaidDecision.ready`). */
const holdsAnswer = { holdsAnswer: true } as const

/** Every mount here tells a paid decision when its handler is done (`PaidDecision.handled`). */
const untilHandled = { untilHandled: true } as const

/** Payment information of the requests paid in front of an app, by request. */
const frontPaid = new WeakMap<Request, PaidRequestInfo>()

/**
 * The payment of a paid request in a handler, whichever way the paywall is mounted (middleware,
 * `pay()`, or `front()`); `undefined` on a request that was not paid.
 *
 * @example
 * ```ts
 * app.post('/v1/answer', (c) => c.json({ paidBy: tollgateOf(c)?.payment.payer }))
 * ```
 */
export function tollgateOf(c: Context): PaidRequestInfo | undefined {
  return (c.get('tollgate') as PaidRequestInfo | undefined) ?? frontPaid.get(c.req.raw)
}

/** The configured paywall: middleware for the route table, with the per-route form attached. */
export type HonoPaywall = MiddlewareHandler<TollgateEnv> & {
  /** Middleware pricing one route: `app.post('/x', paid.pay('0.02'), handler)`. */
  pay(price: PriceInput, routeOptions?: PayRouteOptions): MiddlewareHandler<TollgateEnv>
  /**
   * The route table in front of a whole app: `serve({ fetch: paid.front(app) })`, or
   * `export default { fetch: paid.front(app) }` on a Web-standard runtime. Unpriced requests go to
   * the app untouched, unpaid ones are answered 402 without reaching it, paid ones reach it with
   * `tollgateOf(c)` set, and its response is finished like the middleware's (success header,
   * outcome recorded, 5xx refunded).
   */
  front<Env, ExecutionContext>(
    app: { fetch: FetchHandler<Env, ExecutionContext> } | FetchHandler<Env, ExecutionContext>,
  ): FetchHandler<Env, ExecutionContext>
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

  /**
   * What the engine reads. A route without a body schema is decided from headers alone: on Node
   * (@hono/node-server) from the Node request itself, since reading `raw.headers` there would build
   * a Headers object first.
   */
  function headerView(raw: Request, env: unknown): EngineRequest {
    const incoming = nodeIncoming(env)
    return incoming === undefined ? raw : nodeRequestViewAt(incoming, raw.url, undefined)
  }

  /**
   * A route with a body schema needs the body before payment. On Node its bytes are read from the
   * Node request once and handed to @hono/node-server as `incoming.rawBody`, where `c.req.json()`,
   * `c.req.text()` and `c.req.raw` find them later; no Web `Request` or stream is built for it. A
   * body that a middleware before the paywall already read through `c.req` comes from Hono's body
   * cache. Anything else (other runtimes, a body being read elsewhere) goes through the Web
   * `Request`, of which the engine reads a clone.
   */
  async function bodyView(
    route: PaidRoute,
    raw: Request,
    env: unknown,
    honoRequest?: HonoRequest,
  ): Promise<EngineRequest> {
    const incoming = nodeIncoming(env)
    if (incoming !== undefined) {
      const url = raw.url
      const given = (incoming as { rawBody?: unknown }).rawBody
      if (given instanceof Buffer) return nodeRequestViewAt(incoming, url, given)
      if (!incoming.readableDidRead && incoming.readableFlowing === null) {
        const limit = seller.maxBodyBytes(route)
        const bytes = await readNodeBody(incoming, limit, undefined)
        if (bytes !== undefined && bytes.byteLength <= limit) {
          ;(incoming as { rawBody?: Buffer }).rawBody = bytes as Buffer
        }
        return nodeRequestViewAt(incoming, url, bytes)
      }
    }
    if (honoRequest === undefined || !raw.bodyUsed) return raw
    const bytes = new Uint8Array(await honoRequest.arrayBuffer())
    return {
      url: raw.url,
      method: raw.method,
      headers: raw.headers,
      bodyBytes: bytes.byteLength === 0 ? undefined : bytes,
    }
  }

  /** An engine answer as a Response (on Node, with its headers encoded once per answer). */
  function respond(plain: PlainResponse, onNode: boolean): Response {
    const headers = onNode ? encodePlain(plain).headers : plain.headers
    return new Response(plain.body, { status: plain.status, headers })
  }

  /**
   * Watches a paid call from before its handler runs until its answer is out: on Node through the
   * `ServerResponse` (success headers when the status line is written, the outcome when it finishes
   * or is torn down — the response passes through untouched), elsewhere through the request's abort
   * signal while the handler runs and by wrapping its response ({@link finishResponse}). A buyer who
   * hangs up before the answer starts is refunded unless the paid work had started. Returns the
   * function that finishes the handler's response, or `undefined` when the buyer is already gone
   * (refunded; the handler must not run).
   */
  function watch(
    decision: PaidDecision,
    request: Request,
    env: unknown,
  ): ((response: Response) => Response) | undefined {
    const outgoing = nodeOutgoing(env)
    if (outgoing !== undefined) {
      return attachPaidResponse(outgoing, decision, untilHandled)
        ? (response) => response
        : undefined
    }
    const stop = watchHangUp(request.signal, decision)
    if (stop === undefined) return undefined
    return (response) => {
      stop()
      return finishResponse(response, decision)
    }
  }

  async function run(
    c: Context<TollgateEnv>,
    next: Next,
    decided: Decision | Promise<Decision>,
  ): Promise<Response | undefined> {
    handled.add(c.req.raw)
    const decision = await decided
    if (decision.status === 'respond') return decision.response
    const finish = watch(decision, c.req.raw, c.env)
    if (finish === undefined) return hungUpResponse()
    c.set('tollgate', paidInfo(decision))
    try {
      await next()
    } finally {
      decision.handled()
    }
    // The answer leaves once the payment is durable; refused after all, the refusal leaves instead.
    const refusal = await decision.ready()
    if (refusal !== undefined) {
      if (c.error === undefined) void c.res.body?.cancel().catch(() => {})
      c.error = undefined
      // Cleared first: Hono copies the headers of the response it replaces onto the new one.
      c.res = undefined as unknown as Response
      c.res = refusal
      return undefined
    }
    if (c.error !== undefined) {
      void decision.complete({ error: c.error }).catch(() => {})
      return undefined
    }
    // On Node the response passes through as it is (assigning c.res would copy it).
    const response = c.res
    const finished = finish(response)
    if (finished !== response) c.res = finished
    return undefined
  }

  /** The decision on a route with a body schema: once its body is read. */
  async function afterBody(route: PaidRoute, view: Promise<EngineRequest>): Promise<Decision> {
    return seller.engine.handle(await view, route, holdsAnswer)
  }

  /** An unpaid request is answered at once (the engine decides it without a promise). */
  async function dispatch(route: PaidRoute, c: Context<TollgateEnv>, next: Next) {
    if (route.body !== undefined) {
      return run(c, next, afterBody(route, bodyView(route, c.req.raw, c.env, c.req)))
    }
    const request = headerView(c.req.raw, c.env)
    const decision = seller.engine.handle(request, route, holdsAnswer)
    return decision instanceof Promise || decision.status !== 'respond'
      ? run(c, next, decision)
      : respond(decision.plain, request !== c.req.raw)
  }

  async function paidInFront<Env, ExecutionContext>(
    request: Request,
    env: Env | undefined,
    executionCtx: ExecutionContext | undefined,
    app: FetchHandler<Env, ExecutionContext>,
    decided: Decision | Promise<Decision>,
  ): Promise<Response> {
    handled.add(request)
    const decision = await decided
    if (decision.status === 'respond') return decision.response
    const finish = watch(decision, request, env)
    if (finish === undefined) return hungUpResponse()
    frontPaid.set(request, paidInfo(decision))
    let response: Response
    try {
      response = await app(request, env, executionCtx)
    } catch (error) {
      decision.handled()
      const refusal = await decision.ready()
      if (refusal !== undefined) return refusal
      void decision.complete({ error }).catch(() => {})
      throw error
    }
    decision.handled()
    const refusal = await decision.ready()
    if (refusal === undefined) return finish(response)
    void response.body?.cancel().catch(() => {})
    return refusal
  }

  function front<Env, ExecutionContext>(
    target: { fetch: FetchHandler<Env, ExecutionContext> } | FetchHandler<Env, ExecutionContext>,
  ): FetchHandler<Env, ExecutionContext> {
    const app: FetchHandler<Env, ExecutionContext> =
      typeof target === 'function' ? target : target.fetch.bind(target)
    const priced = (
      route: PaidRoute,
      request: Request,
      env: Env | undefined,
      executionCtx: ExecutionContext | undefined,
    ) => {
      if (route.body !== undefined) {
        const decided = afterBody(route, bodyView(route, request, env))
        return paidInFront(request, env, executionCtx, app, decided)
      }
      const view = headerView(request, env)
      const decision = seller.engine.handle(view, route, holdsAnswer)
      // Answered as a promise on purpose: @hono/node-server finishes a response returned at once
      // by draining the unread request body itself (a timer and three listeners per request),
      // one returned as a promise by Node's own discarding of it — about 7 k instructions less
      // per unpaid POST (`npm run bench:adapters:instructions`).
      if (!(decision instanceof Promise) && decision.status === 'respond') {
        return Promise.resolve(respond(decision.plain, view !== request))
      }
      return paidInFront(request, env, executionCtx, app, decision)
    }
    // The unpriced case stays a small function of its own: one look-up, then the app.
    return (request, env, executionCtx) => {
      const route = seller.match(request.method, request.url)
      return route === undefined
        ? app(request, env, executionCtx)
        : priced(route, request, env, executionCtx)
    }
  }

  // Not async: an unpriced request costs one look-up and no promise of its own.
  const middleware: MiddlewareHandler<TollgateEnv> = (c, next) => {
    const raw = c.req.raw
    const route = handled.has(raw) ? undefined : seller.match(raw.method, raw.url)
    return route === undefined ? next() : dispatch(route, c, next)
  }

  return Object.assign(middleware, {
    pay(price: PriceInput, routeOptions?: PayRouteOptions): MiddlewareHandler<TollgateEnv> {
      const route = seller.route(price, routeOptions)
      return async (c, next) => (handled.has(c.req.raw) ? next() : dispatch(route, c, next))
    },
    front,
    seller,
    close: () => seller.close(),
  })
}

/** The Node response behind a Hono context on `@hono/node-server` (its `env.outgoing`), if any. */
function nodeOutgoing(env: unknown): ServerResponse | undefined {
  const outgoing = (env as { outgoing?: unknown } | undefined)?.outgoing
  return outgoing !== null &&
    typeof outgoing === 'object' &&
    typeof (outgoing as ServerResponse).writeHead === 'function' &&
    typeof (outgoing as ServerResponse).once === 'function'
    ? (outgoing as ServerResponse)
    : undefined
}

/** The Node request behind a Hono context on `@hono/node-server` (its `env.incoming`), if any. */
function nodeIncoming(env: unknown): IncomingMessage | undefined {
  const incoming = (env as { incoming?: unknown } | undefined)?.incoming
  return incoming !== null &&
    typeof incoming === 'object' &&
    typeof (incoming as IncomingMessage).headers === 'object' &&
    Array.isArray((incoming as IncomingMessage).rawHeaders)
    ? (incoming as IncomingMessage)
    : undefined
}
