/**
 * The paywall engine: the one place where a request meets a price. Framework-neutral (Web-standard
 * `Request`/`Response`); the Express, Koa and Hono adapters only translate to and from it.
 *
 * The engine lives in `src/engine/`, one concept per module: its types (`types`), the check of its
 * options (`options`), what an engine prepares once and remembers (`prepared`), a route's payment
 * methods (`methods`), the one decision (`decide`; CONTRIBUTING.md draws the path of one paid
 * request), the engine's own answers
 * (`respond`), a settled request's success headers and outcome (`paid`), finishing a handler's
 * response on Web-standard runtimes (`finish`), and the request an adapter hands it
 * (`requestView`). The seller layer the adapters share is `seller` (with `sellerTypes` and
 * `sellerLog`).
 *
 * ```
 * handle(request, route) ─▶ respond (400, 402, 413, 503) | paid
 * complete({ status }) ─▶ served | refund_due (handler threw, 5xx, or a status the route marks failed)
 * ```
 *
 * @module
 */
import { createDecide, emitter } from './decide.js'
import { finishResponse, hungUpResponse, watchHangUp } from './finish.js'
import { checkPaywallOptions } from './options.js'
import { createPreparation } from './prepared.js'
import { failedCallResponse } from './respond.js'
import type { PaidDecision, PaidRoute, Paywall, PaywallOptions } from './types.js'

/**
 * Creates the engine.
 *
 * @throws {PaymentError} `invalid_config` or `invalid_secret` for options no payment could pass.
 * @example
 * ```ts
 * const paywall = createPaywall({ payTo, ledger, store, secrets: [process.env.CHALLENGE_SECRET!] })
 * const handler = paywall.protect({ price: '0.02' }, () => Response.json({ ok: true }))
 * ```
 */
export function createPaywall(options: PaywallOptions): Paywall {
  checkPaywallOptions(options)
  const handle = createDecide({
    options,
    prepared: createPreparation(options),
    store: options.store,
    refunder: options.refunder,
    emit: emitter(options),
    now: options.now ?? Date.now,
  })

  // `protect` holds the handler's answer until the payment is durable (`PaidDecision.ready`).
  const holdsAnswer = { holdsAnswer: true } as const

  function protect(
    route: PaidRoute,
    handler: (request: Request, paid: PaidDecision) => Response | Promise<Response>,
  ): (request: Request) => Promise<Response> {
    return async (request) => {
      const decision = await handle(request, route, holdsAnswer)
      if (decision.status === 'respond') return decision.response
      const stopWatching = watchHangUp(request.signal, decision)
      if (stopWatching === undefined) return hungUpResponse()
      let response: Response
      try {
        response = await handler(request, decision)
        stopWatching()
      } catch (error) {
        stopWatching()
        const refusal = await decision.ready()
        if (refusal !== undefined) return refusal
        await decision.complete({ error })
        return failedCallResponse()
      }
      const refusal = await decision.ready()
      if (refusal === undefined) return finishResponse(response, decision)
      void response.body?.cancel().catch(() => {})
      return refusal
    }
  }

  return { handle, protect, options }
}
