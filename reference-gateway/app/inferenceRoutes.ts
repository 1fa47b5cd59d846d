/**
 * The private inference API's own routes: the model list, chat completions with a bearer key, the
 * attested-inference (ACI) routes, the receipt keys, and the paid credit top-ups
 * (`POST /v1/credit/<usdc>`, refunded when the key is unknown or revoked, or when the buyer hangs up
 * before the credit; served once credited).
 *
 * @module
 */
import type { IncomingMessage } from 'node:http'
import type { Hono } from 'hono'
import { formatAmount } from 'tollgate'
import type { HonoPaywall } from 'tollgate/hono'
import { readNodeBody } from 'tollgate/node/http'
import { clientAddressOf } from '../inference/aci.js'
import { receiptKeysPath } from '../inference/gatewayReceipt.js'
import { topUpBodySchema, topUpPath } from '../inference/openapi.js'
import type { GatewayEnv, GatewayInference } from './app.js'

/**
 * Registers the inference API's routes on `app`; the top-ups are priced by `paid`.
 *
 * @example
 * ```ts
 * if (options.inference) mountInferenceRoutes(app, paid, options.inference, false)
 * ```
 */
export function mountInferenceRoutes(
  app: Hono<GatewayEnv>,
  paid: Pick<HonoPaywall, 'pay'>,
  inference: GatewayInference,
  trustProxy: boolean,
): void {
  app.get('/v1/models', () => inference.api.listModels())
  app.get('/v1/aci/*', (c) =>
    inference.api.aci(c.req.raw, {
      client: clientAddressOf(c.req.raw, c.env, trustProxy),
    }),
  )
  app.post('/v1/aci/anchor/:id', (c) => inference.api.aci(c.req.raw))
  app.get(receiptKeysPath, () => inference.api.receiptKeys())
  app.post('/v1/chat/completions', (c) => {
    // On Node the body is read from the `IncomingMessage` itself (no Web stream built around it).
    const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming
    return inference.api.chat(c.req.raw, {
      requestId: c.get('requestId'),
      readBody:
        incoming === undefined
          ? undefined
          : (maxBytes) => readNodeBody(incoming, maxBytes, undefined),
    })
  })
  for (const amount of inference.topUps) {
    const route = paid.pay(amount, {
      description: `Credit of ${amount} USDC for an API key of the private inference API`,
      body: topUpBodySchema,
      maxBodyBytes: 4096,
      // An unknown or revoked key is refunded: nothing was credited.
      failedStatuses: (status) => status >= 500 || status === 404,
      // The work is the credit: the top-up starts when the credit's transaction is about to commit.
      // A buyer who hung up before is refunded and nothing is credited; after, it is served.
      commit: 'manual',
    })
    app.post(topUpPath(amount), route, async (c) => {
      const info = c.get('tollgate')
      const { key_id: keyId } = info.body as { key_id: string }
      const result = await inference.keys.topUp(
        keyId,
        info.payment.amount,
        `payment:${info.payment.digest}`,
        { commit: info.commit },
      )
      // The buyer left before the credit: the payment is refunded; nobody reads this answer.
      if (result.status === 'cancelled') return new Response(null, { status: 499 })
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
      if (result.status === 'credited') {
        // Nothing after the credit may fail: a failure would refund a payment already credited.
        return c.json({
          key_id: keyId,
          credited: formatAmount(info.payment.amount),
          credit: formatAmount(result.credit),
        })
      }
      // Credited before (the same payment presented again after a crash): served as it was.
      info.commit()
      const key = await inference.keys.get(keyId)
      return c.json({
        key_id: keyId,
        credited: '0.000000',
        credit: formatAmount(key?.credit ?? 0n),
      })
    })
  }
}
