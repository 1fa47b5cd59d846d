/**
 * A channel store in PostgreSQL (see `channelStore.ts` for the rules, `channelTables.ts` for the
 * tables). Every operation is one atomic step — one statement (data-modifying `WITH`) — and the
 * table's CHECK constraints hold the invariant itself (`spent + held ≤ highest ≤ deposit`), so no
 * interleaving of any number of processes spends more than the highest voucher. When the pool can
 * lend a connection, a channel's writes are committed in batches (`channelBatches.ts`).
 *
 * @module
 */
import type pg from 'pg'
import { createChannelBatches, type Merge, prepared } from './channelBatches.js'
import {
  type ChannelRecord,
  type ChannelStore,
  checkPart,
  checkStoredAmount,
  type HoldOutcome,
  type HoldPart,
  insufficient,
  type SpendResult,
} from './channelStore.js'
import {
  type ChannelTables,
  holdRefusal,
  laterStateSql,
  names,
  recordOf,
  refusal,
  schema,
} from './channelTables.js'

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
  /**
   * Gives a hold back, with `spend` of it (the whole of it: `true`) moved into `spent`: the row the
   * step left (only its id for a whole hold), undefined when the hold is gone or holds less.
   */
  const drop = async (holdId: string, spend: HoldPart | boolean) => {
    const channelId = holdChannels.get(holdId)
    const [row] =
      typeof spend === 'boolean'
        ? await write(
            channelId,
            `WITH d AS (DELETE FROM ${t.holds} WHERE hold_id = $1 RETURNING channel_id, amount)
UPDATE ${t.channels} c SET held = c.held - d.amount${spend ? ', spent = c.spent + d.amount, units = c.units + 1' : ''}
FROM d WHERE c.channel_id = d.channel_id RETURNING c.channel_id`,
            [holdId],
          )
        : await write(
            channelId,
            `WITH d AS (DELETE FROM ${t.holds} WHERE hold_id = $1 AND amount >= $2::bigint RETURNING channel_id, amount)
UPDATE ${t.channels} c SET held = c.held - d.amount, spent = c.spent + $2::bigint, units = c.units + $3::bigint
FROM d WHERE c.channel_id = d.channel_id RETURNING c.*`,
            [holdId, spend.amount.toString(), spend.units.toString()],
          )
    // Kept while the hold is: a part larger than the hold changed nothing.
    if (row !== undefined) holdChannels.delete(holdId)
    return row
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
    commit: async (holdId) => (await drop(holdId, true)) !== undefined,
    async settleHold(holdId, part) {
      checkPart(part)
      const row = await drop(holdId, part)
      return row === undefined ? undefined : recordOf(row)
    },
    release: async (holdId) => (await drop(holdId, false)) !== undefined,
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
