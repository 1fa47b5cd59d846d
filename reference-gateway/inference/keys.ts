/**
 * API keys and their USDC credit, in the gateway's relational store (Kysely, SQLite or PostgreSQL).
 *
 * - A key is `tg_` and 43 base64url characters (256 random bits). Only its SHA-256 is stored; the key
 *   is shown once, when created. A presented key is found by its hash, and the stored hash is
 *   compared again in constant time.
 * - A call first RESERVES the most it can cost with ONE conditional statement,
 *   `UPDATE … SET credit = credit - max WHERE id = ? AND revoked_at IS NULL AND credit >= max
 *   RETURNING credit`, so concurrent calls, in one process or many, never overspend. The ledger entry
 *   (`debited`, with the reservation and a lease) is written in the same transaction.
 * - A served call SETTLES once: the entry moves `debited → served` with a conditional update that
 *   sets its amount to the actual cost (never above the reservation), and the rest goes back to the
 *   credit in the same transaction. So `credit = top-ups − (served amounts + held reservations)`,
 *   exactly.
 * - A failed call is restored exactly once: the entry moves `debited → restored` with a conditional
 *   update, and only the caller that moved it gives the reservation back.
 * - A reservation whose lease lapsed (its process died mid-call) is restored by
 *   {@link KeyStore.releaseLapsed}; a live call renews its lease while it runs.
 * - A top-up credits once per reference (a payment digest is unique in the ledger).
 *
 * @module
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { normalizeSuiAddress } from '@mysten/sui/utils'
import { type Kysely, sql } from 'kysely'
import { type SqliteConnection, type SqliteDirect, toBigint } from '../db/database.js'
import type { GatewaySchema, LedgerState } from '../db/schema.js'

/** A key as listed (never the secret). */
export type KeyRecord = {
  id: string
  /** The key's last 4 characters. */
  hint: string
  name: string | null
  /** Credit in USDC base units. */
  credit: bigint
  createdAt: string
  revokedAt: string | null
  /** The Sui address that owns the key in the console; null for the operator's own keys. */
  owner: string | null
}

/** A key just created: the secret is here, and nowhere else, ever again. */
export type CreatedKey = KeyRecord & { key: string }

/** Result of {@link KeyStore.authenticate}. */
export type Authentication = { status: 'valid'; keyId: string } | { status: 'invalid' }

/** Result of {@link KeyStore.reserve}. */
export type Reservation =
  | { status: 'reserved'; entryId: string; credit: bigint }
  | { status: 'insufficient'; credit: bigint }
  | { status: 'unknown_key' }

/** What {@link KeyStore.reserve} records. */
export type ReservationEntry = {
  /** The call's id: unique. */
  entryId: string
  model: string
  /** Until when (ms since the epoch) the reservation is the caller's; renewed with {@link KeyStore.renew}. */
  leaseUntilMs: number
}

/** Result of {@link KeyStore.settle}. */
export type Settlement =
  /** `charged` was kept (at most the reservation); `released` went back to the credit. */
  | { status: 'settled'; charged: bigint; released: bigint }
  /** Nothing is reserved under that id any more (settled, restored, or given back after its lease). */
  | { status: 'not_reserved' }

/** Result of {@link KeyStore.topUp}. */
export type TopUp =
  | { status: 'credited'; credit: bigint }
  | { status: 'duplicate' }
  | { status: 'unknown_key' }
  /** `commit` answered `false`: nothing was credited. */
  | { status: 'cancelled' }

/** Options of {@link KeyStore.topUp}. */
export type TopUpOptions = {
  /**
   * Asked inside the credit's transaction, after the credit is written and before it commits:
   * `false` rolls it back (`cancelled`). A paid top-up passes its route's `commit()`, so that the
   * credit exists only if the payment is kept (served), never beside a refund.
   */
  commit?: (() => boolean) | undefined
}

/** A ledger entry as listed. */
export type LedgerEntry = {
  id: string
  kind: 'call' | 'top_up'
  state: LedgerState
  amount: bigint
  model: string | null
  reference: string | null
  createdAt: string
}

/** Token counts reported by the upstream, recorded with a served call. */
export type Usage = { promptTokens?: number | undefined; completionTokens?: number | undefined }

/** The key and credit store. */
export type KeyStore = {
  /**
   * Creates a key with an optional starting credit (recorded as an operator top-up) and an optional
   * owner (a Sui address, normalised): the owner sees and manages it in the console.
   */
  create(options?: {
    name?: string | undefined
    credit?: bigint | undefined
    owner?: string | undefined
  }): Promise<CreatedKey>
  /** Finds the key a caller presented (`Bearer <key>`). Revoked and unknown keys are invalid. */
  authenticate(presented: string): Promise<Authentication>
  /** Every key, newest first; with `owner`, only that owner's keys. */
  list(options?: { owner?: string | undefined }): Promise<KeyRecord[]>
  /** One key by id. */
  get(id: string): Promise<KeyRecord | undefined>
  /** Revokes a key; `false` when there is no such (unrevoked) key. */
  revoke(id: string): Promise<boolean>
  /**
   * Adds credit to a key. `reference` identifies what paid for it (a payment digest, or `operator:…`):
   * the same reference never credits twice.
   */
  topUp(id: string, amount: bigint, reference: string, options?: TopUpOptions): Promise<TopUp>
  /**
   * Whether a top-up with this `reference` was credited: the lease sweeper asks it before refunding a
   * top-up payment whose process died after crediting and before recording the payment served.
   */
  creditedBy(reference: string): Promise<boolean>
  /**
   * Reserves the most a call can cost, atomically, refusing to go below zero: the amount leaves the
   * credit until the call settles or is restored.
   */
  reserve(id: string, amount: bigint, entry: ReservationEntry): Promise<Reservation>
  /**
   * The call was served: keeps `cost` (capped at the reservation), gives the rest back and records
   * the upstream's token counts, once. Later calls answer `not_reserved`.
   */
  settle(entryId: string, cost: bigint, usage?: Usage): Promise<Settlement>
  /** Extends a held reservation's lease (a call still running); `false` when none is held. */
  renew(entryId: string, leaseUntilMs: number): Promise<boolean>
  /** The call failed: gives the reservation back, exactly once. `true` only for the call that restored it. */
  restore(entryId: string): Promise<boolean>
  /**
   * Restores the reservations whose lease lapsed before `nowMs` (their process died mid-call), at
   * most `limit` (default 100); answers how many it restored.
   */
  releaseLapsed(nowMs: number, options?: { limit?: number | undefined }): Promise<number>
  /** A key's ledger, newest first. */
  ledger(id: string, options?: { limit?: number | undefined }): Promise<LedgerEntry[]>
}

const keyPattern = /^tg_[A-Za-z0-9_-]{43}$/

/** The SHA-256 of a key, hex. */
export function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex')
}

/** Whether a string has the shape of a key (before any look-up). */
export function looksLikeKey(value: string): boolean {
  return keyPattern.test(value)
}

function now(): string {
  return new Date().toISOString()
}

type KeyRow = {
  id: string
  hint: string
  name: string | null
  credit: bigint | number | string
  created_at: string
  revoked_at: string | null
  owner: string | null
}

function recordOf(row: KeyRow): KeyRecord {
  return {
    id: row.id,
    hint: row.hint,
    name: row.name,
    credit: toBigint(row.credit),
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
    owner: row.owner,
  }
}

/** Options of {@link createKeyStore}. */
export type KeyStoreOptions = {
  /**
   * The SQLite connection under `db` (`GatewayDatabase.sqlite`): a call's look-up, reservation,
   * settlement, lease renewal and restore then run as synchronous statements on it (the same SQL and transactions,
   * without the query layer's per-query work). Default: everything through `db`.
   */
  sqlite?: SqliteDirect | undefined
}

/**
 * The key store over the gateway's relational store.
 *
 * @example
 * ```ts
 * const keys = createKeyStore(database.db, { sqlite: database.sqlite })
 * const { key } = await keys.create({ credit: 1_000_000n }) // show `key` once
 * ```
 */
export function createKeyStore(db: Kysely<GatewaySchema>, options: KeyStoreOptions = {}): KeyStore {
  const direct = options.sqlite === undefined ? undefined : sqliteCalls(options.sqlite)
  const keyColumns = ['id', 'hint', 'name', 'credit', 'created_at', 'revoked_at', 'owner'] as const

  async function get(id: string): Promise<KeyRecord | undefined> {
    const row = await db
      .selectFrom('inference_keys')
      .select(keyColumns)
      .where('id', '=', id)
      .executeTakeFirst()
    return row === undefined ? undefined : recordOf(row)
  }

  async function topUp(
    id: string,
    amount: bigint,
    reference: string,
    options: TopUpOptions = {},
  ): Promise<TopUp> {
    if (amount <= 0n) throw new RangeError('a top-up must be more than 0')
    const cancelled = Symbol('cancelled')
    let started = false
    const credited = db.transaction().execute(async (trx): Promise<TopUp> => {
      const inserted = await trx
        .insertInto('inference_ledger')
        .values({
          id: `top_${randomBytes(12).toString('hex')}`,
          key_id: id,
          kind: 'top_up',
          state: 'credited',
          amount,
          model: null,
          reference,
          prompt_tokens: null,
          completion_tokens: null,
          reserved: null,
          lease_until_ms: null,
          created_at: now(),
          updated_at: now(),
        })
        .onConflict((oc) => oc.column('reference').doNothing())
        .returning('id')
        .executeTakeFirst()
        .catch((error: unknown) => {
          // The key does not exist (foreign key).
          if (/foreign key/i.test(String((error as Error).message))) return 'unknown_key' as const
          throw error
        })
      if (inserted === 'unknown_key') return { status: 'unknown_key' }
      if (inserted === undefined) return { status: 'duplicate' }
      const row = await trx
        .updateTable('inference_keys')
        .set({ credit: sql<bigint>`credit + ${amount}` })
        .where('id', '=', id)
        .where('revoked_at', 'is', null)
        .returning('credit')
        .executeTakeFirst()
      if (row === undefined) {
        await trx.deleteFrom('inference_ledger').where('reference', '=', reference).execute()
        return { status: 'unknown_key' }
      }
      // The last step before the transaction commits: nothing may fail between this and COMMIT.
      if (options.commit?.() === false) throw cancelled
      started = true
      return { status: 'credited', credit: toBigint(row.credit) }
    })
    return credited.catch(async (error: unknown): Promise<TopUp> => {
      if (error === cancelled) return { status: 'cancelled' }
      // The COMMIT itself failed (a connection reset): it may have been applied. A credit that
      // exists is reported as credited, never as a failure that would refund the payment too.
      if (started) {
        const entry = await db
          .selectFrom('inference_ledger')
          .select('id')
          .where('reference', '=', reference)
          .executeTakeFirst()
        const key = entry === undefined ? undefined : await get(id)
        if (key !== undefined) return { status: 'credited', credit: key.credit }
      }
      throw error
    })
  }

  async function restore(entryId: string): Promise<boolean> {
    if (direct) return direct.restore(entryId)
    return db.transaction().execute(async (trx) => {
      const entry = await trx
        .updateTable('inference_ledger')
        .set({ state: 'restored', lease_until_ms: null, updated_at: now() })
        .where('id', '=', entryId)
        .where('kind', '=', 'call')
        .where('state', '=', 'debited')
        .returning(['key_id', 'amount'])
        .executeTakeFirst()
      if (entry === undefined) return false
      await trx
        .updateTable('inference_keys')
        .set({ credit: sql<bigint>`credit + ${toBigint(entry.amount)}` })
        .where('id', '=', entry.key_id)
        .execute()
      return true
    })
  }

  return {
    async create(options = {}) {
      const key = `tg_${randomBytes(32).toString('base64url')}`
      const id = `key_${randomBytes(8).toString('hex')}`
      const createdAt = now()
      const owner = options.owner === undefined ? null : normalizeSuiAddress(options.owner)
      await db
        .insertInto('inference_keys')
        .values({
          id,
          hash: hashKey(key),
          hint: key.slice(-4),
          name: options.name ?? null,
          credit: 0n,
          created_at: createdAt,
          revoked_at: null,
          owner,
        })
        .execute()
      let credit = 0n
      if (options.credit !== undefined && options.credit > 0n) {
        const result = await topUp(id, options.credit, `operator:create:${id}`)
        if (result.status === 'credited') credit = result.credit
      }
      return {
        id,
        key,
        hint: key.slice(-4),
        name: options.name ?? null,
        credit,
        createdAt,
        revokedAt: null,
        owner,
      }
    },

    async authenticate(presented) {
      if (!looksLikeKey(presented)) return { status: 'invalid' }
      const hash = hashKey(presented)
      const row = direct
        ? await direct.byHash(hash)
        : await db
            .selectFrom('inference_keys')
            .select(['id', 'hash', 'revoked_at'])
            .where('hash', '=', hash)
            .executeTakeFirst()
      if (row === undefined || row.revoked_at !== null) return { status: 'invalid' }
      const same = timingSafeEqual(Buffer.from(row.hash, 'hex'), Buffer.from(hash, 'hex'))
      return same ? { status: 'valid', keyId: row.id } : { status: 'invalid' }
    },

    async list(options = {}) {
      let query = db.selectFrom('inference_keys').select(keyColumns)
      if (options.owner !== undefined) {
        query = query.where('owner', '=', normalizeSuiAddress(options.owner))
      }
      const rows = await query.orderBy('created_at', 'desc').orderBy('id').execute()
      return rows.map(recordOf)
    },

    get,

    async revoke(id) {
      const rows = await db
        .updateTable('inference_keys')
        .set({ revoked_at: now() })
        .where('id', '=', id)
        .where('revoked_at', 'is', null)
        .returning('id')
        .execute()
      return rows.length > 0
    },

    topUp,

    async creditedBy(reference) {
      const entry = await db
        .selectFrom('inference_ledger')
        .select('id')
        .where('reference', '=', reference)
        .where('kind', '=', 'top_up')
        .executeTakeFirst()
      return entry !== undefined
    },

    async reserve(id, amount, entry) {
      if (amount <= 0n) throw new RangeError('a reservation must be more than 0')
      if (direct) return direct.reserve(id, amount, entry)
      return db.transaction().execute(async (trx): Promise<Reservation> => {
        const row = await trx
          .updateTable('inference_keys')
          .set({ credit: sql<bigint>`credit - ${amount}` })
          .where('id', '=', id)
          .where('revoked_at', 'is', null)
          .where('credit', '>=', amount)
          .returning('credit')
          .executeTakeFirst()
        if (row === undefined) {
          const current = await trx
            .selectFrom('inference_keys')
            .select(['credit', 'revoked_at'])
            .where('id', '=', id)
            .executeTakeFirst()
          return current === undefined || current.revoked_at !== null
            ? { status: 'unknown_key' }
            : { status: 'insufficient', credit: toBigint(current.credit) }
        }
        await trx
          .insertInto('inference_ledger')
          .values({
            id: entry.entryId,
            key_id: id,
            kind: 'call',
            state: 'debited',
            amount,
            model: entry.model,
            reference: null,
            prompt_tokens: null,
            completion_tokens: null,
            reserved: amount,
            lease_until_ms: BigInt(entry.leaseUntilMs),
            created_at: now(),
            updated_at: now(),
          })
          .execute()
        return { status: 'reserved', entryId: entry.entryId, credit: toBigint(row.credit) }
      })
    },

    async settle(entryId, cost, usage = {}) {
      if (cost < 0n) throw new RangeError('a cost cannot be below 0')
      if (direct) return direct.settle(entryId, cost, usage)
      return db.transaction().execute(async (trx): Promise<Settlement> => {
        // SET reads the row as it was: `reserved` keeps what was held, `amount` becomes the cost.
        const entry = await trx
          .updateTable('inference_ledger')
          .set({
            state: 'served',
            amount: sql<bigint>`case when amount < ${cost} then amount else ${cost} end`,
            reserved: sql<bigint>`amount`,
            lease_until_ms: null,
            prompt_tokens: usage.promptTokens ?? null,
            completion_tokens: usage.completionTokens ?? null,
            updated_at: now(),
          })
          .where('id', '=', entryId)
          .where('kind', '=', 'call')
          .where('state', '=', 'debited')
          .returning(['key_id', 'amount', 'reserved'])
          .executeTakeFirst()
        if (entry === undefined) return { status: 'not_reserved' }
        const charged = toBigint(entry.amount)
        const released = toBigint(entry.reserved ?? 0n) - charged
        if (released > 0n) {
          await trx
            .updateTable('inference_keys')
            .set({ credit: sql<bigint>`credit + ${released}` })
            .where('id', '=', entry.key_id)
            .execute()
        }
        return { status: 'settled', charged, released }
      })
    },

    async renew(entryId, leaseUntilMs) {
      if (direct) return direct.renew(entryId, leaseUntilMs)
      const rows = await db
        .updateTable('inference_ledger')
        .set({ lease_until_ms: BigInt(leaseUntilMs) })
        .where('id', '=', entryId)
        .where('state', '=', 'debited')
        .returning('id')
        .execute()
      return rows.length > 0
    },

    restore,

    async releaseLapsed(nowMs, options = {}) {
      const lapsed = await db
        .selectFrom('inference_ledger')
        .select('id')
        .where('state', '=', 'debited')
        .where('lease_until_ms', '<', BigInt(nowMs))
        .orderBy('lease_until_ms')
        .limit(Math.min(Math.max(options.limit ?? 100, 1), 10_000))
        .execute()
      let restored = 0
      for (const { id } of lapsed) if (await restore(id)) restored++
      return restored
    },

    async ledger(id, options = {}) {
      const rows = await db
        .selectFrom('inference_ledger')
        .select(['id', 'kind', 'state', 'amount', 'model', 'reference', 'created_at'])
        .where('key_id', '=', id)
        .orderBy('created_at', 'desc')
        .limit(Math.min(Math.max(options.limit ?? 100, 1), 10_000))
        .execute()
      return rows.map((r) => ({
        id: r.id,
        kind: r.kind,
        state: r.state,
        amount: toBigint(r.amount),
        model: r.model,
        reference: r.reference,
        createdAt: r.created_at,
      }))
    },
  }
}

/**
 * A call's statements on the SQLite connection, synchronous: the same SQL and transactions as the
 * query layer's; the reservations, settlements and renewals of one turn of the event loop in one
 * transaction.
 */
function sqliteCalls(sqlite: SqliteDirect) {
  // The reservations, settlements and renewals asked for in one turn of the event loop are written in one
  // transaction, each in a savepoint of its own: one that fails is undone alone and rejects alone.
  type Write = {
    work: (c: SqliteConnection) => unknown
    resolve: (value: never) => void
    reject: (error: unknown) => void
  }
  let writes: Write[] = []
  const flush = () => {
    const batch = writes
    writes = []
    const [only] = batch
    if (batch.length === 1 && only !== undefined) {
      // Alone in its transaction: the transaction is its savepoint (a failure rolls it back).
      sqlite.run((c) => c.immediate(() => only.work(c) as never)).then(only.resolve, only.reject)
      return
    }
    sqlite
      .run((c) => {
        const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = []
        c.immediate(() => {
          for (const { work } of batch) {
            c.statement('savepoint call').run()
            try {
              outcomes.push({ ok: true, value: work(c) })
            } catch (error) {
              c.statement('rollback to call').run()
              outcomes.push({ ok: false, error })
            }
            c.statement('release call').run()
          }
        })
        return outcomes
      })
      .then(
        (outcomes) =>
          batch.forEach((write, i) => {
            const outcome = outcomes[i]
            if (outcome?.ok === true) write.resolve(outcome.value as never)
            else write.reject(outcome?.error)
          }),
        // Nothing of the transaction was kept.
        (error: unknown) => {
          for (const write of batch) write.reject(error)
        },
      )
  }
  const write = <T>(work: (c: SqliteConnection) => T): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      if (writes.length === 0) setImmediate(flush)
      writes.push({ work, resolve: resolve as (value: never) => void, reject })
    })
  return {
    byHash: (hash: string) =>
      sqlite.run(
        (c) =>
          c.statement('select id, hash, revoked_at from inference_keys where hash = ?').get(hash) as
            | { id: string; hash: string; revoked_at: string | null }
            | undefined,
      ),

    reserve: (id: string, amount: bigint, entry: ReservationEntry) =>
      write((c): Reservation => {
        const row = c
          .statement(
            'update inference_keys set credit = credit - ? where id = ? and revoked_at is null and credit >= ? returning credit',
          )
          .get(amount, id, amount) as { credit: bigint | number } | undefined
        if (row === undefined) {
          const current = c
            .statement('select credit, revoked_at from inference_keys where id = ?')
            .get(id) as { credit: bigint | number; revoked_at: string | null } | undefined
          return current === undefined || current.revoked_at !== null
            ? { status: 'unknown_key' }
            : { status: 'insufficient', credit: toBigint(current.credit) }
        }
        const at = now()
        c.statement(
          'insert into inference_ledger (id, key_id, kind, state, amount, model, reference, prompt_tokens, completion_tokens, reserved, lease_until_ms, created_at, updated_at) ' +
            "values (?, ?, 'call', 'debited', ?, ?, null, null, null, ?, ?, ?, ?)",
        ).run(entry.entryId, id, amount, entry.model, amount, entry.leaseUntilMs, at, at)
        return { status: 'reserved', entryId: entry.entryId, credit: toBigint(row.credit) }
      }),

    settle: (entryId: string, cost: bigint, usage: Usage) =>
      write((c): Settlement => {
        // SET reads the row as it was: `reserved` keeps what was held, `amount` becomes the cost.
        const entry = c
          .statement(
            "update inference_ledger set state = 'served', amount = min(amount, ?), reserved = amount, lease_until_ms = null, " +
              "prompt_tokens = ?, completion_tokens = ?, updated_at = ? where id = ? and kind = 'call' and state = 'debited' " +
              'returning key_id, amount, reserved',
          )
          .get(cost, usage.promptTokens ?? null, usage.completionTokens ?? null, now(), entryId) as
          | { key_id: string; amount: bigint | number; reserved: bigint | number }
          | undefined
        if (entry === undefined) return { status: 'not_reserved' }
        const charged = toBigint(entry.amount)
        const released = toBigint(entry.reserved) - charged
        if (released > 0n) {
          c.statement('update inference_keys set credit = credit + ? where id = ?').run(
            released,
            entry.key_id,
          )
        }
        return { status: 'settled', charged, released }
      }),

    renew: (entryId: string, leaseUntilMs: number) =>
      write(
        (c) =>
          c
            .statement(
              "update inference_ledger set lease_until_ms = ? where id = ? and state = 'debited'",
            )
            .run(leaseUntilMs, entryId).changes > 0,
      ),

    restore: (entryId: string) =>
      sqlite.run((c) =>
        c.immediate(() => {
          const entry = c
            .statement(
              "update inference_ledger set state = 'restored', lease_until_ms = null, updated_at = ? where id = ? and kind = 'call' and state = 'debited' returning key_id, amount",
            )
            .get(now(), entryId) as { key_id: string; amount: bigint | number } | undefined
          if (entry === undefined) return false
          c.statement('update inference_keys set credit = credit + ? where id = ?').run(
            toBigint(entry.amount),
            entry.key_id,
          )
          return true
        }),
      ),
  }
}
