/**
 * A channel store in SQLite (see `channelStore.ts` for the rules, `channelTables.ts` for the
 * tables). Every operation is one atomic step — one immediate transaction, or one statement — and
 * the table's CHECK constraints hold the invariant itself (`spent + held ≤ highest ≤ deposit`), so
 * no interleaving of any number of processes spends more than the highest voucher.
 *
 * @module
 */
import type Database from 'better-sqlite3'
import type { SqliteDatabase } from '../stores/sqlite.js'
import {
  type ChannelRecord,
  type ChannelStore,
  checkStoredAmount,
  type HoldOutcome,
  type HoldRequest,
  type HoldResult,
  type SpendResult,
  type VoucherAcceptance,
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
    // Each step runs on the calling thread until its transaction is committed.
    writesInline: true,
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
