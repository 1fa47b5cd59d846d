/**
 * The tables of the SQL channel stores (`sqliteChannelStore.ts`, `postgresChannelStore.ts`) and
 * the SQL both share: the tables' names and their schema, a channel's record read from its row,
 * the refusals read from a channel as it is now, and the state update of `observe`. Three tables:
 * the channels, the holds of calls in flight and the voucher amounts accepted. The table's CHECK
 * constraints hold the invariant itself (`spent + held ≤ highest ≤ deposit`), so no interleaving of
 * any number of processes spends more than the highest voucher.
 *
 * @module
 * @internal
 */
import { quoteIdentifier } from '../stores/internal/sql.js'
import {
  type ChannelPhase,
  type ChannelRecord,
  type HoldResult,
  insufficient,
  type VoucherAcceptance,
} from './channelStore.js'

/** Table names of a channel store. */
export type ChannelTables = {
  /** Default `tollgate_channels`. */
  channels?: string | undefined
  /** Default `tollgate_channel_holds`. */
  holds?: string | undefined
  /** The voucher amounts accepted, one row each. Default `tollgate_channel_vouchers`. */
  vouchers?: string | undefined
}

/**
 * The quoted names of a store's tables, with their defaults.
 *
 * @internal
 */
export function names(tables: ChannelTables) {
  const channels = tables.channels ?? 'tollgate_channels'
  const holds = tables.holds ?? 'tollgate_channel_holds'
  const vouchers = tables.vouchers ?? 'tollgate_channel_vouchers'
  return {
    channels: quoteIdentifier(channels, 'channels table'),
    vouchers: quoteIdentifier(vouchers, 'vouchers table'),
    holds: quoteIdentifier(holds, 'holds table'),
  }
}

/**
 * The tables. The holds and the vouchers are keyed by their primary key alone: on SQLite `WITHOUT
 * ROWID`, so that a call writes one B-tree of each and not a table and its key's index. The holds
 * have no index on their lease: the table only keeps the calls in flight (and lapsed ones until the
 * next sweep), which `releaseLapsed` reads whole.
 *
 * @internal
 */
export function schema(
  t: ReturnType<typeof names>,
  bigint: string,
  withoutRowid: boolean,
): string[] {
  const keyed = withoutRowid ? ' WITHOUT ROWID' : ''
  return [
    `CREATE TABLE IF NOT EXISTS ${t.channels} (
  channel_id TEXT PRIMARY KEY,
  payer TEXT NOT NULL,
  payee TEXT NOT NULL,
  coin_type TEXT NOT NULL,
  signer TEXT NOT NULL,
  deposit ${bigint} NOT NULL,
  settled ${bigint} NOT NULL,
  highest ${bigint} NOT NULL DEFAULT 0,
  highest_signature TEXT NOT NULL DEFAULT '',
  spent ${bigint} NOT NULL DEFAULT 0,
  held ${bigint} NOT NULL DEFAULT 0,
  units ${bigint} NOT NULL DEFAULT 0,
  state TEXT NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'closing', 'closed')),
  CHECK (spent >= 0 AND held >= 0 AND spent + held <= highest AND highest <= deposit)
)`,
    `CREATE TABLE IF NOT EXISTS ${t.holds} (
  hold_id TEXT PRIMARY KEY,
  channel_id TEXT NOT NULL,
  amount ${bigint} NOT NULL,
  lease_until ${bigint} NOT NULL
)${keyed}`,
    `CREATE TABLE IF NOT EXISTS ${t.vouchers} (
  channel_id TEXT NOT NULL,
  amount ${bigint} NOT NULL,
  PRIMARY KEY (channel_id, amount)
)${keyed}`,
  ]
}

/**
 * A channel's record, read from its row.
 *
 * @internal
 */
export function recordOf(row: Record<string, unknown>): ChannelRecord {
  return {
    channelId: String(row.channel_id),
    payer: String(row.payer),
    payee: String(row.payee),
    coinType: String(row.coin_type),
    signer: String(row.signer),
    deposit: BigInt(row.deposit as bigint | string),
    settled: BigInt(row.settled as bigint | string),
    highest: BigInt(row.highest as bigint | string),
    highestSignature: String(row.highest_signature),
    spent: BigInt(row.spent as bigint | string),
    held: BigInt(row.held as bigint | string),
    units: BigInt(row.units as bigint | string),
    state: String(row.state) as ChannelPhase,
  }
}

/**
 * Why a voucher was not stored, read from the channel as it is now.
 *
 * @internal
 */
export function refusal(channel: ChannelRecord | undefined, cumulative: bigint): VoucherAcceptance {
  if (channel === undefined) return { status: 'unknown' }
  if (channel.state !== 'open') return { status: 'not_open', channel }
  if (cumulative > channel.deposit) return { status: 'over_deposit', channel }
  return { status: 'same', channel }
}

/**
 * Why a hold (or a spend) was not taken, read from the channel as it is now.
 *
 * @internal
 */
export function holdRefusal(
  channel: ChannelRecord | undefined,
  amount: bigint,
): Exclude<HoldResult, { status: 'held' }> {
  if (channel === undefined) return { status: 'unknown' }
  if (channel.state !== 'open') return { status: 'not_open', channel }
  return insufficient(channel, amount)
}

/**
 * The state update of `observe`: a channel never goes back to an earlier state.
 *
 * @internal
 */
export const laterStateSql = (param: string) =>
  `CASE WHEN ${param} IS NULL OR state = 'closed' THEN state WHEN ${param} = 'closed' THEN 'closed' WHEN state = 'closing' THEN 'closing' ELSE ${param} END`
