/**
 * The lease sweeper: a paid call whose process died after settling and before answering is
 * refunded, within a bounded time, unless its buyer presents the payment again first.
 *
 * A settled payment belongs to the process serving it for the store's serve lease
 * (`serveLeaseMs`, default 30 s), which that process renews while the call runs. A process that
 * died stops renewing. Each run of the sweeper lists the settled payments whose lease ended more
 * than `graceMs` ago (`store.listLapsed`) and owes a refund for each (`store.oweRefundLapsed`): a
 * compare-and-set on the lapsed lease, so a payment whose holder renewed it meanwhile, or that its
 * buyer presented again (and is being served), is left alone. Refunds owed are then paid by the
 * refund worker, which the sweeper wakes.
 *
 * ```
 * settled ──(lease lapsed, not presented again within graceMs)──▶ refund_due ──▶ refunded
 *    └──(presented again after the lease)──▶ served once
 * ```
 *
 * A crashed process's payments are thus owed back at most `serveLeaseMs + graceMs + intervalMs`
 * after its last renewal (defaults: 30 + 10 + 10 = 50 seconds). Safe to run in every process
 * sharing a store.
 *
 * @module
 */
import { PaymentError } from './errors.js'
import type { PaymentRecord, PaymentStore } from './stores/types.js'

/** Events of the lease sweeper. */
export type LeaseSweepEvent =
  /** A settled payment whose serve lease lapsed is now owed back. */
  | { type: 'lease_lapsed'; digest: string; payer: string; amount: bigint; resource: string }
  /**
   * A settled payment whose serve lease lapsed, but whose work `delivered` says is done (its effect
   * recorded elsewhere before the process stopped): marked served, not refunded.
   */
  | { type: 'lease_delivered'; digest: string; resource: string }
  /** A run failed (the store could not be read or written); the next run tries again. */
  | { type: 'sweep_failed'; reason: string }

/** Options of {@link createLeaseSweeper}. */
export type LeaseSweeperOptions = {
  store: PaymentStore
  /** Woken (not awaited) after a run that owed a refund: usually the refund worker. */
  refunder?: { runOnce(): Promise<unknown> } | undefined
  /**
   * How long after its serve lease ended a payment is left for its buyer to present again (then it
   * is served once) before it is refunded, in ms. Default 10 000. Keep it at least as long as the
   * `Retry-After` a buyer is told while the lease may be held (at most 10 s).
   */
  graceMs?: number | undefined
  /**
   * Asked before a lapsed payment is owed back: `true` when its paid work is known to be done, its
   * effect durable elsewhere — a credit the payment bought, say, committed before the process died
   * and before the payment was recorded served. Such a payment is marked served instead of refunded,
   * so it is never both delivered and refunded. Default: nothing is known delivered. A throw skips
   * the payment until the next run (it is neither refunded nor served meanwhile).
   */
  delivered?: ((record: PaymentRecord) => Promise<boolean>) | undefined
  /** Payments handled per run. Default 100. */
  batchSize?: number | undefined
  /** Told about each payment owed back and each failed run. Errors thrown here are ignored. */
  onEvent?: ((event: LeaseSweepEvent) => void) | undefined
  /** Clock in ms (tests). Default `Date.now`. */
  now?: (() => number) | undefined
}

/**
 * What one run did: payments owed back, lapsed ones whose work was delivered (marked served), and
 * lapsed ones left alone (renewed, presented again, or `delivered` could not tell).
 */
export type LeaseSweepSummary = { owed: number; served: number; skipped: number }

/** The lease sweeper. */
export type LeaseSweeper = {
  /** Sweeps once. Safe to call concurrently, and from several processes. */
  runOnce(): Promise<LeaseSweepSummary>
  /** Runs {@link LeaseSweeper.runOnce} every `intervalMs` (default 10 000) until {@link LeaseSweeper.stop}. */
  start(intervalMs?: number): void
  /** Stops the timer and waits for a run in progress. */
  stop(): Promise<void>
}

/** The reason recorded on a refund owed for a lapsed serve lease. */
export const leaseLapsedReason =
  'the process serving the paid call stopped before answering (its serve lease lapsed)'

/** Default grace after a lapsed serve lease, ms. */
const defaultLeaseGraceMs = 10_000

/** Default interval between sweeps, ms. */
const defaultLeaseSweepIntervalMs = 10_000

/**
 * Creates the lease sweeper.
 *
 * @example
 * ```ts
 * const refunder = createRefunder({ store, ledger, signer })
 * const sweeper = createLeaseSweeper({ store, refunder })
 * refunder.start()
 * sweeper.start()
 * ```
 */
export function createLeaseSweeper(options: LeaseSweeperOptions): LeaseSweeper {
  const { store } = options
  const graceMs = whole(options.graceMs ?? defaultLeaseGraceMs, 'graceMs', 0)
  const batchSize = whole(options.batchSize ?? 100, 'batchSize', 1)
  const now = options.now ?? Date.now
  let timer: ReturnType<typeof setInterval> | undefined
  let running: Promise<LeaseSweepSummary> | undefined

  const emit = (event: LeaseSweepEvent) => {
    try {
      options.onEvent?.(event)
    } catch {
      // A hook must not break the sweeper.
    }
  }

  async function sweepOne(record: PaymentRecord): Promise<'owed' | 'served' | 'skipped'> {
    if (options.delivered !== undefined) {
      let delivered: boolean
      try {
        delivered = await options.delivered(record)
      } catch (error) {
        emit({ type: 'sweep_failed', reason: reasonOf(error) })
        return 'skipped'
      }
      if (delivered) {
        const served = await store.served(record.digest)
        if (served.status === 'conflict') return 'skipped'
        emit({ type: 'lease_delivered', digest: record.digest, resource: record.resource })
        return 'served'
      }
    }
    const owed = await store.oweRefundLapsed(record.digest, record.leaseUntil, leaseLapsedReason)
    if (owed.status === 'conflict') return 'skipped'
    const settlement = owed.record.settlement
    emit({
      type: 'lease_lapsed',
      digest: record.digest,
      payer: settlement?.payer ?? '',
      amount: settlement?.amount ?? 0n,
      resource: owed.record.resource,
    })
    return 'owed'
  }

  async function run(): Promise<LeaseSweepSummary> {
    const summary: LeaseSweepSummary = { owed: 0, served: 0, skipped: 0 }
    try {
      const lapsed = await store.listLapsed({
        endedBy: new Date(now() - graceMs),
        limit: batchSize,
      })
      for (const record of lapsed) summary[await sweepOne(record)]++
    } catch (error) {
      emit({ type: 'sweep_failed', reason: reasonOf(error) })
    }
    if (summary.owed > 0) void options.refunder?.runOnce().catch(() => {})
    return summary
  }

  return {
    runOnce() {
      running ??= run().finally(() => {
        running = undefined
      })
      return running
    },
    start(intervalMs = defaultLeaseSweepIntervalMs) {
      whole(intervalMs, 'intervalMs', 1)
      if (timer) return
      timer = setInterval(() => {
        void this.runOnce().catch(() => {})
      }, intervalMs)
      ;(timer as { unref?: () => void }).unref?.()
    },
    async stop() {
      if (timer) clearInterval(timer)
      timer = undefined
      await running?.catch(() => {})
    },
  }
}

function whole(value: number, option: string, min: number): number {
  if (!Number.isSafeInteger(value) || value < min) {
    throw new PaymentError(
      'invalid_config',
      `The lease sweeper's ${option} must be a whole number of at least ${min}.`,
      { details: { option } },
    )
  }
  return value
}

function reasonOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  return message.slice(0, 200)
}
