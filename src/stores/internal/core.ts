/**
 * The part of a {@link PaymentStore} that is the same for every backend: input checks, the
 * transition table, leases, error messages, and the mapping to public records. A backend supplies a
 * small {@link StoreEngine} that performs each step atomically.
 *
 * @module
 */
import { PaymentError, paymentErrorCodes } from '../../errors.js'
import type {
  ClaimMeta,
  ClaimResult,
  LapsedListOptions,
  LeaseRenewal,
  PaymentCounts,
  PaymentState,
  PaymentStore,
  ReleaseResult,
  StoreOptions,
  TransitionConflict,
  TransitionResult,
} from '../types.js'
import { paymentStates } from '../types.js'
import { storeFailure } from './failure.js'
import { type Column, type Row, toRecord } from './row.js'

/** A compare-and-set on the state of one record. */
export type Transition = {
  /** The public operation, named in `details.operation` of a backend failure. */
  operation: string
  /** The states it is allowed from. */
  from: readonly PaymentState[]
  /** The new state; null deletes the record. */
  to: PaymentState | null
  /** Columns to write (null clears). `state` and `updated_at` are included. */
  set: Partial<Row>
  /** An extra condition: `column` must be null or one of `absentOr`. */
  guard?: { column: Column; absentOr: readonly string[] } | undefined
  /**
   * The write must reach stable storage before the call returns, even where the backend relaxes
   * that for speed (SQLite's `synchronous = NORMAL`): money leaves the seller after it (a refund
   * owed, a refund transaction about to be submitted).
   */
  durable?: boolean | undefined
}

/** What a backend answers to a {@link Transition}. */
export type ApplyResult =
  | { status: 'ok'; row: Row | undefined }
  | { status: 'missing' }
  | { status: 'conflict'; state: PaymentState; guard: boolean }

/** What a backend answers to a claim. */
export type ClaimOutcome =
  | { status: 'claimed' }
  | { status: 'taken'; row: Row }
  | { status: 'settled_unserved'; row: Row }

/** The times a claim works with. */
export type ClaimTimes = {
  /** Now, ms. */
  now: number
  /** Lease end for a new or taken-over `claimed` record. */
  claimUntil: number
  /** Lease end for a `settled` record handed to a new server. */
  serveUntil: number
}

/**
 * The atomic steps a backend provides.
 *
 * `claim` inserts `row` when the digest is unknown (→ claimed); when the record is `claimed` with an
 * expired lease, takes it over (lease = claimUntil, claimed_at/updated_at = now, → claimed); when it is
 * `settled` with an expired or no lease and the same resource, sets lease = serveUntil
 * (→ settled_unserved); otherwise
 * answers taken. All of that in one atomic step.
 *
 * A step may throw whatever its driver throws: {@link createStore} turns it into a `store_error`
 * (see `storeFailure`).
 */
export type StoreEngine = {
  claim(row: Row, times: ClaimTimes): Promise<ClaimOutcome>
  apply(digest: string, transition: Transition): Promise<ApplyResult>
  get(digest: string): Promise<Row | undefined>
  /** Records in `state`, oldest first (refund_due by refund_owed_at, pending by updated_at). */
  list(state: 'refund_due' | 'pending', limit: number): Promise<Row[]>
  /**
   * Records in `state` (`settled` or `claimed`) whose lease_until is null or at most `endedBy`, by
   * lease_until then digest (null last).
   */
  listLapsed(state: LeasedState, endedBy: number, limit: number): Promise<Row[]>
  counts(): Promise<Partial<Record<PaymentState, number>>>
  /** Deletes records in a {@link finishedStates} state with updated_at < cutoff. */
  prune(cutoff: number): Promise<number>
  close(): Promise<void>
}

/** The states whose records are leased to a process: listed by the lease sweeper once it lapsed. */
export type LeasedState = 'settled' | 'claimed'

/** States whose records owe nothing and may be pruned. */
export const finishedStates: readonly PaymentState[] = ['served', 'refunded', 'rejected']

const defaultClaimLeaseMs = 300_000
const defaultServeLeaseMs = 30_000
const maxListLimit = 10_000

const digestPattern = /^[A-Za-z0-9_-]{1,128}$/

function storeError(message: string, details: Record<string, unknown>): PaymentError {
  return new PaymentError('store_error', message, { details })
}

function checkDigest(digest: unknown, name = 'digest'): string {
  if (typeof digest !== 'string' || !digestPattern.test(digest)) {
    throw storeError(`The ${name} must be 1–128 characters of A–Z, a–z, 0–9, "_" or "-".`, {
      field: name,
    })
  }
  return digest
}

function checkText(value: unknown, field: string, max: number): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > max) {
    throw storeError(`The ${field} must be a non-empty string of at most ${max} characters.`, {
      field,
    })
  }
  return value
}

function checkDialect(value: unknown): 'x402' | 'mpp' {
  if (value !== 'x402' && value !== 'mpp') {
    throw storeError('The dialect must be "x402" or "mpp".', { field: 'dialect' })
  }
  return value
}

function checkMs(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw storeError(`The ${field} must be a whole number of milliseconds.`, { field })
  }
  return value
}

/** An empty row for a new claim. */
export function newRow(digest: string, meta: ClaimMeta, now: number, leaseUntil: number): Row {
  return {
    digest,
    state: 'claimed',
    resource: meta.resource,
    dialect: meta.dialect,
    claimed_at: now,
    updated_at: now,
    lease_until: leaseUntil,
    payer: null,
    amount: null,
    network: null,
    asset: null,
    settled_at: null,
    served_at: null,
    rejection_code: null,
    refund_reason: null,
    refund_owed_at: null,
    refund_tx_bytes: null,
    refund_signature: null,
    refund_digest: null,
    refunded_at: null,
  }
}

/**
 * The engine with every failure of the backend turned into a `store_error` {@link PaymentError}
 * (503 when unreachable or busy, 500 otherwise; see {@link storeFailure}).
 */
function guarded(engine: StoreEngine): StoreEngine {
  const wrap =
    <A extends unknown[], R>(name: string, step: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      try {
        return await step(...args)
      } catch (error) {
        throw storeFailure(error, name)
      }
    }
  return {
    claim: wrap('claim', (row: Row, times: ClaimTimes) => engine.claim(row, times)),
    async apply(digest, transition) {
      try {
        return await engine.apply(digest, transition)
      } catch (error) {
        throw storeFailure(error, transition.operation)
      }
    },
    get: wrap('get', (digest: string) => engine.get(digest)),
    list: wrap('list', (state: 'refund_due' | 'pending', limit: number) =>
      engine.list(state, limit),
    ),
    listLapsed: wrap('list lapsed', (state: LeasedState, endedBy: number, limit: number) =>
      engine.listLapsed(state, endedBy, limit),
    ),
    counts: wrap('counts', () => engine.counts()),
    prune: wrap('prune', (cutoff: number) => engine.prune(cutoff)),
    close: wrap('close', () => engine.close()),
  }
}

/**
 * Builds the public {@link PaymentStore} over a backend engine.
 *
 * @param backend - the backend's atomic steps (whatever they throw becomes a `store_error`).
 * @param options - leases, retention and clock (see {@link StoreOptions}).
 */
export function createStore(backend: StoreEngine, options: StoreOptions = {}): PaymentStore {
  const engine = guarded(backend)
  const now = options.now ?? Date.now
  const claimLeaseMs = checkMs(options.claimLeaseMs ?? defaultClaimLeaseMs, 'claimLeaseMs')
  const serveLeaseMs = checkMs(options.serveLeaseMs ?? defaultServeLeaseMs, 'serveLeaseMs')
  const retentionMs =
    options.retentionMs === undefined ? undefined : checkMs(options.retentionMs, 'retentionMs')

  async function apply(
    digest: string,
    transition: Transition,
  ): Promise<{ status: 'ok'; row: Row | undefined } | TransitionConflict> {
    const result = await engine.apply(digest, transition)
    if (result.status === 'ok') return result
    if (result.status === 'missing')
      return { status: 'conflict', state: undefined, reason: 'state' }
    return {
      status: 'conflict',
      state: result.state,
      reason: result.guard ? 'refund_transaction' : 'state',
    }
  }

  async function transition(digest: string, t: Transition): Promise<TransitionResult> {
    const outcome = await apply(checkDigest(digest), t)
    if (outcome.status === 'conflict') return outcome
    if (outcome.row === undefined) throw storeError('The store returned no record.', { digest })
    return { status: 'applied', record: toRecord(outcome.row) }
  }

  function listLimit(limit: number | undefined): number {
    const value = limit ?? 100
    if (!Number.isSafeInteger(value) || value < 1 || value > maxListLimit) {
      throw storeError(`The limit must be a whole number from 1 to ${maxListLimit}.`, {
        field: 'limit',
      })
    }
    return value
  }

  async function listLeased(state: LeasedState, listOptions: LapsedListOptions) {
    const endedBy = listOptions.endedBy === undefined ? now() : listOptions.endedBy.getTime()
    if (!Number.isSafeInteger(endedBy)) {
      throw storeError('The endedBy must be a valid Date.', { field: 'endedBy' })
    }
    const rows = await engine.listLapsed(state, endedBy, listLimit(listOptions.limit))
    return rows.map(toRecord)
  }

  return {
    async claim(digest, meta): Promise<ClaimResult> {
      checkDigest(digest)
      const resource = checkText(meta?.resource, 'resource', 2048)
      const dialect = checkDialect(meta?.dialect)
      const t = now()
      const outcome = await engine.claim(
        newRow(digest, { resource, dialect }, t, t + claimLeaseMs),
        { now: t, claimUntil: t + claimLeaseMs, serveUntil: t + serveLeaseMs },
      )
      if (outcome.status === 'claimed') return { status: 'claimed' }
      return { status: outcome.status, record: toRecord(outcome.row) }
    },

    async release(digest, releaseOptions = {}): Promise<ReleaseResult> {
      checkDigest(digest)
      const lease = releaseOptions.lease
      const held = lease === undefined ? undefined : lease instanceof Date ? lease.getTime() : NaN
      if (held !== undefined && !Number.isSafeInteger(held)) {
        throw storeError('The lease must be a valid Date or undefined.', { field: 'lease' })
      }
      const outcome = await apply(digest, {
        operation: 'release',
        from: ['claimed'],
        to: null,
        set: {},
        // Only the claim that was listed: a presenter that took the lapsed claim over holds a new lease.
        guard: held === undefined ? undefined : { column: 'lease_until', absentOr: [String(held)] },
      })
      if (outcome.status === 'conflict') {
        return outcome.reason === 'refund_transaction' ? { ...outcome, reason: 'lease' } : outcome
      }
      return { status: 'released' }
    },

    async markPending(digest) {
      return transition(digest, {
        operation: 'mark pending',
        from: ['claimed'],
        to: 'pending',
        set: { state: 'pending', updated_at: now(), lease_until: null },
      })
    },

    async settled(digest, settlement) {
      const payer = checkText(settlement?.payer, 'payer', 256)
      if (typeof settlement.amount !== 'bigint' || settlement.amount < 0n) {
        throw storeError('The amount must be a bigint of base units, not negative.', {
          field: 'amount',
        })
      }
      const settledAt = settlement.settledAt
      if (!(settledAt instanceof Date) || Number.isNaN(settledAt.getTime())) {
        throw storeError('The settledAt must be a valid Date.', { field: 'settledAt' })
      }
      const t = now()
      return transition(digest, {
        operation: 'mark settled',
        from: ['claimed', 'pending'],
        to: 'settled',
        set: {
          state: 'settled',
          updated_at: t,
          lease_until: t + serveLeaseMs,
          payer,
          amount: settlement.amount.toString(),
          resource: checkText(settlement.resource, 'resource', 2048),
          dialect: checkDialect(settlement.dialect),
          network: checkText(settlement.network, 'network', 256),
          asset: checkText(settlement.asset, 'asset', 512),
          settled_at: settledAt.getTime(),
        },
      })
    },

    serveLeaseMs,

    async renewServeLease(digest, lease): Promise<LeaseRenewal> {
      checkDigest(digest)
      const held = lease instanceof Date ? lease.getTime() : Number.NaN
      if (!Number.isSafeInteger(held)) {
        throw storeError('The lease must be a valid Date.', { field: 'lease' })
      }
      const result = await engine.apply(digest, {
        operation: 'renew the serve lease',
        from: ['settled'],
        to: 'settled',
        set: { lease_until: now() + serveLeaseMs },
        guard: { column: 'lease_until', absentOr: [String(held)] },
      })
      if (result.status === 'ok' && result.row !== undefined && result.row.lease_until !== null) {
        return { status: 'renewed', leaseUntil: new Date(result.row.lease_until) }
      }
      const current = await engine.get(digest)
      return { status: 'lost', record: current === undefined ? undefined : toRecord(current) }
    },

    async served(digest) {
      const t = now()
      return transition(digest, {
        operation: 'mark served',
        from: ['settled'],
        to: 'served',
        set: { state: 'served', updated_at: t, served_at: t, lease_until: null },
      })
    },

    async rejected(digest, code) {
      if (!paymentErrorCodes.includes(code)) {
        throw storeError('The rejection code is not a PaymentError code.', { field: 'code' })
      }
      return transition(digest, {
        operation: 'mark rejected',
        from: ['claimed', 'pending'],
        to: 'rejected',
        set: { state: 'rejected', updated_at: now(), rejection_code: code, lease_until: null },
      })
    },

    async oweRefund(digest, reason) {
      const t = now()
      return transition(digest, {
        operation: 'owe a refund',
        durable: true,
        from: ['settled'],
        to: 'refund_due',
        set: {
          state: 'refund_due',
          updated_at: t,
          refund_reason: checkText(reason, 'reason', 1024),
          refund_owed_at: t,
          lease_until: null,
        },
      })
    },

    async oweRefundLapsed(digest, lease, reason) {
      checkDigest(digest)
      const held = lease === undefined ? undefined : lease instanceof Date ? lease.getTime() : NaN
      if (held !== undefined && !Number.isSafeInteger(held)) {
        throw storeError('The lease must be a valid Date or undefined.', { field: 'lease' })
      }
      const why = checkText(reason, 'reason', 1024)
      const t = now()
      if (held !== undefined && held > t) {
        const current = await engine.get(digest)
        return { status: 'conflict', state: current?.state, reason: 'lease' }
      }
      const outcome = await apply(digest, {
        operation: 'owe a refund for a lapsed lease',
        durable: true,
        from: ['settled'],
        to: 'refund_due',
        set: {
          state: 'refund_due',
          updated_at: t,
          refund_reason: why,
          refund_owed_at: t,
          lease_until: null,
        },
        // Null, or exactly the lapsed lease that was listed: a renewal or a take-over moved it on.
        guard: { column: 'lease_until', absentOr: held === undefined ? [] : [String(held)] },
      })
      if (outcome.status === 'conflict') {
        return outcome.reason === 'refund_transaction' ? { ...outcome, reason: 'lease' } : outcome
      }
      if (outcome.row === undefined) throw storeError('The store returned no record.', { digest })
      return { status: 'applied', record: toRecord(outcome.row) }
    },

    async recordRefundTransaction(digest, transaction) {
      const refundDigest = checkDigest(transaction?.refundDigest, 'refundDigest')
      const txBytes = checkText(transaction.txBytes, 'txBytes', 262_144)
      const signature =
        transaction.signature === undefined
          ? null
          : checkText(transaction.signature, 'signature', 4096)
      const absentOr = [refundDigest]
      if (transaction.replaces !== undefined) {
        absentOr.push(checkDigest(transaction.replaces, 'replaces'))
      }
      return transition(digest, {
        operation: 'record the refund transaction',
        durable: true,
        from: ['refund_due'],
        to: 'refund_due',
        set: {
          state: 'refund_due',
          updated_at: now(),
          refund_tx_bytes: txBytes,
          refund_signature: signature,
          refund_digest: refundDigest,
        },
        guard: { column: 'refund_digest', absentOr },
      })
    },

    async refunded(digest, refundDigest) {
      checkDigest(refundDigest, 'refundDigest')
      const t = now()
      return transition(digest, {
        operation: 'mark refunded',
        from: ['refund_due'],
        to: 'refunded',
        set: { state: 'refunded', updated_at: t, refunded_at: t, refund_digest: refundDigest },
        guard: { column: 'refund_digest', absentOr: [refundDigest] },
      })
    },

    async get(digest) {
      const row = await engine.get(checkDigest(digest))
      return row === undefined ? undefined : toRecord(row)
    },

    async listRefundsDue(listOptions = {}) {
      const rows = await engine.list('refund_due', listLimit(listOptions.limit))
      return rows.map(toRecord)
    },

    async listPending(listOptions = {}) {
      const rows = await engine.list('pending', listLimit(listOptions.limit))
      return rows.map(toRecord)
    },

    async listLapsed(listOptions = {}) {
      return listLeased('settled', listOptions)
    },

    async listLapsedClaims(listOptions = {}) {
      return listLeased('claimed', listOptions)
    },

    async counts(): Promise<PaymentCounts> {
      const raw = await engine.counts()
      const counts = {} as Record<PaymentState, number>
      for (const state of paymentStates) counts[state] = raw[state] ?? 0
      return counts
    },

    async prune(pruneOptions = {}) {
      let cutoff: number
      if (pruneOptions.olderThan !== undefined) {
        cutoff = pruneOptions.olderThan.getTime()
        if (Number.isNaN(cutoff)) {
          throw storeError('The olderThan must be a valid Date.', { field: 'olderThan' })
        }
      } else if (retentionMs !== undefined) {
        cutoff = now() - retentionMs
      } else {
        return 0
      }
      return engine.prune(cutoff)
    },

    async close() {
      return engine.close()
    },
  }
}
