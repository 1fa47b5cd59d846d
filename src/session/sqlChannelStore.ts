/**
 * Channel stores in SQLite and PostgreSQL (see `channelStore.ts` for the rules). Two tables: the
 * channels, and the holds of calls in flight. Every operation is one atomic step — one statement on
 * PostgreSQL (data-modifying `WITH`), one immediate transaction on SQLite — and the table's CHECK
 * constraints hold the invariant itself (`spent + held ≤ highest ≤ deposit`), so no interleaving of
 * any number of processes spends more than the highest voucher.
 *
 * @module
 */
import type Database from 'better-sqlite3'
import type pg from 'pg'
import { quoteIdentifier } from '../stores/internal/sql.js'
import type { SqliteDatabase } from '../stores/sqlite.js'
import { createChannelBatches, type Merge, prepared } from './channelBatches.js'
import {
  type ChannelPhase,
  type ChannelRecord,
  type ChannelStore,
  checkStoredAmount,
  type HoldOutcome,
  type HoldRequest,
  type HoldResult,
  insufficient,
  type SpendResult,
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

function names(tables: ChannelTables) {
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
 */
function schema(t: ReturnType<typeof names>, bigint: string, withoutRowid: boolean): string[] {
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

function recordOf(row: Record<string, unknown>): ChannelRecord {
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

/** Why a voucher was not stored, read from the channel as it is now. */
function refusal(channel: ChannelRecord | undefined, cumulative: bigint): VoucherAcceptance {
  if (channel === undefined) return { status: 'unknown' }
  if (channel.state !== 'open') return { status: 'not_open', channel }
  if (cumulative > channel.deposit) return { status: 'over_deposit', channel }
  return { status: 'same', channel }
}

function holdRefusal(
  channel: ChannelRecord | undefined,
  amount: bigint,
): Exclude<HoldResult, { status: 'held' }> {
  if (channel === undefined) return { status: 'unknown' }
  if (channel.state !== 'open') return { status: 'not_open', channel }
  return insufficient(channel, amount)
}

/** The state update of `observe`: a channel never goes back to an earlier state. */
const laterStateSql = (param: string) =>
  `CASE WHEN ${param} IS NULL OR state = 'closed' THEN state WHEN ${param} = 'closed' THEN 'closed' WHEN state = 'closing' THEN 'closing' ELSE ${param} END`

/** Options of {@link createSqliteChannelStore}. */
export type SqliteChannelStoreOptions = ChannelTables & {
  /** An open better-sqlite3 database (`openSqliteDatabase` from `tollgate/stores/sqlite`). */
  database: SqliteDatabase
}

/** A channel store in a SQLite database (left open by `close()`). */
export function createSqliteChannelStore(options: SqliteChannelStoreOptions): ChannelStore {
  const db = options.database as Database.Database
  const t = names(options)
  db.transaction(() => {
    for (const statement of schema(t, 'INTEGER', true)) db.exec(statement)
  }).immediate()
  const prepared = new Map<string, Database.Statement>()
  const statement = (text: string) => {
    let found = prepared.get(text)
    if (found === undefined) {
      found = db.prepare(text).safeIntegers(true)
      prepared.set(text, found)
    }
    return found
  }
  const one = (text: string, ...values: unknown[]) =>
    statement(text).get(...values) as Record<string, unknown> | undefined
  const select = (channelId: string) => {
    const row = one(`SELECT * FROM ${t.channels} WHERE channel_id = ?`, channelId)
    return row === undefined ? undefined : recordOf(row)
  }
  /** Holds `hold.amount` of the channel's headroom; run inside a transaction. */
  const holdIn = (channelId: string, hold: HoldRequest): HoldResult => {
    const row = one(
      `UPDATE ${t.channels} SET held = held + @amount WHERE channel_id = @id AND state = 'open' AND highest - spent - held >= @amount RETURNING *`,
      { amount: hold.amount, id: channelId },
    )
    if (row === undefined) return holdRefusal(select(channelId), hold.amount)
    statement(
      `INSERT INTO ${t.holds} (hold_id, channel_id, amount, lease_until) VALUES (?, ?, ?, ?)`,
    ).run(hold.holdId, channelId, hold.amount, BigInt(hold.leaseUntil))
    return { status: 'held', holdId: hold.holdId, channel: recordOf(row) }
  }
  const drop = (holdId: string, spend: boolean) =>
    db
      .transaction(() => {
        const hold = one(
          `DELETE FROM ${t.holds} WHERE hold_id = ? RETURNING channel_id, amount`,
          holdId,
        )
        if (hold === undefined) return false
        statement(
          `UPDATE ${t.channels} SET held = held - @amount${spend ? ', spent = spent + @amount, units = units + 1' : ''} WHERE channel_id = @id`,
        ).run({ amount: hold.amount, id: hold.channel_id })
        return true
      })
      .immediate()
  return {
    async track(opened) {
      checkStoredAmount(opened.deposit, 'deposit')
      checkStoredAmount(opened.settled, 'settled amount')
      statement(
        `INSERT INTO ${t.channels} (channel_id, payer, payee, coin_type, signer, deposit, settled) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (channel_id) DO NOTHING`,
      ).run(
        opened.channelId,
        opened.payer,
        opened.payee,
        opened.coinType,
        opened.signer,
        opened.deposit,
        opened.settled,
      )
      return select(opened.channelId) as ChannelRecord
    },
    async get(channelId) {
      return select(channelId)
    },
    async list(state) {
      return (
        statement(`SELECT * FROM ${t.channels} WHERE state = ?`).all(state) as Record<
          string,
          unknown
        >[]
      ).map(recordOf)
    },
    async acceptVoucher(channelId, cumulative, signature, hold) {
      checkStoredAmount(cumulative, 'voucher amount')
      if (hold !== undefined) checkStoredAmount(hold.amount, 'price')
      return db
        .transaction((): VoucherAcceptance => {
          const channel = select(channelId)
          if (channel?.state !== 'open' || cumulative > channel.deposit) {
            return refusal(channel, cumulative)
          }
          const inserted = statement(
            `INSERT INTO ${t.vouchers} (channel_id, amount) VALUES (?, ?) ON CONFLICT DO NOTHING`,
          ).run(channelId, cumulative)
          if (inserted.changes === 0) return { status: 'same', channel }
          const row = one(
            `UPDATE ${t.channels} SET highest = @cumulative, highest_signature = @signature WHERE channel_id = @id AND @cumulative > highest RETURNING *`,
            { cumulative, signature, id: channelId },
          )
          const raised = row === undefined ? channel : recordOf(row)
          if (hold === undefined) return { status: 'accepted', channel: raised }
          // The channel is open and tracked (just read in this transaction): held or insufficient.
          const held = holdIn(channelId, hold) as HoldOutcome
          return { status: 'accepted', channel: held.channel, hold: held }
        })
        .immediate()
    },
    async hold(channelId, amount, holdId, leaseUntil) {
      checkStoredAmount(amount, 'price')
      return db.transaction(() => holdIn(channelId, { amount, holdId, leaseUntil })).immediate()
    },
    async spend(channelId, amount): Promise<SpendResult> {
      checkStoredAmount(amount, 'price')
      // One statement: atomic on its own.
      const row = one(
        `UPDATE ${t.channels} SET spent = spent + @amount, units = units + 1 WHERE channel_id = @id AND state = 'open' AND highest - spent - held >= @amount RETURNING *`,
        { amount, id: channelId },
      )
      if (row === undefined) return holdRefusal(select(channelId), amount)
      return { status: 'spent', channel: recordOf(row) }
    },
    async commit(holdId) {
      return drop(holdId, true)
    },
    async release(holdId) {
      return drop(holdId, false)
    },
    async releaseLapsed(now) {
      return db
        .transaction(() => {
          const lapsed = statement(
            `DELETE FROM ${t.holds} WHERE lease_until < ? RETURNING channel_id, amount`,
          ).all(BigInt(now)) as { channel_id: string; amount: bigint }[]
          const update = statement(`UPDATE ${t.channels} SET held = held - ? WHERE channel_id = ?`)
          for (const hold of lapsed) update.run(hold.amount, hold.channel_id)
          return lapsed.length
        })
        .immediate()
    },
    async observe(channelId, facts) {
      if (facts.deposit !== undefined) checkStoredAmount(facts.deposit, 'deposit')
      if (facts.settled !== undefined) checkStoredAmount(facts.settled, 'settled amount')
      const row = one(
        `UPDATE ${t.channels} SET deposit = max(deposit, coalesce(@deposit, deposit)), settled = max(settled, coalesce(@settled, settled)), state = ${laterStateSql('@state')} WHERE channel_id = @id RETURNING *`,
        {
          deposit: facts.deposit ?? null,
          settled: facts.settled ?? null,
          state: facts.state ?? null,
          id: channelId,
        },
      )
      return row === undefined ? undefined : recordOf(row)
    },
    async close() {},
  }
}

/** Options of {@link createPostgresChannelStore}. */
export type PostgresChannelStoreOptions = ChannelTables & {
  /**
   * A `pg` pool (or anything with its `query`); left open by `close()`. With its `connect` too, the
   * writes that arrive on a channel while one runs are committed together (`channelBatches.ts`);
   * a pool made with `pipeline: true` sends each such batch in one round trip.
   */
  pool: Pick<pg.Pool, 'query'> & Partial<Pick<pg.Pool, 'connect'>>
}

/**
 * A channel store in PostgreSQL; the tables are created on first use. A channel's writes that
 * arrive while one is running are committed together, in one transaction (group commit per
 * channel), when the pool can lend a connection. Its statements are prepared (planned once per
 * connection).
 *
 * @example
 * ```ts
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, pipeline: true })
 * const store = createPostgresChannelStore({ pool })
 * ```
 */
export function createPostgresChannelStore(options: PostgresChannelStoreOptions): ChannelStore {
  const t = names(options)
  const db = options.pool
  const connect = db.connect?.bind(db)
  const batches =
    connect === undefined ? undefined : createChannelBatches({ query: db.query.bind(db), connect })
  /** The channel of each hold taken by this process, so that its commit joins the channel's batch. */
  const holdChannels = new Map<string, string>()
  const heldBy = (holdId: string, channelId: string) => {
    if (holdChannels.size >= 100_000) {
      holdChannels.delete(holdChannels.keys().next().value as string)
    }
    holdChannels.set(holdId, channelId)
  }
  let ready: Promise<void> | undefined
  const migrated = () => {
    ready ??= (async () => {
      for (const statement of schema(t, 'BIGINT', false)) await db.query(statement)
    })().catch((error: unknown) => {
      ready = undefined
      throw error
    })
    return ready
  }
  const rows = async (text: string, values: unknown[]) => {
    await migrated()
    return (await db.query(prepared({ text, values }))).rows as Record<string, unknown>[]
  }
  /** A write to one channel: in its batch when there are batches. */
  const write = async (
    channelId: string | undefined,
    text: string,
    values: unknown[],
    merge?: Merge,
  ) => {
    if (batches === undefined || channelId === undefined) return rows(text, values)
    await migrated()
    return batches(channelId, { text, values, merge })
  }
  /**
   * `count` units of `amount` spent at once, as if one after another: the first `k` that the
   * headroom covers are spent (`k` at most `count`), the rest refused. Each spent one is answered
   * the channel as it was after it.
   */
  const spends = (channelId: string, amount: bigint): Merge => ({
    key: `spend ${amount}`,
    statement: (count) => ({
      text: `WITH c AS (SELECT channel_id, LEAST($3::bigint, (highest - spent - held) / $1::bigint) AS k FROM ${t.channels} WHERE channel_id = $2 AND state = 'open' FOR UPDATE)
UPDATE ${t.channels} ch SET spent = ch.spent + c.k * $1::bigint, units = ch.units + c.k FROM c WHERE ch.channel_id = c.channel_id AND c.k > 0 RETURNING ch.*, c.k AS taken`,
      values: [amount.toString(), channelId, String(count)],
    }),
    split(rows, count) {
      const [row] = rows
      const taken = row === undefined ? 0 : Number(row.taken)
      return Array.from({ length: count }, (_, i) => {
        if (row === undefined || i >= taken) return []
        const after = BigInt(taken - 1 - i)
        const { taken: _taken, ...channel } = row
        return [
          {
            ...channel,
            spent: (BigInt(String(row.spent)) - after * amount).toString(),
            units: (BigInt(String(row.units)) - after).toString(),
          },
        ]
      })
    },
  })
  const select = async (channelId: string) => {
    const [row] = await rows(`SELECT * FROM ${t.channels} WHERE channel_id = $1`, [channelId])
    return row === undefined ? undefined : recordOf(row)
  }
  const drop = async (holdId: string, spend: boolean) => {
    const channelId = holdChannels.get(holdId)
    holdChannels.delete(holdId)
    const [row] = await write(
      channelId,
      `WITH d AS (DELETE FROM ${t.holds} WHERE hold_id = $1 RETURNING channel_id, amount)
UPDATE ${t.channels} c SET held = c.held - d.amount${spend ? ', spent = c.spent + d.amount, units = c.units + 1' : ''}
FROM d WHERE c.channel_id = d.channel_id RETURNING c.channel_id`,
      [holdId],
    )
    return row !== undefined
  }
  return {
    async track(opened) {
      checkStoredAmount(opened.deposit, 'deposit')
      checkStoredAmount(opened.settled, 'settled amount')
      await rows(
        `INSERT INTO ${t.channels} (channel_id, payer, payee, coin_type, signer, deposit, settled) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (channel_id) DO NOTHING`,
        [
          opened.channelId,
          opened.payer,
          opened.payee,
          opened.coinType,
          opened.signer,
          opened.deposit.toString(),
          opened.settled.toString(),
        ],
      )
      return (await select(opened.channelId)) as ChannelRecord
    },
    get: select,
    async list(state) {
      return (await rows(`SELECT * FROM ${t.channels} WHERE state = $1`, [state])).map(recordOf)
    },
    async acceptVoucher(channelId, cumulative, signature, hold) {
      checkStoredAmount(cumulative, 'voucher amount')
      if (hold !== undefined) checkStoredAmount(hold.amount, 'price')
      // One statement: the channel's row is locked (`c`, only when open and the amount within its
      // deposit); the amount is claimed once, in any process (`ins`); the highest is raised when
      // the amount is above it and, with a hold asked, the hold is taken out of the headroom the
      // voucher leaves (`up`, `h`); the channel's row comes back — updated, as locked, or as it
      // is when the voucher was refused.
      const [row] = await write(
        channelId,
        `WITH c AS (SELECT * FROM ${t.channels} WHERE channel_id = $3 AND state = 'open' AND $1::bigint <= deposit FOR UPDATE),
ins AS (INSERT INTO ${t.vouchers} (channel_id, amount) SELECT channel_id, $1::bigint FROM c ON CONFLICT DO NOTHING RETURNING channel_id),
take AS (SELECT c.channel_id, ($4::bigint IS NOT NULL AND GREATEST(c.highest, $1::bigint) - c.spent - c.held >= $4::bigint) AS took FROM c JOIN ins ON ins.channel_id = c.channel_id),
up AS (UPDATE ${t.channels} ch SET highest = GREATEST(ch.highest, $1::bigint), highest_signature = CASE WHEN $1::bigint > ch.highest THEN $2 ELSE ch.highest_signature END, held = ch.held + CASE WHEN take.took THEN $4::bigint ELSE 0 END FROM take WHERE ch.channel_id = take.channel_id AND ($1::bigint > ch.highest OR take.took) RETURNING ch.*, take.took),
h AS (INSERT INTO ${t.holds} (hold_id, channel_id, amount, lease_until) SELECT $5, channel_id, $4::bigint, $6::bigint FROM up WHERE took)
SELECT (SELECT count(*) FROM ins) AS inserted, up.* FROM up
UNION ALL SELECT (SELECT count(*) FROM ins) AS inserted, c.*, false AS took FROM c WHERE NOT EXISTS (SELECT 1 FROM up)
UNION ALL SELECT 0 AS inserted, ch.*, false AS took FROM ${t.channels} ch WHERE ch.channel_id = $3 AND NOT EXISTS (SELECT 1 FROM c)`,
        [
          cumulative.toString(),
          signature,
          channelId,
          hold?.amount.toString() ?? null,
          hold?.holdId ?? null,
          hold === undefined ? null : String(hold.leaseUntil),
        ],
      )
      const channel = row === undefined ? undefined : recordOf(row)
      if (Number(row?.inserted ?? 0) === 0 || channel === undefined) {
        return refusal(channel, cumulative)
      }
      if (hold === undefined) return { status: 'accepted', channel }
      if (row?.took === true) heldBy(hold.holdId, channelId)
      const held: HoldOutcome =
        row?.took === true
          ? { status: 'held', holdId: hold.holdId, channel }
          : insufficient(channel, hold.amount)
      return { status: 'accepted', channel, hold: held }
    },
    async hold(channelId, amount, holdId, leaseUntil) {
      checkStoredAmount(amount, 'price')
      const [row] = await write(
        channelId,
        `WITH up AS (UPDATE ${t.channels} SET held = held + $1::bigint WHERE channel_id = $2 AND state = 'open' AND highest - spent - held >= $1::bigint RETURNING *),
ins AS (INSERT INTO ${t.holds} (hold_id, channel_id, amount, lease_until) SELECT $3, channel_id, $1::bigint, $4::bigint FROM up)
SELECT * FROM up`,
        [amount.toString(), channelId, holdId, String(leaseUntil)],
      )
      if (row === undefined) return holdRefusal(await select(channelId), amount)
      heldBy(holdId, channelId)
      return { status: 'held', holdId, channel: recordOf(row) }
    },
    async spend(channelId, amount): Promise<SpendResult> {
      checkStoredAmount(amount, 'price')
      const [row] = await write(
        channelId,
        `UPDATE ${t.channels} SET spent = spent + $1::bigint, units = units + 1 WHERE channel_id = $2 AND state = 'open' AND highest - spent - held >= $1::bigint RETURNING *`,
        [amount.toString(), channelId],
        // Units of no price are not merged: the merged statement divides by the price.
        amount > 0n ? spends(channelId, amount) : undefined,
      )
      return row === undefined
        ? holdRefusal(await select(channelId), amount)
        : { status: 'spent', channel: recordOf(row) }
    },
    commit: (holdId) => drop(holdId, true),
    release: (holdId) => drop(holdId, false),
    async releaseLapsed(now) {
      const [row] = await rows(
        `WITH d AS (DELETE FROM ${t.holds} WHERE lease_until < $1::bigint RETURNING channel_id, amount),
s AS (SELECT channel_id, SUM(amount) AS amount FROM d GROUP BY channel_id),
u AS (UPDATE ${t.channels} c SET held = c.held - s.amount FROM s WHERE c.channel_id = s.channel_id RETURNING 1)
SELECT count(*)::int AS n FROM d`,
        [String(now)],
      )
      return Number(row?.n ?? 0)
    },
    async observe(channelId, facts) {
      if (facts.deposit !== undefined) checkStoredAmount(facts.deposit, 'deposit')
      if (facts.settled !== undefined) checkStoredAmount(facts.settled, 'settled amount')
      const [row] = await rows(
        `UPDATE ${t.channels} SET deposit = GREATEST(deposit, coalesce($1::bigint, deposit)), settled = GREATEST(settled, coalesce($2::bigint, settled)), state = ${laterStateSql('$3::text')} WHERE channel_id = $4 RETURNING *`,
        [
          facts.deposit?.toString() ?? null,
          facts.settled?.toString() ?? null,
          facts.state ?? null,
          channelId,
        ],
      )
      return row === undefined ? undefined : recordOf(row)
    },
    async close() {},
  }
}
