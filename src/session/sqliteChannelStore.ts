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
  checkPart,
  checkStoredAmount,
  type HoldOutcome,
  type HoldPart,
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
  // Each text built once: a call's steps look their statements up by it.
  const sql = {
    select: `SELECT * FROM ${t.channels} WHERE channel_id = ?`,
    hold: `UPDATE ${t.channels} SET held = held + @amount WHERE channel_id = @id AND state = 'open' AND highest - spent - held >= @amount RETURNING *`,
    insertHold: `INSERT INTO ${t.holds} (hold_id, channel_id, amount, lease_until) VALUES (?, ?, ?, ?)`,
    // A hold that covers what is committed of it (the whole of it: 0).
    deleteHold: `DELETE FROM ${t.holds} WHERE hold_id = ? AND amount >= ? RETURNING channel_id, amount`,
    release: `UPDATE ${t.channels} SET held = held - @amount WHERE channel_id = @id`,
    commit: `UPDATE ${t.channels} SET held = held - @amount, spent = spent + @spend, units = units + @units WHERE channel_id = @id RETURNING *`,
    // A voucher's amount recorded only on an open channel whose deposit covers it.
    insertVoucher: `INSERT INTO ${t.vouchers} (channel_id, amount) SELECT @id, @cumulative FROM ${t.channels} WHERE channel_id = @id AND state = 'open' AND deposit >= @cumulative ON CONFLICT DO NOTHING`,
    raise: `UPDATE ${t.channels} SET highest = @cumulative, highest_signature = @signature WHERE channel_id = @id AND @cumulative > highest RETURNING *`,
    // The raise and the call's hold in one statement, when the headroom after the raise covers it.
    raiseAndHold: `UPDATE ${t.channels} SET highest = max(highest, @cumulative), highest_signature = CASE WHEN @cumulative > highest THEN @signature ELSE highest_signature END, held = held + @amount WHERE channel_id = @id AND max(highest, @cumulative) - spent - held >= @amount RETURNING *`,
  }
  const select = (channelId: string) => {
    const row = one(sql.select, channelId)
    return row === undefined ? undefined : recordOf(row)
  }
  const insertHold = (channelId: string, hold: HoldRequest) =>
    statement(sql.insertHold).run(hold.holdId, channelId, hold.amount, BigInt(hold.leaseUntil))
  /** Holds `hold.amount` of the channel's headroom; run inside a transaction. */
  const holdIn = (channelId: string, hold: HoldRequest): HoldResult => {
    const row = one(sql.hold, { amount: hold.amount, id: channelId })
    if (row === undefined) return holdRefusal(select(channelId), hold.amount)
    insertHold(channelId, hold)
    return { status: 'held', holdId: hold.holdId, channel: recordOf(row) }
  }
  const holdStep = db.transaction(holdIn)
  /**
   * Gives a hold back, with `spend` of it (the whole of it: `true`) moved into `spent`: the channel
   * after a commit, `true` after a release, undefined when the hold is gone or holds less.
   */
  const drop = db.transaction(
    (holdId: string, spend: HoldPart | boolean): ChannelRecord | true | undefined => {
      const hold = one(sql.deleteHold, holdId, typeof spend === 'boolean' ? 0n : spend.amount)
      if (hold === undefined) return undefined
      const id = hold.channel_id
      if (spend === false) {
        statement(sql.release).run({ amount: hold.amount, id })
        return true
      }
      const [amount, units] = spend === true ? [hold.amount, 1n] : [spend.amount, spend.units]
      return recordOf(
        one(sql.commit, { amount: hold.amount, spend: amount, units, id }) as Record<
          string,
          unknown
        >,
      )
    },
  )
  const accept = db.transaction(
    (
      channelId: string,
      cumulative: bigint,
      signature: string,
      hold: HoldRequest | undefined,
    ): VoucherAcceptance => {
      const id = channelId
      if (statement(sql.insertVoucher).run({ id, cumulative }).changes === 0) {
        // Not recorded: the channel is unknown, not open or too small for it, or the amount was
        // used before.
        const channel = select(channelId)
        if (channel?.state !== 'open' || cumulative > channel.deposit) {
          return refusal(channel, cumulative)
        }
        return { status: 'same', channel }
      }
      if (hold !== undefined) {
        const both = one(sql.raiseAndHold, { id, cumulative, signature, amount: hold.amount })
        if (both !== undefined) {
          insertHold(channelId, hold)
          const channel = recordOf(both)
          return {
            status: 'accepted',
            channel,
            hold: { status: 'held', holdId: hold.holdId, channel },
          }
        }
      }
      const row = one(sql.raise, { cumulative, signature, id })
      const raised = row ?? one(sql.select, channelId)
      if (raised === undefined) throw new Error('a recorded voucher has its channel')
      if (hold === undefined) return { status: 'accepted', channel: recordOf(raised) }
      // The channel is open and tracked (read in this transaction): its headroom is short.
      const refused = holdRefusal(recordOf(raised), hold.amount) as HoldOutcome
      return { status: 'accepted', channel: refused.channel, hold: refused }
    },
  )
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
      return accept.immediate(channelId, cumulative, signature, hold)
    },
    async hold(channelId, amount, holdId, leaseUntil) {
      checkStoredAmount(amount, 'price')
      return holdStep.immediate(channelId, { amount, holdId, leaseUntil })
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
      return drop.immediate(holdId, true) !== undefined
    },
    async settleHold(holdId, part) {
      checkPart(part)
      const settled = drop.immediate(holdId, part)
      return settled === true ? undefined : settled
    },
    async release(holdId) {
      return drop.immediate(holdId, false) !== undefined
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
