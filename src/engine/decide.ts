/**
 * The engine's one decision: what to do with a request for a priced route. CONTRIBUTING.md, "The
 * path of one paid request", draws it; in short: no credential ─▶ the 402 of every enabled method;
 * a credential ─▶ its method settles it ─▶ refused (402 with the reason, never a 500) or paid.
 *
 * A request without a credential to a route without a body validator is answered without a promise
 * (most requests to a priced route are unpaid); every other case goes through the same function, so
 * both always agree.
 *
 * @module
 * @internal
 */
import { readBody } from '../body.js'
import { isPaymentError, type PaymentError } from '../errors.js'
import { checkChallengeId } from '../internal/challenges.js'
import type { PreparedTerms } from '../internal/terms.js'
import type { MethodSettleInput } from '../methods/types.js'
import { normalizeTerms } from '../precheck.js'
import type { SettleContext, SettlementResult } from '../settle.js'
import { notTaken, type Presented, presentedPayment } from './methods.js'
import { type PaidContext, paidDecision } from './paid.js'
import type { Preparation, PreparedRoute, ResourceTerms } from './prepared.js'
import type { EngineRequest } from './requestView.js'
import { type Answer, invalidBody, managementAnswer, refusedAnswer, tooLarge } from './respond.js'
import type {
  Decision,
  HandleOptions,
  PaidRoute,
  PaymentInfo,
  PaywallEvent,
  PaywallOptions,
} from './types.js'

/** The engine's decision function; see the module's description. */
export type Decide = (
  request: EngineRequest,
  route: PaidRoute,
  options?: HandleOptions,
) => Decision | Promise<Decision>

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

  function decide(
    request: EngineRequest,
    route: PaidRoute,
    handleOptions?: HandleOptions,
  ): Decision | Promise<Decision> {
    const r = prepared.route(route)
    const presented = presentedPayment(request.headers, r.methods)
    if (presented === undefined && route.body === undefined) {
      if (Number(request.headers.get('content-length') ?? '0') > r.limit) return tooLarge(r.limit)
      const resource = prepared.resource(request)
      if (observed) emit({ type: 'challenged', resource })
      return prepared.challengeAnswer(r, prepared.terms(r, resource))
    }
    return decideLater(request, r, presented, handleOptions?.holdsAnswer === true)
  }

  async function decideLater(
    request: EngineRequest,
    r: PreparedRoute,
    presented: ReturnType<typeof presentedPayment>,
    holdsAnswer: boolean,
  ): Promise<Decision> {
    const resource = prepared.resource(request)
    const at = prepared.terms(r, resource)
    const bare = isBare(request)
    // A bare request to a method that answers management actions is not a call: no body to check.
    // Unpaid, on a route with such a method, it is answered the 402 (a buyer about to close or top
    // up a channel reads the challenge so).
    const management =
      bare &&
      (presented === undefined
        ? r.methods.enabled.some((m) => m.server.answersBare === true)
        : presented.enabled && presented.method.server.answersBare === true)
    const read = management
      ? ({ status: 'ok', body: undefined } as const)
      : await readBody(request, r.route.body, r.limit)
    if (read.status === 'too_large') return tooLarge(read.limit)
    if (read.status === 'invalid') {
      emit({ type: 'invalid_body', resource, field: read.field })
      return invalidBody(read.message, read.field)
    }
    if (presented === undefined) {
      emit({ type: 'challenged', resource })
      return prepared.challengeAnswer(r, at)
    }
    const { method } = presented
    let result: SettlementResult
    try {
      result = presented.enabled
        ? await settle(presented, at.terms, bare, holdsAnswer)
        : { status: 'rejected', error: notTaken(method, r.methods) }
    } catch (error) {
      if (!isPaymentError(error)) throw error
      if (error.code === 'store_error') emit({ type: 'store_failed', resource, error })
      result = { status: 'rejected', error }
    }
    if (result.status === 'rejected') {
      emit({ type: 'rejected', resource, dialect: method.dialect, code: result.error.code })
      return refused(r, at, result.error)
    }
    if (result.status === 'answered') {
      emit({ type: 'answered', resource, method: method.name, status: result.answer.status })
      return managementAnswer(result.answer)
    }
    if (result.status === 'pending') {
      emit({ type: 'pending', resource, digest: result.digest })
      return refused(r, at, result.error, { 'Retry-After': String(result.retryAfterSeconds ?? 2) })
    }
    const payment: PaymentInfo = {
      dialect: method.dialect,
      method: method.name,
      digest: result.digest,
      payer: result.payer,
      amount: result.amount,
      resource,
      resumed: result.resumed,
      ...(result.channelId === undefined ? {} : { channelId: result.channelId }),
      ...method.server.paymentInfo,
    }
    emit({ type: 'settled', resource, payment })
    return paidDecision(
      payment,
      method,
      r.route,
      read.body,
      at.terms.network,
      result.lease,
      context,
      result.books,
      // A refusal that came after the handler started (`PaidDecision.ready`).
      (error) => {
        if (error.code === 'store_error') emit({ type: 'store_failed', resource, error })
        emit({ type: 'rejected', resource, dialect: method.dialect, code: error.code })
        return refused(r, at, error).response
      },
    )
  }

  function refused(
    r: PreparedRoute,
    at: ResourceTerms,
    error: PaymentError,
    extraHeaders?: Readonly<Record<string, string>>,
  ): Answer {
    return refusedAnswer(prepared.challenge(r, at), r.methods.enabled, error, extraHeaders)
  }

  /** Has the presented credential's method check it against the route's terms and settle it. */
  function settle(
    presented: Presented,
    p: PreparedTerms,
    bare: boolean,
    holdsAnswer: boolean,
  ): Promise<SettlementResult> | SettlementResult {
    const now = context.now()
    const input: MethodSettleInput = {
      terms: p,
      settlement: {
        ...normalizeTerms({ payTo: p.payTo, asset: p.asset, amount: p.price }),
        network: p.network,
        resource: p.resource,
      },
      checkChallenge: (id, expires, binding) =>
        checkChallengeId(p, prepared.keys, id, now, expires, binding),
      context: settleContext,
      bare,
      holdsAnswer,
    }
    return presented.method.server.settle(presented.credential, input)
  }

  return decide
}

/**
 * Whether a request is bare: `HEAD`, or a `POST` with neither body nor query (how a buyer sends a
 * management action, such as a session's top-up or a voucher asked for mid-stream).
 */
function isBare(request: EngineRequest): boolean {
  const method = request.method
  if (method === 'HEAD') return true
  if (method !== 'POST' || request.url.includes('?')) return false
  const length = request.headers.get('content-length')
  return (
    request.headers.get('transfer-encoding') === null && (length === null || length.trim() === '0')
  )
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
