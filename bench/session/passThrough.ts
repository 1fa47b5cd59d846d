/**
 * The unpaid twin of the reference gateway's paid routes, for the unpaid baseline of
 * `bench/session/gateway.ts`: a `pay` for the gateway's `pay` option (`startGateway`,
 * `createGatewayApp`) that serves the requests `unpaid(c)` picks without payment and sends every
 * other one to the paywall's own `pay`. An unpaid request gets what the paywall does before a
 * payment — the body read once up to the route's limit (413 over it; on Node from the Node request,
 * as the Hono adapter reads it), parsed and validated (400 naming the field) — and then the route's
 * handler, with a payment info shaped like a real one: no challenge, no settlement, nothing recorded,
 * `commit()` always `true`. Its payment's method is {@link unpaidMethod}, which no session method
 * is named: the keyless inference route serves it its plain answer, the same stream unmetered.
 *
 * @module
 */
import type { IncomingMessage } from 'node:http'
import type { Context, MiddlewareHandler } from 'hono'
import { Body, PaymentError, type PaymentInfo, parseAmount } from 'tollgate'
import type { EngineRequest } from 'tollgate/adapter'
import type { HonoPaywall, TollgateEnv } from 'tollgate/hono'
import { nodeRequestViewAt, readNodeBody } from 'tollgate/node/http'

/** The payment method named in the payment info of a request served unpaid. */
export const unpaidMethod = 'unpaid'

/** Options of {@link passThrough}. */
export type PassThroughOptions = {
  /**
   * Whether a request is served unpaid. Default: every request (then no route of the gateway is
   * paid). Security: a request it picks is served free.
   */
  unpaid?: ((c: Context) => boolean) | undefined
}

/** The payer named in an unpaid request's payment info (no one paid). */
const nobody = `0x${'0'.repeat(64)}`

/**
 * The gateway's `pay` option that serves the requests `options.unpaid` picks without payment (see
 * the module's description).
 *
 * @param options - {@link PassThroughOptions}; default every request unpaid.
 * @example
 * ```ts
 * const unpaid = new WeakSet<Request>()
 * await startGateway({ config, pay: passThrough({ unpaid: (c) => unpaid.has(c.req.raw) }) })
 * ```
 */
export function passThrough(
  options: PassThroughOptions = {},
): (paywall: HonoPaywall) => HonoPaywall['pay'] {
  const unpaid = options.unpaid ?? (() => true)
  return (paywall) => (price, routeOptions) => {
    const paid = paywall.pay(price, routeOptions)
    const route = { ...routeOptions, price }
    const limit = paywall.seller.maxBodyBytes(route)
    const amount = parseAmount(price)
    let served = 0
    const free: MiddlewareHandler<TollgateEnv> = async (c, next) => {
      const read = await Body.readBody(
        route.body === undefined ? c.req.raw : await bodyView(c, limit),
        route.body,
        limit,
      )
      if (read.status === 'too_large') {
        return problem(
          new PaymentError('request_body_too_large', `The request body is over ${limit} bytes.`),
        )
      }
      if (read.status === 'invalid') {
        return problem(new PaymentError('invalid_request_body', read.message), {
          field: read.field,
        })
      }
      served++
      const payment: PaymentInfo = {
        dialect: 'mpp',
        method: unpaidMethod,
        digest: `unpaid-${served}`,
        payer: nobody,
        amount,
        resource: c.req.url,
        resumed: false,
      }
      c.set('tollgate', {
        payment,
        body: read.body,
        commit: () => true,
        durable: async () => true,
      })
      await next()
    }
    return (c, next) => (unpaid(c) ? free(c, next) : paid(c, next))
  }
}

/**
 * The body of a request as the Hono adapter reads it for a route with a body validator: on Node
 * (`@hono/node-server`) from the Node request, once, its bytes left for later readers as
 * `incoming.rawBody`; elsewhere the Web `Request` (of which `Body.readBody` reads a clone).
 */
async function bodyView(c: Context, limit: number): Promise<EngineRequest> {
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming
  if (
    incoming === undefined ||
    incoming.readableDidRead ||
    incoming.readableFlowing !== null ||
    (incoming as { rawBody?: unknown }).rawBody !== undefined
  ) {
    return c.req.raw
  }
  const bytes = await readNodeBody(incoming, limit, undefined)
  if (bytes !== undefined && bytes.byteLength <= limit) {
    ;(incoming as { rawBody?: Uint8Array }).rawBody = bytes
  }
  return nodeRequestViewAt(incoming, c.req.raw.url, bytes)
}

/** A problem document answer, as the paywall's own (RFC 9457, not cached). */
function problem(error: PaymentError, extensions?: Record<string, unknown>): Response {
  return new Response(JSON.stringify(error.toProblem(extensions)), {
    status: error.status,
    headers: { 'content-type': 'application/problem+json', 'cache-control': 'no-store' },
  })
}
