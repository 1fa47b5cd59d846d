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
 * With `resolve` (the seller passes one that reads its ledger), each run also resolves payments
 * whose process died before the store recorded the ledger's answer: `claimed` records whose claim
 * lease ended more than `graceMs` ago (`store.listLapsedClaims`) and `pending` records unchanged for
 * `pendingGraceMs`. A payment the ledger executed is recorded settled and owed back at once; a
 * lapsed claim the ledger never saw is released (the buyer may present it again):
 *
 * ```
 * claimed (claim lease lapsed) ─┬─(executed)──▶ settled ──▶ refund_due ──▶ refunded
 * pending ──────────────────────┤
 *                               └─(absent: a claim only)──▶ released
 * ```
 *
 * @module
 */
import { PaymentError, type PaymentErrorCode } from './errors.js'
import { messageOf } from './internal/messageOf.js'
import type { PaymentRecord, PaymentSettlement, PaymentStore } from './stores/types.js'

/**
 * What the ledger says of a `claimed` or `pending` payment (see {@link LeaseSweeperOptions.resolve}):
 * - `executed`: the transaction executed and paid; `settlement` holds the facts verified from its
 *   effects (payer, the amount that arrived, …), as settlement records them;
 * - `rejected`: the transaction executed but did not pay (it failed, or paid someone else): the
 *   digest is spent, nothing is owed back;
 * - `absent`: the ledger has no such transaction;
 * - `unknown`: the ledger could not tell (unreachable, lagging): left for the next run.
 */
export type ClaimResolution =
  | { status: 'executed'; settlement: PaymentSettlement }
  | { status: 'rejected'; code: PaymentErrorCode }
  | { status: 'absent' }
  | { status: 'unknown'; reason: string }

/** Events of the lease sweeper. */
export type LeaseSweepEvent =
  /** A settled payment whose serve lease lapsed is now owed back. */
  | { type: 'lease_lapsed'; digest: string; payer: string; amount: bigint; resource: string }
  /**
   * A settled payment whose serve lease lapsed, but whose work `delivered` says is done (its effect
   * recorded elsewhere before the process stopped): marked served, not refunded.
   */
  | { type: 'lease_delivered'; digest: string; resource: string }
  /**
   * A `claimed` (claim lease lapsed) or `pending` payment resolved on the ledger: `refund_owed` (it
   * executed: recorded settled and owed back, `amount` to `payer`), `released` (a claim the ledger
   * never saw: it may be presented again) or `rejected` (it executed without paying).
   */
  | {
      type: 'claim_resolved'
      digest: string
      state: 'claimed' | 'pending'
      outcome: 'refund_owed' | 'released' | 'rejected'
      resource: string
      payer?: string | undefined
      amount?: bigint | undefined
    }
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
  /**
   * Looks a `claimed` payment whose claim lease lapsed, or a `pending` one, up on the ledger and
   * verifies its effects (see {@link ClaimResolution}). With it, each run settles and owes back the
   * payments that executed, releases the lapsed claims the ledger never saw, and leaves the rest
   * for the next run (a throw counts as `unknown`). A `pending` record the ledger does not know is
   * left pending: its transaction was submitted and may still land, and its buyer may present it
   * again. A lapsed claim is released as `absent` only after its claim lease (default 5 minutes) and
   * `graceMs`: a transaction submitted by the dead process lands within seconds or never, so a
   * digest unknown that long after its claim was, in practice, never executed. Default: none
   * (claimed and pending records wait for their buyer to present them again). The seller passes
   * one that reads its own ledger.
   */
  resolve?: ((record: PaymentRecord) => Promise<ClaimResolution>) | undefined
  /**
   * How long a `pending` record is left unchanged for its buyer to present again (then it is
   * settled and served) before `resolve` settles and refunds it, in ms. Default 60 000 (the client
   * retries a pending payment for up to 60 s).
   */
  pendingGraceMs?: number | undefined
  /** Payments handled per run. Default 100. */
  batchSize?: number | undefined
  /** Told about each payment owed back and each failed run. Errors thrown here are ignored. */
  onEvent?: ((event: LeaseSweepEvent) => void) | undefined
  /** Clock in ms (tests). Default `Date.now`. */
  now?: (() => number) | undefined
}

/**
 * What one run did: payments owed back (lapsed serve leases, and claimed or pending payments the
 * ledger executed), lapsed ones whose work was delivered (marked served), lapsed claims released
 * (never executed), claimed or pending payments rejected (executed without paying), and payments
 * left alone (renewed, presented again, moved on meanwhile, or `delivered` or `resolve` could not
 * tell).
 */
export type LeaseSweepSummary = {
  owed: number
  served: number
  released: number
  rejected: number
  skipped: number
}

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

/** The reason recorded on a refund owed for a payment whose process died before recording it. */
export const claimLapsedReason =
  'the process settling the payment stopped before recording it (its claim lapsed)'

/** Default grace for a `pending` record before the sweeper resolves it, ms. */
const defaultPendingGraceMs = 60_000

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
  const pendingGraceMs = whole(options.pendingGraceMs ?? defaultPendingGraceMs, 'pendingGraceMs', 0)
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

  async function resolveOne(
    record: PaymentRecord,
    resolve: (record: PaymentRecord) => Promise<ClaimResolution>,
  ): Promise<keyof LeaseSweepSummary> {
    const state = record.state === 'pending' ? 'pending' : 'claimed'
    let resolution: ClaimResolution
    try {
      resolution = await resolve(record)
    } catch (error) {
      resolution = { status: 'unknown', reason: reasonOf(error) }
    }
    const base = { type: 'claim_resolved', digest: record.digest, state } as const
    switch (resolution.status) {
      case 'unknown':
        return 'skipped'
      case 'absent': {
        // A pending transaction was submitted and may still land: it waits for its buyer.
        if (state === 'pending') return 'skipped'
        const released = await store.release(record.digest, { lease: record.leaseUntil })
        if (released.status === 'conflict') return 'skipped'
        emit({ ...base, outcome: 'released', resource: record.resource })
        return 'released'
      }
      case 'rejected': {
        const rejected = await store.rejected(record.digest, resolution.code)
        if (rejected.status === 'conflict') return 'skipped'
        emit({ ...base, outcome: 'rejected', resource: record.resource })
        return 'rejected'
      }
      case 'executed': {
        // A claim taken over by a new presenter since it was listed is that presenter's to settle.
        if (state === 'claimed') {
          const current = await store.get(record.digest)
          if (current?.state !== 'claimed' || !sameTime(current.leaseUntil, record.leaseUntil)) {
            return 'skipped'
          }
        }
        const settled = await store.settled(record.digest, resolution.settlement)
        if (settled.status === 'conflict') return 'skipped'
        const owed = await store.oweRefund(record.digest, claimLapsedReason)
        if (owed.status === 'conflict') return 'skipped'
        emit({
          ...base,
          outcome: 'refund_owed',
          resource: owed.record.resource,
          payer: resolution.settlement.payer,
          amount: resolution.settlement.amount,
        })
        return 'owed'
      }
    }
  }

  async function run(): Promise<LeaseSweepSummary> {
    const summary: LeaseSweepSummary = { owed: 0, served: 0, released: 0, rejected: 0, skipped: 0 }
    try {
      const lapsed = await store.listLapsed({
        endedBy: new Date(now() - graceMs),
        limit: batchSize,
      })
      for (const record of lapsed) summary[await sweepOne(record)]++
    } catch (error) {
      emit({ type: 'sweep_failed', reason: reasonOf(error) })
    }
    const resolve = options.resolve
    if (resolve !== undefined) {
      try {
        const claims = await store.listLapsedClaims({
          endedBy: new Date(now() - graceMs),
          limit: batchSize,
        })
        const quiet = now() - pendingGraceMs
        const pending = (await store.listPending({ limit: batchSize })).filter(
          (record) => record.updatedAt.getTime() <= quiet,
        )
        for (const record of [...claims, ...pending]) summary[await resolveOne(record, resolve)]++
      } catch (error) {
        emit({ type: 'sweep_failed', reason: reasonOf(error) })
      }
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

function sameTime(a: Date | undefined, b: Date | undefined): boolean {
  return a?.getTime() === b?.getTime()
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
  const message = messageOf(error)
  return message.slice(0, 200)
}
