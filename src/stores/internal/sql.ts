/**
 * The SQL shared by the SQLite and PostgreSQL stores: one table, single-statement compare-and-set
 * transitions, and `INSERT … ON CONFLICT` claims. Only placeholders and integer casts differ.
 *
 * @module
 */
import { PaymentError } from '../../errors.js'
import type { PaymentState } from '../types.js'
import { paymentStates } from '../types.js'
import { type ClaimTimes, finishedStates, type LeasedState, type Transition } from './core.js'
import { type Column, columns, isNumericColumn, type Row } from './row.js'

/** How one SQL engine spells things. */
export type SqlDialect = {
  /** The placeholder of parameter `i` (1-based). */
  param(i: number): string
  /** The placeholder of parameter `i` when it must be read as a 64-bit integer. */
  intParam(i: number): string
  /** The 64-bit integer column type. */
  bigint: string
  /** The quoted, qualified table name. */
  table: string
  /** A bare name used to derive index names. */
  indexBase: string
}

/** A statement with its positional values. */
export type Query = { text: string; values: unknown[] }

const identifierPattern = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/

/** Checks a table or schema name (letters, digits, `_`; at most 63) and double-quotes it. */
export function quoteIdentifier(name: string, what: string): string {
  if (!identifierPattern.test(name)) {
    throw new PaymentError(
      'invalid_config',
      `The ${what} must be 1–63 letters, digits or "_", not starting with a digit.`,
      { details: { field: what } },
    )
  }
  return `"${name}"`
}

function inList(states: readonly PaymentState[]): string {
  return states.map((s) => `'${s}'`).join(', ')
}

/** The idempotent DDL of the payments table and its indexes. */
export function schemaStatements(d: SqlDialect): string[] {
  const b = d.bigint
  return [
    `CREATE TABLE IF NOT EXISTS ${d.table} (
  digest TEXT PRIMARY KEY,
  state TEXT NOT NULL CHECK (state IN (${inList(paymentStates)})),
  resource TEXT NOT NULL,
  dialect TEXT NOT NULL,
  claimed_at ${b} NOT NULL,
  updated_at ${b} NOT NULL,
  lease_until ${b},
  payer TEXT,
  amount TEXT,
  network TEXT,
  asset TEXT,
  settled_at ${b},
  served_at ${b},
  rejection_code TEXT,
  refund_reason TEXT,
  refund_owed_at ${b},
  refund_tx_bytes TEXT,
  refund_signature TEXT,
  refund_digest TEXT,
  refunded_at ${b}
)`,
    `CREATE INDEX IF NOT EXISTS "${d.indexBase}_state" ON ${d.table} (state)`,
    `CREATE INDEX IF NOT EXISTS "${d.indexBase}_refund_due" ON ${d.table} (refund_owed_at) WHERE state = 'refund_due'`,
    `CREATE INDEX IF NOT EXISTS "${d.indexBase}_pending" ON ${d.table} (updated_at) WHERE state = 'pending'`,
    `CREATE INDEX IF NOT EXISTS "${d.indexBase}_finished" ON ${d.table} (updated_at) WHERE state IN (${inList(finishedStates)})`,
    `CREATE INDEX IF NOT EXISTS "${d.indexBase}_settled" ON ${d.table} (lease_until) WHERE state = 'settled'`,
    `CREATE INDEX IF NOT EXISTS "${d.indexBase}_claimed" ON ${d.table} (lease_until) WHERE state = 'claimed'`,
  ]
}

/**
 * The atomic claim: insert, or take over an expired `claimed` lease, or hand a `settled` record for
 * the same resource with an expired lease to this caller. Returns the row when this caller won (state `claimed` or
 * `settled`), no row when the digest is taken.
 */
export function claimQuery(d: SqlDialect, row: Row, times: ClaimTimes): Query {
  const values: unknown[] = columns.map((c) => row[c])
  const p = (value: unknown, integer = false): string => {
    values.push(value)
    return integer ? d.intParam(values.length) : d.param(values.length)
  }
  const now = p(times.now, true)
  const claimUntil = p(times.claimUntil, true)
  const serveUntil = p(times.serveUntil, true)
  const own = (column: Column): string =>
    `${column} = CASE WHEN t.state = 'claimed' THEN excluded.${column} ELSE t.${column} END`
  const text = `INSERT INTO ${d.table} AS t (${columns.join(', ')})
VALUES (${columns.map((c, i) => (isNumericColumn(c) ? d.intParam(i + 1) : d.param(i + 1))).join(', ')})
ON CONFLICT (digest) DO UPDATE SET
  ${own('resource')},
  ${own('dialect')},
  ${own('claimed_at')},
  ${own('updated_at')},
  lease_until = CASE WHEN t.state = 'claimed' THEN ${claimUntil} ELSE ${serveUntil} END
WHERE (t.state = 'claimed' OR (t.state = 'settled' AND t.resource = excluded.resource))
  AND (t.lease_until IS NULL OR t.lease_until <= ${now})
RETURNING *`
  return { text, values }
}

/**
 * Inserts a new claim, or nothing when the digest is known (no row lock is taken on conflict). With
 * `orCurrent`, the same statement also returns the current record when it was already there (column
 * `won` = 1 for the inserted row, 0 for the current one; PostgreSQL only: a data-modifying CTE).
 */
export function insertQuery(d: SqlDialect, row: Row, orCurrent: boolean): Query {
  const values: unknown[] = columns.map((c) => row[c])
  const insert = `INSERT INTO ${d.table} (${columns.join(', ')})
VALUES (${columns.map((c, i) => (isNumericColumn(c) ? d.intParam(i + 1) : d.param(i + 1))).join(', ')})
ON CONFLICT (digest) DO NOTHING
RETURNING *`
  if (!orCurrent) return { text: insert, values }
  return {
    text: `WITH attempt AS (${insert})
SELECT 1 AS won, * FROM attempt
UNION ALL
SELECT 0 AS won, * FROM ${d.table} WHERE digest = ${d.param(1)} AND NOT EXISTS (SELECT 1 FROM attempt)`,
    values,
  }
}

/**
 * Whether a record may be claimed now by a claim for `resource`: a `claimed` record, or a `settled`
 * one for the same resource, whose lease ran out.
 */
export function isClaimable(row: Row, resource: string, now: number): boolean {
  return (
    (row.state === 'claimed' || (row.state === 'settled' && row.resource === resource)) &&
    (row.lease_until === null || row.lease_until <= now)
  )
}

/**
 * Takes over an expired lease as one compare-and-set: a `claimed` record is claimed afresh, a
 * `settled` one for the same resource is handed to this caller to serve. Returns the row when this caller won.
 */
export function takeOverQuery(d: SqlDialect, row: Row, times: ClaimTimes): Query {
  const values: unknown[] = [row.digest, row.resource, row.dialect]
  const p = (value: unknown, integer = false): string => {
    values.push(value)
    return integer ? d.intParam(values.length) : d.param(values.length)
  }
  const now = p(times.now, true)
  const claimUntil = p(times.claimUntil, true)
  const serveUntil = p(times.serveUntil, true)
  const own = (column: string, value: string): string =>
    `${column} = CASE WHEN state = 'claimed' THEN ${value} ELSE ${column} END`
  return {
    text: `UPDATE ${d.table} SET
  ${own('resource', d.param(2))},
  ${own('dialect', d.param(3))},
  ${own('claimed_at', now)},
  ${own('updated_at', now)},
  lease_until = CASE WHEN state = 'claimed' THEN ${claimUntil} ELSE ${serveUntil} END
WHERE digest = ${d.param(1)}
  AND (state = 'claimed' OR (state = 'settled' AND resource = ${d.param(2)}))
  AND (lease_until IS NULL OR lease_until <= ${now})
RETURNING *`,
    values,
  }
}

/** The record of one digest. */
export function selectQuery(d: SqlDialect, digest: string): Query {
  return { text: `SELECT * FROM ${d.table} WHERE digest = ${d.param(1)}`, values: [digest] }
}

/** A transition as one compare-and-set statement (UPDATE or DELETE … WHERE state IN … RETURNING). */
export function applyQuery(d: SqlDialect, digest: string, transition: Transition): Query {
  const values: unknown[] = [digest]
  const p = (value: unknown): string => {
    values.push(value)
    return d.param(values.length)
  }
  let where = `digest = ${d.param(1)} AND state IN (${inList(transition.from)})`
  const guard = transition.guard
  if (guard !== undefined) {
    where +=
      guard.absentOr.length === 0
        ? ` AND ${guard.column} IS NULL`
        : ` AND (${guard.column} IS NULL OR ${guard.column} IN (${guard.absentOr.map(p).join(', ')}))`
  }
  if (transition.to === null) {
    return { text: `DELETE FROM ${d.table} WHERE ${where} RETURNING digest`, values }
  }
  const set = Object.entries({ ...transition.set, state: transition.to })
    .map(([column, value]) => `${column} = ${p(value)}`)
    .join(', ')
  return { text: `UPDATE ${d.table} SET ${set} WHERE ${where} RETURNING *`, values }
}

/** Records in `state`, oldest first. */
export function listQuery(d: SqlDialect, state: 'refund_due' | 'pending', limit: number): Query {
  const order = state === 'refund_due' ? 'refund_owed_at' : 'updated_at'
  return {
    text: `SELECT * FROM ${d.table} WHERE state = '${state}' ORDER BY ${order}, digest LIMIT ${d.intParam(1)}`,
    values: [limit],
  }
}

/**
 * Records in `state` (`settled` or `claimed`) whose lease ended by `endedBy` (or that have none),
 * earliest lease first.
 */
export function lapsedQuery(
  d: SqlDialect,
  state: LeasedState,
  endedBy: number,
  limit: number,
): Query {
  return {
    text: `SELECT * FROM ${d.table} WHERE state = ${state === 'claimed' ? "'claimed'" : "'settled'"} AND (lease_until IS NULL OR lease_until <= ${d.intParam(1)}) ORDER BY lease_until IS NULL, lease_until, digest LIMIT ${d.intParam(2)}`,
    values: [endedBy, limit],
  }
}

/** Number of records per state. */
export function countsQuery(d: SqlDialect): Query {
  return {
    text: `SELECT state, COUNT(*) AS n FROM ${d.table} GROUP BY state`,
    values: [],
  }
}

/** Deletes finished records older than the cutoff. */
export function pruneQuery(d: SqlDialect, cutoff: number): Query {
  return {
    text: `DELETE FROM ${d.table} WHERE state IN (${inList(finishedStates)}) AND updated_at < ${d.intParam(1)}`,
    values: [cutoff],
  }
}

/** Classifies a transition that matched no row, from the record as it is now. */
export function classifyMiss(
  row: Row | undefined,
  transition: Transition,
): { status: 'missing' } | { status: 'conflict'; state: PaymentState; guard: boolean } {
  if (row === undefined) return { status: 'missing' }
  return {
    status: 'conflict',
    state: row.state,
    // The state allowed it, so the guard refused it (without a guard: the record changed between
    // the compare-and-set and this read, a plain conflict).
    guard: transition.guard !== undefined && transition.from.includes(row.state),
  }
}
