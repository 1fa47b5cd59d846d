/**
 * The gateway's middleware, in the order it runs: CORS (preflights answered, the payment headers
 * exposed), a request id on every answer, `Connection: close` on the answer to a request whose body
 * was not read to its end, and one metric and one log line per request.
 *
 * @module
 */
import type { Context, Hono } from 'hono'
import { cors } from 'hono/cors'
import { requestId } from 'hono/request-id'
import { routePath } from 'hono/route'
import type { GatewayAppOptions, GatewayEnv } from './app.js'

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
  'x-call-id',
]

/**
 * Registers the middleware on `app` (before any route).
 *
 * @example
 * ```ts
 * useGatewayMiddleware(app, options)
 * ```
 */
export function useGatewayMiddleware(app: Hono<GatewayEnv>, options: GatewayAppOptions): void {
  const { metrics, logger } = options
  const origins = options.corsOrigins ?? ['*']
  if (!origins.includes('none')) {
    const anyOrigin = origins.includes('*')
    const preflight = cors({
      origin: anyOrigin ? '*' : [...origins],
      allowMethods: ['GET', 'HEAD', 'POST', 'OPTIONS'],
      allowHeaders: corsAllowHeaders,
      exposeHeaders: corsExposeHeaders,
      maxAge: 600,
    })
    const exposed = corsExposeHeaders.join(',')
    // Preflights by Hono's middleware; any other answer gets the same headers once it exists (set
    // before the handler, they would make Hono copy every answer, body and all, to merge them).
    app.use(async (c, next) => {
      if (c.req.method === 'OPTIONS') return preflight(c, next)
      await next()
      const origin = c.req.header('origin') ?? ''
      const allowed = anyOrigin ? '*' : origins.includes(origin) ? origin : null
      withHeaders(c, (headers) => {
        if (allowed !== null) headers.set('access-control-allow-origin', allowed)
        headers.set('access-control-expose-headers', exposed)
        if (!anyOrigin) headers.append('vary', 'Origin')
      })
    })
  }
  app.use(requestId())
  // One middleware for what is done after the handler (one promise layer per request instead of
  // three), in this order: the metric and the log line, the request id on every answer (also a
  // Response a handler built itself), and `Connection: close` on the answer to a request whose body
  // was not read to its end (over a cap, or not needed): the rest is never read (Node would
  // otherwise read and discard it for as long as the client sends).
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
    if (!c.res.headers.has('x-request-id')) {
      const id = c.get('requestId')
      withHeaders(c, (headers) => headers.set('x-request-id', id))
    }
    const incoming = (c.env as { incoming?: { complete?: unknown } } | undefined)?.incoming
    if (incoming !== undefined && incoming.complete === false) {
      withHeaders(c, (headers) => headers.set('connection', 'close'))
    }
  })
}

/** Changes the headers of the answer, or of a copy when they are immutable (a fetched answer). */
function withHeaders(c: Context<GatewayEnv>, change: (headers: Headers) => void): void {
  try {
    change(c.res.headers)
  } catch {
    const headers = new Headers(c.res.headers)
    change(headers)
    c.res = new Response(c.res.body, {
      status: c.res.status,
      statusText: c.res.statusText,
      headers,
    })
  }
}
