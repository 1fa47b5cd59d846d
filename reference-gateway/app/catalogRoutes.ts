/**
 * The catalog's routes: every paid endpoint a `POST` priced by the paywall (body validated before
 * payment; path parameters checked before it), then served by its upstream family; every free
 * endpoint a `GET` passed to its upstream. A failed upstream call answers 502/504, which the paywall
 * records as a failed paid call (refunded). Services `servedBy: 'inference'` go to the inference
 * API's keyless side instead, when the app has one.
 *
 * A paid call's work starts when its upstream request is sent (the route commits then): a buyer who
 * hangs up before is refunded and nothing is sent; after, the payment is served, and the buyer
 * leaving never aborts the upstream request.
 *
 * @module
 */
import type { Context, Hono } from 'hono'
import { Methods, Session } from 'tollgate'
import type { HonoPaywall } from 'tollgate/hono'
import {
  type CatalogEntry,
  entries,
  type FreeEndpoint,
  type PaidEndpoint,
  routePathOf,
  validatePathParams,
} from '../catalog/catalog.js'
import { validateBody } from '../catalog/shapes.js'
import type { ChatRequest } from '../inference/request.js'
import { families } from '../upstreams/families.js'
import { callUpstream, type UpstreamResult } from '../upstreams/upstream.js'
import type { GatewayAppOptions, GatewayEnv } from './app.js'

/**
 * Registers a route for every endpoint of `options.catalog` on `app`, priced by `paid`.
 *
 * @example
 * ```ts
 * mountCatalogRoutes(app, paid, options)
 * ```
 */
export function mountCatalogRoutes(
  app: Hono<GatewayEnv>,
  paid: Pick<HonoPaywall, 'pay'>,
  options: GatewayAppOptions,
): void {
  const { catalog, metrics, logger, sessions } = options
  const inference = options.inference
  // The catalog's paid routes take a session at their per-call price; the keyless inference route
  // takes one per streamed token.
  const perCall = sessions === undefined ? undefined : [...Methods.builtInMethods, sessions.perCall]
  const perToken =
    sessions === undefined ? undefined : [...Methods.builtInMethods, sessions.perToken]

  function upstreamCall(
    entry: CatalogEntry,
    body: Record<string, unknown>,
    signal: AbortSignal,
    requestId: string | undefined,
    pathParams: Readonly<Record<string, string>> = {},
    onSend?: () => boolean,
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
      onSend,
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

  /**
   * A keyless call paid through a session, per streamed token: only a streamed answer is metered
   * (a buffered one is refused with 400 before the model is asked; nothing was charged). Each
   * chunk that carries generated text is one token, committed into the channel's spent before it
   * is sent; the chunks without text (the role, the usage, `[DONE]`) pass free.
   */
  async function meteredKeyless(c: Context<GatewayEnv>, body: ChatRequest): Promise<Response> {
    const info = c.get('tollgate')
    if (inference === undefined || sessions === undefined) throw new Error('unreachable')
    if (body.stream !== true) {
      return Response.json(
        {
          error: {
            code: 'stream_required',
            message:
              'A session pays this route per streamed token: send "stream": true. Nothing was charged.',
            param: 'stream',
          },
        },
        { status: 400 },
      )
    }
    const answer = await inference.api.serveKeyless(body, {
      requestId: c.get('requestId'),
      payment: info.payment,
      signal: c.req.raw.signal,
      fail: undefined,
    })
    if (answer.status !== 200 || answer.body === null) return answer
    const metered = sessions.perToken.stream(info.payment, answer.body, {
      signal: c.req.raw.signal,
      isUnit: isTextChunk,
    })
    return new Response(metered, { status: 200, headers: answer.headers })
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
          methods: perToken,
        })
        app.post(endpoint.path, route, async (c) => {
          metrics.settlement((performance.now() - c.get('startedAt')) / 1000)
          const info = c.get('tollgate')
          const body = info.body as ChatRequest
          if (sessions !== undefined && info.payment.method === sessions.perToken.name) {
            return meteredKeyless(c, body)
          }
          const outgoing = (c.env as { outgoing?: { destroy(error: Error): void } } | undefined)
            ?.outgoing
          // The work started with the handler (the route's default): the buyer leaving no longer
          // cancels the upstream call it pays for.
          return inference.api.serveKeyless(body, {
            requestId: c.get('requestId'),
            payment: c.get('tollgate').payment,
            signal: new AbortController().signal,
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
        // The work starts when the upstream request is sent (`onSend` below).
        commit: 'manual',
        methods: perCall,
      })
      const handlers = [
        route,
        async (c: Context<GatewayEnv>) => {
          metrics.settlement((performance.now() - c.get('startedAt')) / 1000)
          const info = c.get('tollgate')
          const buyer = untilCommitted(c.req.raw.signal, info.commit)
          const result = await upstreamCall(
            paidEntry,
            info.body as Record<string, unknown>,
            buyer.signal,
            info.payment.digest,
            endpoint.pathParams === undefined ? {} : c.req.param(),
            buyer.commit,
          )
          if (result.status === 'ok') return result.response
          // The buyer left before the work started: refunded already; nobody reads this.
          if (!info.commit()) return new Response(null, { status: 499 })
          return failure(paidEntry, result, c.get('requestId'), true)
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
}

/**
 * The buyer's abort signal, followed only until the paid work starts: `commit` is the route's
 * `commit()`, called just before the upstream request is sent; once it has answered `true`, the
 * buyer leaving no longer aborts anything (an upstream request already sent is never aborted
 * because the buyer left).
 */
function untilCommitted(
  buyer: AbortSignal,
  commit: () => boolean,
): { signal: AbortSignal; commit: () => boolean } {
  const controller = new AbortController()
  const follow = () => controller.abort(buyer.reason)
  if (buyer.aborted) follow()
  else buyer.addEventListener('abort', follow, { once: true })
  return {
    signal: controller.signal,
    commit: () => {
      const started = commit()
      if (started) buyer.removeEventListener('abort', follow)
      return started
    },
  }
}

/** Whether a streamed chat event carries generated text (one token); others pass free. */
function isTextChunk(event: string): boolean {
  const { name, data } = Session.sseFields(event)
  if (name !== 'message' || data === undefined || data === '[DONE]') return false
  try {
    const chunk = JSON.parse(data) as { choices?: { delta?: { content?: unknown } }[] }
    const content = chunk.choices?.[0]?.delta?.content
    return typeof content === 'string' && content !== ''
  } catch {
    return false
  }
}
