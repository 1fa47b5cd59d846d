/**
 * The payment store: the replay guard and the durable memory of every payment digest.
 *
 * One digest moves through a small state machine:
 *
 * ```
 *            ┌─▶ rejected
 *  claimed ──┼─▶ pending ──▶ settled | rejected      (ledger outcome unknown, resolved by look-up)
 *     │      └─▶ settled ──▶ served
 *     │                 └──▶ refund_due ──▶ refunded  (the call failed, or its serve lease lapsed)
 *     └─ release ─▶ (forgotten: the payment may be presented again)
 * ```
 *
 * A `claimed` or `settled` record is leased to the process working on it. A `settled` record whose
 * serve lease lapsed (the process died) is served once to whoever presents the same payment first,
 * or turned into a refund by the lease sweeper ({@link PaymentStore.listLapsed},
 * {@link PaymentStore.oweRefundLapsed}) — whichever comes first; both are compare-and-sets. A
 * `claimed` record whose claim lease lapsed, and a `pending` one, are looked up on the ledger by the
 * lease sweeper ({@link PaymentStore.listLapsedClaims}, {@link PaymentStore.listPending}): a payment
 * that executed is settled and owed back, a lapsed claim that never executed is released.
 *
 * Every transition is a compare-and-set on the current state, and answers a {@link TransitionResult}:
 * `applied`, or `conflict` — the record is not in a state the transition is allowed from (another
 * presenter or process moved it on first, or there is none), and nothing changed. A conflict is an
 * expected outcome, never an exception. A {@link PaymentError} of code `store_error` means only that
 * the store itself is broken: bad input (status 500), or a backend that failed (status 503 when it
 * cannot be reached or is busy, 500 otherwise; the driver's error is its `cause`).
 *
 * @module
 */
import type { PaymentErrorCode } from '../errors.js'

/** The states of a payment digest. */
export type PaymentState =
  | 'claimed'
  | 'pending'
  | 'settled'
  | 'served'
  | 'refund_due'
  | 'refunded'
  | 'rejected'

/** Every {@link PaymentState}, in the order of the state machine. */
export const paymentStates: readonly PaymentState[] = [
  'claimed',
  'pending',
  'settled',
  'served',
  'refund_due',
  'refunded',
  'rejected',
]

/** The payment dialect a digest arrived in. */
export type PaymentDialect = 'x402' | 'mpp'

/** What is known about a payment when it is claimed. */
export type ClaimMeta = {
  /** The resource (route URL) the payment is for. */
  resource: string
  /** The dialect the credential arrived in. */
  dialect: PaymentDialect
}

/** The facts of a settlement whose effects were verified on the ledger. */
export type PaymentSettlement = {
  /** The sender of the payment transaction (a Sui address). */
  payer: string
  /** The USDC that arrived at `payTo`, in base units. */
  amount: bigint
  /** The resource the payment was for. */
  resource: string
  /** The dialect the credential arrived in. */
  dialect: PaymentDialect
  /** The network, e.g. `sui:mainnet`. */
  network: string
  /** The coin type that was paid. */
  asset: string
  /** When the settlement was verified. */
  settledAt: Date
}

/** A refund transaction, stored before it is submitted so that a crash re-submits the same bytes. */
export type RefundTransaction = {
  /** The transaction bytes, base64 (BCS `TransactionData`). */
  txBytes: string
  /** The operator's serialized signature, base64 (absent when signed at submission time). */
  signature?: string | undefined
  /** The digest of `txBytes`. */
  refundDigest: string
}

/** The refund side of a payment record. */
export type RefundInfo = {
  /** Why the payment is owed back (a short, non-secret text). */
  reason: string
  /** When the refund became due. */
  owedAt: Date
  /** The refund transaction, once built (see {@link PaymentStore.recordRefundTransaction}). */
  transaction?: RefundTransaction | undefined
  /** The digest of the executed refund (state `refunded`). */
  refundDigest?: string | undefined
  /** When the refund was confirmed. */
  refundedAt?: Date | undefined
}

/** One payment digest as the store knows it. */
export type PaymentRecord = {
  /** The digest of the payment transaction (computed by the server, never client-supplied). */
  digest: string
  /** Where it is in the state machine. */
  state: PaymentState
  /** The resource the payment is for. */
  resource: string
  /** The dialect the credential arrived in. */
  dialect: PaymentDialect
  /** When the digest was (last) claimed. */
  claimedAt: Date
  /** When the record last changed. */
  updatedAt: Date
  /**
   * When the current lease ends (a `claimed` or `settled` record): until then the payment belongs to
   * the process holding it, and the same payment presented again is told to retry later. The holder of a
   * `settled` record renews it while the paid call runs ({@link PaymentStore.renewServeLease}); the
   * end it holds is also its proof of holding it.
   */
  leaseUntil?: Date | undefined
  /** Present from `settled` on (and on `refund_due` / `refunded`). */
  settlement?: PaymentSettlement | undefined
  /** When the paid response was delivered (state `served`). */
  servedAt?: Date | undefined
  /** The rejection code (state `rejected`). */
  rejection?: { code: PaymentErrorCode } | undefined
  /** Present from `refund_due` on. */
  refund?: RefundInfo | undefined
}

/**
 * The outcome of {@link PaymentStore.claim}:
 * - `claimed`: this caller owns the digest and may submit it to the ledger;
 * - `settled_unserved`: the payment was settled but never served (a crash between settle and serve,
 *   or a lease that ran out), and is presented again for the same resource; this caller — and only
 *   this one — may serve it now and then call `served`;
 * - `taken`: someone else has it: a replay (served, refunded, rejected), a payment still being
 *   processed under another caller's lease (`claimed` or `settled` with `leaseUntil` ahead: tell the
 *   presenter to retry after the lease), or, for `pending`, one to resolve by looking the digest up.
 */
export type ClaimResult =
  | { status: 'claimed' }
  | { status: 'taken'; record: PaymentRecord }
  | { status: 'settled_unserved'; record: PaymentRecord }

/**
 * The outcome of {@link PaymentStore.renewServeLease}:
 * - `renewed`: the caller still holds the payment, now until `leaseUntil` (keep it for the next
 *   renewal);
 * - `lost`: the caller does not hold it any more — it is no longer `settled` (served, owed a refund),
 *   or its lease ran out and another presenter of the same payment took it over.
 */
export type LeaseRenewal =
  | { status: 'renewed'; leaseUntil: Date }
  | { status: 'lost'; record: PaymentRecord | undefined }

/**
 * A transition that changed nothing because the record is not where it must be:
 * - `state`: the state the record is in, `undefined` when no payment is recorded for the digest;
 * - `reason`: `state` when the transition is not allowed from that state, `refund_transaction` when
 *   the state allows it but a different refund transaction is recorded (see
 *   {@link PaymentStore.recordRefundTransaction} and {@link PaymentStore.refunded}), `lease` when
 *   the serve lease is not the lapsed one named (renewed, or taken over by a re-presentation; see
 *   {@link PaymentStore.oweRefundLapsed}).
 *
 * Whoever moved the record on owns the outcome: for settlement, the caller lost the race (a replay).
 */
export type TransitionConflict = {
  status: 'conflict'
  state: PaymentState | undefined
  reason: 'state' | 'refund_transaction' | 'lease'
}

/**
 * The outcome of a state transition ({@link PaymentStore.markPending}, `settled`, `served`,
 * `rejected`, `oweRefund`, `recordRefundTransaction`, `refunded`): `applied` with the record as it is
 * now, or a {@link TransitionConflict}.
 *
 * @example
 * ```ts
 * const result = await store.settled(digest, settlement)
 * if (result.status === 'conflict') return replay() // another presenter settled it first
 * const lease = result.record.leaseUntil
 * ```
 */
export type TransitionResult = { status: 'applied'; record: PaymentRecord } | TransitionConflict

/** The outcome of {@link PaymentStore.release}: `released` (forgotten), or a {@link TransitionConflict}. */
export type ReleaseResult = { status: 'released' } | TransitionConflict

/** Number of records in each state, for metrics. */
export type PaymentCounts = { readonly [S in PaymentState]: number }

/** Options shared by every store implementation. */
export type StoreOptions = {
  /**
   * How long a `claimed` record belongs to its claimer, in ms. After that, presenting the same
   * payment again claims it afresh (a process that died after claiming loses nothing: the ledger is
   * idempotent on re-submission, and `settled` is a compare-and-set, so only one claimer can settle).
   * Keep it well above the ledger timeout. Default: 300 000 (5 minutes).
   */
  claimLeaseMs?: number | undefined
  /**
   * How long a `settled` record belongs to the request that is serving it, in ms, without a renewal.
   * After that, the same payment presented again is served once (`settled_unserved`), or the lease
   * sweeper refunds it (see `createLeaseSweeper`), whichever comes first. Default: 30 000
   * (30 seconds).
   *
   * The paywall renews the lease of every paid call it is serving, every third of this, for as long
   * as the call runs ({@link PaymentStore.renewServeLease}); so only a process that stopped renewing
   * — it crashed, or was cut off from the store for the whole lease — loses a payment it settled,
   * and a call may run longer than the lease. Security: a process cut off from the store for longer
   * than this may serve a payment that was meanwhile served elsewhere or refunded; a longer lease
   * makes that rarer and the recovery of a crashed process's payments slower.
   */
  serveLeaseMs?: number | undefined
  /**
   * How long finished records (`served`, `refunded`, `rejected`) are kept, in ms, when
   * {@link PaymentStore.prune} is called without `olderThan`. Default: undefined (keep forever).
   * Security: a pruned digest is no longer a replay guard; keep records longer than the longest
   * challenge lifetime, so an old payment cannot be presented again with a valid challenge.
   */
  retentionMs?: number | undefined
  /** The clock, in ms since the epoch (tests). Default: `Date.now`. */
  now?: (() => number) | undefined
}

/** The settlement as given to {@link PaymentStore.settled}. */
export type SettlementInput = PaymentSettlement

/** Options of {@link PaymentStore.listRefundsDue} and {@link PaymentStore.listPending}. */
export type ListOptions = {
  /** At most this many records, oldest first. Default: 100, at most 10 000. */
  limit?: number | undefined
}

/** Options of {@link PaymentStore.release}. */
export type ReleaseOptions = {
  /**
   * Release only while the claim holds this lease end (as listed): a compare-and-set, so a claim
   * taken over by a new presenter is not released under it. Default: any claim.
   */
  lease?: Date | undefined
}

/** Options of {@link PaymentStore.listLapsed} and {@link PaymentStore.listLapsedClaims}. */
export type LapsedListOptions = ListOptions & {
  /** Only leases that ended at or before this time. Default: now. */
  endedBy?: Date | undefined
}

/** Options of {@link PaymentStore.prune}. */
export type PruneOptions = {
  /** Delete finished records last changed before this time. Default: now − `retentionMs`. */
  olderThan?: Date | undefined
}

/**
 * The durable state of payment digests. Every operation is atomic; transitions are compare-and-set on
 * the current state and answer a {@link TransitionResult}: `conflict` when not allowed from it (an
 * expected outcome, not an exception). A method throws only when the store is broken: a
 * {@link PaymentError} of code `store_error` for bad input (HTTP status 500) or a failed backend
 * (503 when unreachable or busy, 500 otherwise, the driver's error as `cause`).
 *
 * Implementations: `createMemoryStore` (tests, one process), `createSqliteStore`
 * (`tollgate/stores/sqlite`, the embedded default, several processes on one host),
 * `createRedisStore` (`tollgate/stores/redis`) and `createPostgresStore` (`tollgate/stores/postgres`).
 *
 * @example
 * ```ts
 * const claim = await store.claim(digest, { resource, dialect: 'x402' })
 * if (claim.status === 'taken') return replay()
 * // … execute, verify effects …
 * const settled = await store.settled(digest, { payer, amount, resource, dialect: 'x402', network, asset, settledAt: new Date() })
 * if (settled.status === 'conflict') return replay() // another presenter settled it first
 * // … serve …
 * await store.served(digest)
 * ```
 */
export type PaymentStore = {
  /**
   * Claims a digest atomically. Exactly one of any number of concurrent callers (in any number of
   * processes sharing the backing storage) gets `claimed`; see {@link ClaimResult}.
   */
  claim(digest: string, meta: ClaimMeta): Promise<ClaimResult>
  /**
   * `claimed` → forgotten: the claim was abandoned before the transaction was submitted. With
   * `lease`, a compare-and-set on the claim's lease end as listed by
   * {@link PaymentStore.listLapsedClaims}: a claim taken over since (a new lease) is a `conflict`
   * (reason `lease`) and is left alone.
   */
  release(digest: string, options?: ReleaseOptions): Promise<ReleaseResult>
  /** `claimed` → `pending`: the ledger did not answer after submission; resolve by digest look-up. */
  markPending(digest: string): Promise<TransitionResult>
  /** `claimed` | `pending` → `settled`, with the verified settlement. Starts the serve lease. */
  settled(digest: string, settlement: SettlementInput): Promise<TransitionResult>
  /**
   * Extends the serve lease of a `settled` record to now + `serveLeaseMs`, for the caller that
   * holds it: `lease` is the end of the lease it holds (from {@link PaymentStore.settled}, the
   * `settled_unserved` claim, or the last renewal). A compare-and-set on that end: a caller whose
   * lease was taken over by another presenter gets `lost` and changes nothing.
   */
  renewServeLease(digest: string, lease: Date): Promise<LeaseRenewal>
  /** The serve lease of this store, in ms (see {@link StoreOptions.serveLeaseMs}). */
  readonly serveLeaseMs: number
  /** `settled` → `served`: the paid response was delivered. */
  served(digest: string): Promise<TransitionResult>
  /** `claimed` | `pending` → `rejected`, with the rejection code. */
  rejected(digest: string, code: PaymentErrorCode): Promise<TransitionResult>
  /** `settled` → `refund_due`: the paid call failed; the payer is owed the settled amount back. */
  oweRefund(digest: string, reason: string): Promise<TransitionResult>
  /**
   * `settled` → `refund_due` for a payment whose serve lease lapsed: its process stopped before the
   * answer (a crash) and nobody presented it again. `lease` is the lease end as listed by
   * {@link PaymentStore.listLapsed} (`undefined` for a record without one): a compare-and-set on
   * it, so a lease renewed or taken over by a re-presentation since is a `conflict` (reason `lease`)
   * and changes nothing, as is a lease that has not ended yet. Durable before it returns.
   */
  oweRefundLapsed(
    digest: string,
    lease: Date | undefined,
    reason: string,
  ): Promise<TransitionResult>
  /**
   * Stores the refund transaction of a `refund_due` record BEFORE it is submitted. A `conflict`
   * (reason `refund_transaction`) when a different refund transaction is already recorded, unless
   * `replaces` names its digest (for a refund that provably never executed, e.g. expired).
   */
  recordRefundTransaction(
    digest: string,
    transaction: RefundTransaction & { replaces?: string | undefined },
  ): Promise<TransitionResult>
  /**
   * `refund_due` → `refunded`. When a refund transaction was recorded, `refundDigest` must be its
   * digest (otherwise a `conflict`, reason `refund_transaction`).
   */
  refunded(digest: string, refundDigest: string): Promise<TransitionResult>
  /** The record of a digest, or undefined. */
  get(digest: string): Promise<PaymentRecord | undefined>
  /** Records in `refund_due`, oldest first. */
  listRefundsDue(options?: ListOptions): Promise<PaymentRecord[]>
  /** Records in `pending`, oldest first. */
  listPending(options?: ListOptions): Promise<PaymentRecord[]>
  /**
   * Records in `settled` whose serve lease ended at or before `endedBy` (default now), the earliest
   * lease end first: payments settled and never served by a process that stopped renewing.
   */
  listLapsed(options?: LapsedListOptions): Promise<PaymentRecord[]>
  /**
   * Records in `claimed` whose claim lease ended at or before `endedBy` (default now), the earliest
   * lease end first: payments claimed by a process that stopped before recording the ledger's
   * answer. The lease sweeper looks each up on the ledger (settled and refunded, or released).
   */
  listLapsedClaims(options?: LapsedListOptions): Promise<PaymentRecord[]>
  /** Number of records in each state. */
  counts(): Promise<PaymentCounts>
  /**
   * Deletes finished records (`served`, `refunded`, `rejected`) last changed before `olderThan`
   * (default: now − `retentionMs`; without either, deletes nothing). Never deletes a record that
   * still owes anything. Returns how many were deleted.
   */
  prune(options?: PruneOptions): Promise<number>
  /** Releases the connection when the store opened it (a client passed in is left open). */
  close(): Promise<void>
}
