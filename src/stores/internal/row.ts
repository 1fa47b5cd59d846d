/**
 * The flat storage row shared by every backend (SQL columns, Redis hash fields, memory objects), and
 * its conversion to and from {@link PaymentRecord}.
 *
 * @module
 */
import type { PaymentErrorCode } from '../../errors.js'
import type { PaymentDialect, PaymentRecord, PaymentState } from '../types.js'

/** One stored payment, flat. Times are ms since the epoch; amounts are decimal strings. */
export type Row = {
  digest: string
  state: PaymentState
  resource: string
  dialect: PaymentDialect
  claimed_at: number
  updated_at: number
  lease_until: number | null
  payer: string | null
  amount: string | null
  network: string | null
  asset: string | null
  settled_at: number | null
  served_at: number | null
  rejection_code: string | null
  refund_reason: string | null
  refund_owed_at: number | null
  refund_tx_bytes: string | null
  refund_signature: string | null
  refund_digest: string | null
  refunded_at: number | null
}

/** A column of {@link Row}. */
export type Column = keyof Row

/** Every column, in table order. */
export const columns: readonly Column[] = [
  'digest',
  'state',
  'resource',
  'dialect',
  'claimed_at',
  'updated_at',
  'lease_until',
  'payer',
  'amount',
  'network',
  'asset',
  'settled_at',
  'served_at',
  'rejection_code',
  'refund_reason',
  'refund_owed_at',
  'refund_tx_bytes',
  'refund_signature',
  'refund_digest',
  'refunded_at',
]

const numeric = new Set<Column>([
  'claimed_at',
  'updated_at',
  'lease_until',
  'settled_at',
  'served_at',
  'refund_owed_at',
  'refunded_at',
])

/** Whether a column holds a time (ms since the epoch). */
export function isNumericColumn(column: Column): boolean {
  return numeric.has(column)
}

/**
 * Builds a {@link Row} from a backend's raw values (SQL numbers or strings, Redis strings; absent,
 * null or empty means null).
 */
export function rowFrom(raw: Readonly<Record<string, unknown>>): Row {
  const row: Record<string, unknown> = {}
  for (const column of columns) {
    const value = raw[column]
    if (value === undefined || value === null || value === '') row[column] = null
    else if (numeric.has(column)) row[column] = Number(value)
    else row[column] = String(value)
  }
  return row as Row
}

/** Builds a Row from a flat `[field, value, field, value, …]` list (Redis HGETALL in Lua). */
export function rowFromPairs(pairs: readonly unknown[]): Row {
  const raw: Record<string, unknown> = {}
  for (let i = 0; i + 1 < pairs.length; i += 2) raw[String(pairs[i])] = pairs[i + 1]
  return rowFrom(raw)
}

function date(ms: number | null): Date | undefined {
  return ms === null ? undefined : new Date(ms)
}

/** The public view of a stored row. */
export function toRecord(row: Row): PaymentRecord {
  const record: PaymentRecord = {
    digest: row.digest,
    state: row.state,
    resource: row.resource,
    dialect: row.dialect,
    claimedAt: new Date(row.claimed_at),
    updatedAt: new Date(row.updated_at),
  }
  if (row.lease_until !== null && (row.state === 'claimed' || row.state === 'settled')) {
    record.leaseUntil = new Date(row.lease_until)
  }
  if (row.payer !== null && row.amount !== null && row.settled_at !== null) {
    record.settlement = {
      payer: row.payer,
      amount: BigInt(row.amount),
      resource: row.resource,
      dialect: row.dialect,
      network: row.network ?? '',
      asset: row.asset ?? '',
      settledAt: new Date(row.settled_at),
    }
  }
  if (row.served_at !== null) record.servedAt = new Date(row.served_at)
  if (row.rejection_code !== null) {
    record.rejection = { code: row.rejection_code as PaymentErrorCode }
  }
  if (row.refund_reason !== null && row.refund_owed_at !== null) {
    record.refund = { reason: row.refund_reason, owedAt: new Date(row.refund_owed_at) }
    if (row.refund_tx_bytes !== null && row.refund_digest !== null) {
      record.refund.transaction = {
        txBytes: row.refund_tx_bytes,
        refundDigest: row.refund_digest,
        ...(row.refund_signature === null ? {} : { signature: row.refund_signature }),
      }
    }
    if (row.refunded_at !== null) {
      record.refund.refundedAt = date(row.refunded_at)
      if (row.refund_digest !== null) record.refund.refundDigest = row.refund_digest
    }
  }
  return record
}
