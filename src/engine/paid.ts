/**
 * A paid request, once settled: the success headers it is answered with, whether an outcome counts
 * as a failed call, the serve lease kept while the handler runs, and the outcome recorded once —
 * served, or a refund owed (and the refund worker woken).
 *
 * @module
 * @internal
 */
import { hasCode, type PaymentError } from '../errors.js'
import type { PaymentMethod } from '../methods/types.js'
import type { PaymentBooks } from '../settle.js'
import type { PaymentStore } from '../stores/types.js'
import type { CallOutcome, PaidDecision, PaidRoute, PaymentInfo, PaywallEvent } from './types.js'

/** What a paid decision needs of its engine. */
export type PaidContext = {
  readonly store: PaymentStore
  readonly refunder: { runOnce(): Promise<unknown> } | undefined
  readonly emit: (event: PaywallEvent) => void
  readonly now: () => number
}

const defaultFailed = (status: number) => status >= 500

/**
 * Keeps the serve lease of a paid call while it runs: renewed every third of the store's lease, so
 * that a call longer than the lease is never handed to a second presenter of the same payment. A
 * crashed process stops renewing, and its settled payment is served once after the lease. Returns
 * the function that stops renewing (when the outcome is recorded).
 */
function keepLease(
  payment: PaymentInfo,
  lease: Date | undefined,
  { store, emit }: PaidContext,
): () => void {
  if (lease === undefined) return () => {}
  const every = Math.max(1, Math.floor(store.serveLeaseMs / 3))
  let held = lease
  let stopped = false
  let timer: ReturnType<typeof setTimeout> | undefined
  const schedule = () => {
    timer = setTimeout(renew, every)
    ;(timer as { unref?: () => void }).unref?.()
  }
  const renew = async () => {
    try {
      const renewal = await store.renewServeLease(payment.digest, held)
      if (renewal.status === 'lost') {
        // After `stop` the outcome is being recorded here; before it, someone else took over.
        if (!stopped) emit({ type: 'lease_lost', payment })
        return
      }
      held = renewal.leaseUntil
    } catch {
      // The store could not be reached: try again at the next tick, while the lease lasts.
    }
    if (!stopped) schedule()
  }
  schedule()
  return () => {
    stopped = true
    clearTimeout(timer)
  }
}

/**
 * The decision of a settled request: its success headers (its method's, for the answer's status),
 * whether an outcome is a failed call, and
 * `complete`, which records the outcome once (the serve lease is kept until then).
 */
export function paidDecision(
  payment: PaymentInfo,
  method: PaymentMethod,
  route: PaidRoute,
  body: unknown,
  network: string,
  lease: Date | undefined,
  context: PaidContext,
  books?: PaymentBooks | undefined,
  refusal?: (error: PaymentError) => Response,
): PaidDecision {
  const { store, emit, now } = context
  const successHeaders =
    books?.headersFor ??
    method.server.successHeaders({
      digest: payment.digest,
      payer: payment.payer,
      network,
      at: now(),
    })
  const failed = route.failedStatuses
  // Whether the paid work has started: from then on a hang-up is served, never refunded.
  let committed = false
  const isFailure = (outcome: CallOutcome) =>
    'error' in outcome ||
    ('hungUp' in outcome && !committed) ||
    ('status' in outcome &&
      (typeof failed === 'function'
        ? failed(outcome.status)
        : failed !== undefined
          ? failed.includes(outcome.status) || defaultFailed(outcome.status)
          : defaultFailed(outcome.status)))
  let completion: Promise<'served' | 'refund_due'> | undefined
  // Set by a mount that calls `handled()` once its handler is done (`start({ untilHandled })`):
  // a hang-up after the work started then waits for it before it is recorded served.
  let untilHandled = false
  let handlerDone: (() => void) | undefined
  const commit = () => {
    // Too late once an outcome is recorded: a buyer who hung up before is being refunded.
    if (completion === undefined) committed = true
    return committed
  }
  const stopLease = keepLease(payment, lease, context)
  const durable = books?.durable
  let ready: Promise<Response | undefined> | undefined
  // Set when the payment was refused after the handler started: its refusal carries no success
  // headers.
  let refusedLate = false
  const none = {}
  /** Records the outcome: served, or a refund owed (and the refund worker woken). */
  async function record(outcome: CallOutcome): Promise<'served' | 'refund_due'> {
    stopLease()
    try {
      if (!isFailure(outcome)) {
        const applied =
          books === undefined
            ? (await store.served(payment.digest)).status === 'applied'
            : await books.served()
        emit(applied ? { type: 'served', payment } : { type: 'lease_lost', payment })
        return 'served'
      }
      const reason =
        'status' in outcome
          ? `the handler answered ${outcome.status}`
          : 'error' in outcome
            ? 'the handler failed'
            : 'the buyer hung up before the work started'
      const owed =
        books === undefined
          ? (await store.oweRefund(payment.digest, reason)).status === 'applied'
          : await books.failed(reason)
      emit(owed ? { type: 'refund_due', payment, reason } : { type: 'lease_lost', payment })
      // A method's own books give back at once (a session's hold); nothing for the worker.
      if (books === undefined) void context.refunder?.runOnce().catch(() => {})
      return 'refund_due'
    } catch (error) {
      if (hasCode(error, 'store_error')) {
        emit({ type: 'store_failed', resource: payment.resource, error })
      }
      throw error
    }
  }
  return {
    status: 'paid',
    payment,
    body,
    headersFor: (status) => (refusedLate ? none : successHeaders(status)),
    isFailure,
    get committed() {
      return committed
    },
    commit,
    start(options) {
      if (options?.untilHandled === true) untilHandled = true
      if (route.commit !== 'manual') commit()
    },
    handled() {
      untilHandled = false
      handlerDone?.()
    },
    complete(outcome) {
      if (completion === undefined && untilHandled && committed && 'hungUp' in outcome) {
        // The buyer left after the work started, while the handler still runs: served once the
        // handler is done, its serve lease kept meanwhile — so that a process that dies before
        // (the provider perhaps never asked) leaves the payment to the lease sweeper, refunded,
        // as it does for a buyer who stayed. Whatever the handler answers changes nothing.
        const done = new Promise<void>((resolve) => {
          handlerDone = resolve
        })
        completion = done.then(() => record(outcome))
        return completion
      }
      completion ??= record(outcome)
      return completion
    },
    ready() {
      if (durable === undefined || refusal === undefined) return Promise.resolve(undefined)
      ready ??= durable.then((error) => {
        if (error === undefined) return undefined
        // Refused after the handler started: nothing was taken, so nothing is owed or recorded.
        refusedLate = true
        stopLease()
        completion ??= Promise.resolve('refund_due')
        return refusal(error)
      })
      return ready
    },
  }
}
