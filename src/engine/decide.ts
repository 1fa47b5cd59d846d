/**
 * The engine's one decision: what to do with a request for a priced route.
 *
 * ```
 * decide(request, route)
 *   no credential, no body validator ─▶ 402 (or 413 for a declared body over the limit), at once
 *   body invalid for the route ─▶ 400/413, nothing charged
 *   no credential ─▶ 402 (x402 body + WWW-Authenticate: Payment, one challenge id)
 *   X-PAYMENT ─▶ decode ─▶ challenge bound to these terms ─▶ settleX402
 *   PAYMENT-SIGNATURE ─▶ decode ─▶ accepted = the route's terms ─▶ challenge ─▶ settleX402
 *   Authorization: Payment ─▶ decode ─▶ challenge HMAC + expiry ─▶ settleMpp
 *   bad payment of any kind ─▶ 402 with the reason (never a 500), nothing served
 *   settled ─▶ { status: 'paid', headers, complete() }
 * ```
 *
 * The first line is answered without a promise (most requests to a priced route are unpaid); every
 * other case goes through the same function, so both always agree.
 *
 * @module
 * @internal
 */
import { readBody } from '../body.js'
import { isPaymentError, PaymentError } from '../errors.js'
import { checkChallengeId } from '../internal/challenges.js'
import type { PreparedTerms } from '../internal/terms.js'
import { parseCredential, suiChargePayload } from '../mpp.js'
import { type Classification, classifyRequest } from '../negotiate.js'
import { normalizeTerms } from '../precheck.js'
import {
  type SettleContext,
  type SettlementResult,
  type SettlementTerms,
  settleMpp,
  settleX402,
} from '../settle.js'
import { decodeXPayment } from '../x402.js'
import { checkAccepted, decodePaymentSignature } from '../x402v2.js'
import { type PaidContext, paidDecision } from './paid.js'
import type { Preparation, PreparedRoute, ResourceTerms } from './prepared.js'
import type { EngineRequest } from './requestView.js'
import { invalidBody, refusedAnswer, tooLarge } from './respond.js'
import type { Decision, PaidRoute, PaymentInfo, PaywallEvent, PaywallOptions } from './types.js'

/** The engine's decision function; see the module's description. */
export type Decide = (request: EngineRequest, route: PaidRoute) => Decision | Promise<Decision>

/** What the decision needs of its engine. */
export type DecideContext = PaidContext & {
  readonly options: PaywallOptions
  readonly prepared: Preparation
}

/** Makes the decision function of an engine. */
export function createDecide(context: DecideContext): Decide {
  const { options, prepared, emit } = context
  const observed = options.onEvent !== undefined
  const settleContext: SettleContext = {
    ledger: options.ledger,
    store: options.store,
    // One object for every check of this engine: its imported signature keys are remembered by it.
    precheck: { ...options.precheck },
    onStep: options.onSettleStep,
    now: context.now,
  }

  function decide(request: EngineRequest, route: PaidRoute): Decision | Promise<Decision> {
    const r = prepared.route(route)
    const presented = classifyRequest(request)
    if (presented.dialect === 'none' && route.body === undefined) {
      if (Number(request.headers.get('content-length') ?? '0') > r.limit) return tooLarge(r.limit)
      const resource = prepared.resource(request)
      if (observed) emit({ type: 'challenged', resource })
      return prepared.challengeAnswer(prepared.terms(r, resource))
    }
    return decideLater(request, r, presented)
  }

  async function decideLater(
    request: EngineRequest,
    r: PreparedRoute,
    presented: Classification,
  ): Promise<Decision> {
    const resource = prepared.resource(request)
    const at = prepared.terms(r, resource)
    const read = await readBody(request, r.route.body, r.limit)
    if (read.status === 'too_large') return tooLarge(read.limit)
    if (read.status === 'invalid') {
      emit({ type: 'invalid_body', resource, field: read.field })
      return invalidBody(read.message, read.field)
    }
    if (presented.dialect === 'none') {
      emit({ type: 'challenged', resource })
      return prepared.challengeAnswer(at)
    }
    let result: SettlementResult
    try {
      result = await settle(presented, at.terms)
    } catch (error) {
      if (!isPaymentError(error)) throw error
      if (error.code === 'store_error') emit({ type: 'store_failed', resource, error })
      result = { status: 'rejected', error }
    }
    if (result.status === 'rejected') {
      emit({ type: 'rejected', resource, dialect: presented.dialect, code: result.error.code })
      return refused(at, result.error)
    }
    if (result.status === 'pending') {
      emit({ type: 'pending', resource, digest: result.digest })
      return refused(at, result.error, { 'Retry-After': String(result.retryAfterSeconds ?? 2) })
    }
    const payment: PaymentInfo = {
      dialect: result.dialect,
      digest: result.digest,
      payer: result.payer,
      amount: result.amount,
      resource,
      resumed: result.resumed,
      ...(presented.dialect === 'x402' && presented.version === 2 && result.dialect === 'x402'
        ? { x402Version: 2 as const }
        : {}),
    }
    emit({ type: 'settled', resource, payment })
    return paidDecision(payment, r.route, read.body, at.terms.network, result.lease, context)
  }

  function refused(
    at: ResourceTerms,
    error: PaymentError,
    extraHeaders?: Readonly<Record<string, string>>,
  ): Decision {
    return refusedAnswer(prepared.challenge(at), error, extraHeaders)
  }

  /** Checks the presented payment against the route's terms, then settles it. */
  async function settle(
    presented: Exclude<Classification, { dialect: 'none' }>,
    p: PreparedTerms,
  ): Promise<SettlementResult> {
    const settlementTerms: SettlementTerms = {
      ...normalizeTerms({ payTo: p.payTo, asset: p.asset, amount: p.price }),
      network: p.network,
      resource: p.resource,
    }
    const offer = options.offer ?? 'both'
    const now = context.now()
    if (presented.dialect === 'x402') {
      if (offer === 'mpp') {
        return rejected('unsupported_scheme', 'This route takes MPP payments only.')
      }
      if (presented.version === 2) return settleV2(presented.header, p, settlementTerms, now)
      const payment = decodeXPayment(presented.header)
      if (payment.network !== p.network) {
        return rejected('unsupported_network', `This route is paid on ${p.network}.`)
      }
      const verdict = checkChallengeId(
        p,
        prepared.keys,
        payment.payload.challengeId,
        now,
        undefined,
      )
      if (verdict.status !== 'valid') return { status: 'rejected', error: verdict.error }
      return settleX402(payment.payload, settlementTerms, settleContext)
    }
    if (offer === 'x402') {
      return rejected('method_unsupported', 'This route takes x402 payments only.')
    }
    const credential = parseCredential(presented.header)
    const payload = suiChargePayload(credential)
    const { id, expires } = credential.challenge
    const verdict = checkChallengeId(p, prepared.keys, id, now, expires)
    if (verdict.status !== 'valid') return { status: 'rejected', error: verdict.error }
    return settleMpp(
      {
        digest: payload.digest,
        signature: payload.signature,
        proof: {
          realm: p.realm,
          challengeId: id,
          amount: p.amount,
          currency: p.asset,
          recipient: p.payTo,
        },
      },
      settlementTerms,
      settleContext,
    )
  }

  /** An x402 version 2 payment: its `accepted` must be the route's terms, its id ours. */
  function settleV2(
    header: string,
    p: PreparedTerms,
    settlementTerms: SettlementTerms,
    now: number,
  ): Promise<SettlementResult> | SettlementResult {
    const payment = decodePaymentSignature(header)
    const accepted = checkAccepted(payment.accepted, p)
    if (accepted.status === 'mismatch') return { status: 'rejected', error: accepted.error }
    const verdict = checkChallengeId(p, prepared.keys, accepted.challengeId, now, undefined)
    if (verdict.status !== 'valid') return { status: 'rejected', error: verdict.error }
    return settleX402(payment.payload, settlementTerms, settleContext)
  }

  return decide
}

function rejected(
  code: 'unsupported_scheme' | 'unsupported_network' | 'method_unsupported',
  message: string,
): SettlementResult {
  return { status: 'rejected', error: new PaymentError(code, message) }
}

/** Observes without letting an observer break payments. */
export function emitter(options: PaywallOptions): (event: PaywallEvent) => void {
  return (event) => {
    try {
      options.onEvent?.(event)
    } catch {
      // Observers must not break payments.
    }
  }
}
