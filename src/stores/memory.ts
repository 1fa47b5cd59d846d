/**
 * The in-memory payment store: for tests and single-process demos. Nothing survives the process.
 *
 * @module
 */
import {
  type ClaimOutcome,
  createStore,
  finishedStates,
  type StoreEngine,
} from './internal/core.js'
import type { Row } from './internal/row.js'
import type { PaymentState, PaymentStore, StoreOptions } from './types.js'

/**
 * The backing data of a memory store. Pass the same object to a second store to simulate a restart
 * of a process whose storage survived.
 */
export type MemoryStoreData = {
  /** Stored rows by digest (opaque). */
  readonly rows: Map<string, unknown>
}

/** Options of {@link createMemoryStore}. */
export type MemoryStoreOptions = StoreOptions & {
  /** Existing backing data (see {@link MemoryStoreData}). Default: a new, empty one. */
  data?: MemoryStoreData | undefined
}

/** Creates empty backing data for {@link createMemoryStore}. */
export function createMemoryStoreData(): MemoryStoreData {
  return { rows: new Map() }
}

/**
 * Creates a payment store kept in this process's memory. Every operation is atomic within the
 * process (it never yields in the middle of a step). Not shared between processes; for production
 * use SQLite, Redis or PostgreSQL.
 *
 * @param options - leases, retention, clock, and optional shared {@link MemoryStoreData}.
 * @example
 * ```ts
 * import { createMemoryStore } from 'tollgate'
 * const store = createMemoryStore()
 * ```
 */
export function createMemoryStore(options: MemoryStoreOptions = {}): PaymentStore {
  const rows = (options.data ?? createMemoryStoreData()).rows as Map<string, Row>
  const copy = (row: Row): Row => ({ ...row })

  const engine: StoreEngine = {
    async claim(row, times): Promise<ClaimOutcome> {
      const existing = rows.get(row.digest)
      if (existing === undefined) {
        rows.set(row.digest, copy(row))
        return { status: 'claimed' }
      }
      const expired = existing.lease_until === null || existing.lease_until <= times.now
      if (existing.state === 'claimed' && expired) {
        Object.assign(existing, {
          resource: row.resource,
          dialect: row.dialect,
          claimed_at: times.now,
          updated_at: times.now,
          lease_until: times.claimUntil,
        })
        return { status: 'claimed' }
      }
      if (existing.state === 'settled' && expired && existing.resource === row.resource) {
        existing.lease_until = times.serveUntil
        return { status: 'settled_unserved', row: copy(existing) }
      }
      return { status: 'taken', row: copy(existing) }
    },

    async apply(digest, transition) {
      const row = rows.get(digest)
      if (row === undefined) return { status: 'missing' }
      if (!transition.from.includes(row.state)) {
        return { status: 'conflict', state: row.state, guard: false }
      }
      const guard = transition.guard
      if (guard !== undefined) {
        const value = row[guard.column]
        if (value !== null && !guard.absentOr.includes(String(value))) {
          return { status: 'conflict', state: row.state, guard: true }
        }
      }
      if (transition.to === null) {
        rows.delete(digest)
        return { status: 'ok', row: undefined }
      }
      Object.assign(row, transition.set, { state: transition.to })
      return { status: 'ok', row: copy(row) }
    },

    async get(digest) {
      const row = rows.get(digest)
      return row === undefined ? undefined : copy(row)
    },

    async list(state, limit) {
      const key = state === 'refund_due' ? 'refund_owed_at' : 'updated_at'
      return [...rows.values()]
        .filter((row) => row.state === state)
        .sort((a, b) => (a[key] ?? 0) - (b[key] ?? 0))
        .slice(0, limit)
        .map(copy)
    },

    async listLapsed(state, endedBy, limit) {
      const end = (row: Row) => row.lease_until ?? Number.POSITIVE_INFINITY
      return [...rows.values()]
        .filter(
          (row) => row.state === state && (row.lease_until === null || row.lease_until <= endedBy),
        )
        .sort((a, b) => end(a) - end(b) || (a.digest < b.digest ? -1 : 1))
        .slice(0, limit)
        .map(copy)
    },

    async counts() {
      const counts: Partial<Record<PaymentState, number>> = {}
      for (const row of rows.values()) counts[row.state] = (counts[row.state] ?? 0) + 1
      return counts
    },

    async prune(cutoff) {
      let deleted = 0
      for (const [digest, row] of rows) {
        if (finishedStates.includes(row.state) && row.updated_at < cutoff) {
          rows.delete(digest)
          deleted++
        }
      }
      return deleted
    },

    async close() {},
  }

  return createStore(engine, options)
}
