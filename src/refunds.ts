/**
 * Automatic refunds of failed paid calls, paid exactly once.
 *
 * A paid call that fails is marked `refund_due` in the store before anything else happens
 * (`store.oweRefund`). The refund worker then pays the payer back from the operator's key:
 *
 * 1. build the transfer (operator → payer, the settled amount of the settled asset) and sign it;
 * 2. store its bytes and digest (`store.recordRefundTransaction`) BEFORE submitting;
 * 3. submit; on success mark `refunded`.
 *
 * After a crash or a refusal anywhere in between, the next run finds the recorded transaction,
 * looks its digest up, and re-submits the SAME bytes when it is not on the ledger (the ledger is
 * idempotent on re-submission). A new transaction replaces the recorded one only when the old one
 * provably can never execute: it executed and failed, or the ledger shows its validity window has
 * passed (by the ledger's epoch and clock) or an owned object it spends has moved on. A refusal
 * alone proves nothing (the operator's balance may be momentarily low) and the signed bytes stay
 * valid, so the refund waits. So a refund is paid exactly once.
 *
 * Without an operator key, refunds stay `refund_due`: they are listed by {@link Refunder.owed} (and
 * the `tollgate refunds` command) and counted in metrics.
 *
 * @module
 */
import type { Signer } from '@mysten/sui/cryptography'
import { fromBase64, toBase64 } from '@mysten/sui/utils'
import { messageOf } from './internal/messageOf.js'
import { transactionDigest } from './internal/suiSignature.js'
import type { ExecutabilityOutcome } from './ledger/types.js'
import type { SettlementLedger } from './settle.js'
import type { PaymentRecord, PaymentStore, TransitionConflict } from './stores/types.js'

/** What the refund worker needs from the ledger. */
export type RefundLedger = SettlementLedger & {
  /**
   * Whether signed bytes not found on the ledger could still execute there (their window is open
   * and the owned objects they name unspent): a refund is replaced only on `never`.
   */
  canStillExecute(txBytes: Uint8Array): Promise<ExecutabilityOutcome>
  /** Builds (does not sign or submit) a transfer of `amount` of `coinType` from `sender` to `to`. */
  buildTransfer(transfer: {
    sender: string
    to: string
    amount: bigint
    coinType: string
  }): Promise<Uint8Array>
}

/** Events of the refund worker. */
export type RefundEvent =
  | { type: 'refunded'; digest: string; refundDigest: string; payer: string; amount: bigint }
  | { type: 'refund_failed'; digest: string; reason: string }

/** Options of {@link createRefunder}. */
export type RefunderOptions = {
  store: PaymentStore
  ledger: RefundLedger
  /**
   * The operator's key that pays refunds. Without one, refunds stay `refund_due` and are only listed.
   * Security: this key holds the seller's funds; it never leaves the process and is never logged.
   */
  signer?: Signer | undefined
  /** Refunds handled per run. Default 50. */
  batchSize?: number | undefined
  /** Called after each refund outcome. Errors thrown by the hook are ignored. */
  onEvent?: ((event: RefundEvent) => void) | undefined
  /**
   * Called at each step of a refund: `recorded` (bytes stored, not yet submitted) and `submitted`
   * (the ledger answered, not yet marked refunded). For crash tests and tracing.
   */
  onStep?: ((step: 'recorded' | 'submitted', digest: string) => void | Promise<void>) | undefined
}

/** What one run did. */
export type RefundRunSummary = { refunded: number; failed: number; waiting: number }

/** What handling one refund came to; `elsewhere`: another process paid it meanwhile. */
type Outcome = 'refunded' | 'failed' | 'waiting' | 'elsewhere'

/** The refund worker. */
export type Refunder = {
  /** Handles up to `batchSize` due refunds once. Safe to call concurrently with other processes. */
  runOnce(): Promise<RefundRunSummary>
  /** Runs {@link Refunder.runOnce} every `intervalMs` (default 5 000) until {@link Refunder.stop}. */
  start(intervalMs?: number): void
  /** Stops the timer and waits for a run in progress. */
  stop(): Promise<void>
  /** Refunds owed and not yet paid, oldest first. */
  owed(limit?: number): Promise<PaymentRecord[]>
}

/**
 * Creates the refund worker.
 *
 * @example
 * const refunder = createRefunder({ store, ledger, signer: operatorKeypair })
 * refunder.start()
 */
export function createRefunder(options: RefunderOptions): Refunder {
  const { store, ledger, signer } = options
  const batchSize = options.batchSize ?? 50
  let timer: NodeJS.Timeout | undefined
  let running: Promise<RefundRunSummary> | undefined

  const emit = (event: RefundEvent) => {
    try {
      options.onEvent?.(event)
    } catch {
      // A hook must not break the worker.
    }
  }

  async function refundOne(record: PaymentRecord): Promise<Outcome> {
    const settlement = record.settlement
    if (!signer || !settlement) return 'waiting'
    const recorded = record.refund?.transaction
    if (!recorded) return submitNew(record, undefined)
    const found = await ledger.getTransaction(recorded.refundDigest)
    if (found.status === 'unknown') return 'waiting'
    if (found.status === 'found') {
      // A digest executes once: a failed refund is final and can be replaced.
      if (found.transaction.success) return finish(record, recorded.refundDigest)
      return submitNew(record, recorded.refundDigest)
    }
    const bytes = fromBase64(recorded.txBytes)
    if (recorded.signature) {
      const again = await ledger.execute(bytes, [recorded.signature])
      if (again.status === 'unknown') return 'waiting'
      if (again.status === 'executed') {
        if (again.transaction.success) return finish(record, recorded.refundDigest)
        return submitNew(record, recorded.refundDigest)
      }
    }
    // Refused (or never signed): a refusal may be temporary (the operator's balance momentarily
    // low, a node lagging), and the signed refund stays valid until its window closes. Another
    // transaction is built only when the ledger shows the first can never execute.
    const verdict = await ledger.canStillExecute(bytes)
    if (verdict.status !== 'never') {
      emit({
        type: 'refund_failed',
        digest: record.digest,
        reason:
          verdict.status === 'possible'
            ? 'the recorded refund was refused but may still execute: it is kept, not replaced'
            : `whether the recorded refund can still execute is unknown: ${verdict.reason}`,
      })
      return 'waiting'
    }
    // A ledger that shows the window closed or an input spent has seen every transaction before:
    // one more look-up tells whether the first refund executed after all.
    const last = await ledger.getTransaction(recorded.refundDigest)
    if (last.status === 'unknown') return 'waiting'
    if (last.status === 'found' && last.transaction.success) {
      return finish(record, recorded.refundDigest)
    }
    return submitNew(record, recorded.refundDigest)
  }

  async function submitNew(record: PaymentRecord, replaces: string | undefined): Promise<Outcome> {
    const settlement = record.settlement!
    const operator = signer!
    let bytes: Uint8Array
    try {
      bytes = await ledger.buildTransfer({
        sender: operator.toSuiAddress(),
        to: settlement.payer,
        amount: settlement.amount,
        coinType: settlement.asset,
      })
    } catch (error) {
      emit({ type: 'refund_failed', digest: record.digest, reason: reasonOf(error) })
      return 'failed'
    }
    const { signature } = await operator.signTransaction(bytes)
    const refundDigest = transactionDigest(bytes)
    const recorded = await store.recordRefundTransaction(record.digest, {
      txBytes: toBase64(bytes),
      signature,
      refundDigest,
      replaces,
    })
    // Another worker moved the refund on since it was listed (recorded its own transaction, or paid
    // it): it is theirs, and these bytes are never submitted.
    if (recorded.status === 'conflict') return movedOn(record, recorded, 'record')
    await options.onStep?.('recorded', record.digest)
    const outcome = await ledger.execute(bytes, [signature])
    await options.onStep?.('submitted', record.digest)
    if (outcome.status === 'executed' && outcome.transaction.success) {
      return finish(record, refundDigest)
    }
    if (outcome.status === 'unknown') return 'waiting'
    const reason =
      outcome.status === 'rejected' ? outcome.reason : (outcome.transaction.error ?? 'failed')
    emit({ type: 'refund_failed', digest: record.digest, reason: reason.slice(0, 200) })
    return 'failed'
  }

  async function finish(record: PaymentRecord, refundDigest: string): Promise<Outcome> {
    const done = await store.refunded(record.digest, refundDigest)
    if (done.status === 'conflict') return movedOn(record, done, 'finish')
    emit({
      type: 'refunded',
      digest: record.digest,
      refundDigest,
      payer: record.settlement!.payer,
      amount: record.settlement!.amount,
    })
    return 'refunded'
  }

  /**
   * A refund that another process moved on since it was listed. Paid there (`refunded`): not counted
   * here. Its own refund transaction recorded first (while this one was building): `waiting`, the
   * next run looks that one up. Anything else is reported and counted as failed.
   */
  function movedOn(
    record: PaymentRecord,
    conflict: TransitionConflict,
    step: 'record' | 'finish',
  ): Outcome {
    if (conflict.state === 'refunded') return 'elsewhere'
    if (step === 'record' && conflict.reason === 'refund_transaction') return 'waiting'
    emit({
      type: 'refund_failed',
      digest: record.digest,
      reason:
        conflict.reason === 'refund_transaction'
          ? 'another refund transaction was recorded for this payment meanwhile'
          : `the payment is no longer owed a refund (it is ${conflict.state ?? 'gone'})`,
    })
    return 'failed'
  }

  async function run(): Promise<RefundRunSummary> {
    const summary: RefundRunSummary = { refunded: 0, failed: 0, waiting: 0 }
    for (const record of await store.listRefundsDue({ limit: batchSize })) {
      let outcome: Outcome
      try {
        outcome = await refundOne(record)
      } catch (error) {
        // The ledger or the store failed (a store_error is a broken store, not a lost race).
        emit({ type: 'refund_failed', digest: record.digest, reason: reasonOf(error) })
        outcome = 'failed'
      }
      if (outcome !== 'elsewhere') summary[outcome]++
    }
    return summary
  }

  return {
    runOnce() {
      running ??= run().finally(() => {
        running = undefined
      })
      return running
    },
    start(intervalMs = 5000) {
      if (timer) return
      timer = setInterval(() => {
        void this.runOnce().catch(() => {})
      }, intervalMs)
      timer.unref()
    },
    async stop() {
      if (timer) clearInterval(timer)
      timer = undefined
      await running?.catch(() => {})
    },
    owed(limit = 100) {
      return store.listRefundsDue({ limit })
    },
  }
}

function reasonOf(error: unknown): string {
  const message = messageOf(error)
  return message.slice(0, 200)
}
