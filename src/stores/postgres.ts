/**
 * The PostgreSQL payment store (pg): for several gateway processes on several hosts sharing one
 * database. The claim is `INSERT … ON CONFLICT (digest) DO NOTHING RETURNING` (no row lock on
 * conflict, so a crowd of replays does not queue), followed only for an expired lease by a
 * compare-and-set `UPDATE … WHERE lease_until <= now RETURNING`; every transition is one
 * `UPDATE … WHERE state IN (<expected>) RETURNING` (or `DELETE`), so each step is atomic under
 * PostgreSQL's row locks at READ COMMITTED.
 *
 * The table is created by {@link migratePostgresStore} (idempotent, serialised by an advisory lock),
 * which the store runs before its first query unless `migrate: false`.
 *
 * `pg` is an optional peer dependency: install it to use this module.
 *
 * @module
 */
import pg from 'pg'
import { type ClaimOutcome, createStore, type StoreEngine } from './internal/core.js'
import { rowFrom } from './internal/row.js'
import {
  applyQuery,
  classifyMiss,
  countsQuery,
  insertQuery,
  isClaimable,
  lapsedQuery,
  listQuery,
  pruneQuery,
  type Query,
  quoteIdentifier,
  type SqlDialect,
  schemaStatements,
  selectQuery,
  takeOverQuery,
} from './internal/sql.js'
import type { PaymentState, PaymentStore, StoreOptions } from './types.js'

/** Anything that runs a query: a `pg.Pool` (recommended) or a connected `pg.Client`. */
export type PostgresQueryable = Pick<pg.Pool, 'query'>

/** Where the payments table lives. */
export type PostgresTableOptions = {
  /** The schema (created when missing). Default: `public`. */
  schema?: string | undefined
  /** The table name. Default: `tollgate_payments`. */
  table?: string | undefined
}

/** Options of {@link createPostgresStore}. */
export type PostgresStoreOptions = StoreOptions &
  PostgresTableOptions & {
    /** A `postgres://` URL (the store opens and closes a pool), or a pool/client (left open). */
    connection: string | PostgresQueryable
    /** Run {@link migratePostgresStore} before the first query. Default: true. */
    migrate?: boolean | undefined
    /** Pool size when the store opens the pool from a URL. Default: 10. */
    poolSize?: number | undefined
    /**
     * Called with errors of idle connections in a pool the store opened (a restarted server, a
     * dropped connection). Without it they are ignored: the pool replaces the connection and the
     * next query reports any lasting failure.
     */
    onError?: ((error: Error) => void) | undefined
  }

function dialectFor(options: PostgresTableOptions): SqlDialect {
  const schema = options.schema ?? 'public'
  const table = options.table ?? 'tollgate_payments'
  return {
    param: (i) => `$${i}`,
    intParam: (i) => `$${i}::bigint`,
    bigint: 'BIGINT',
    table: `${quoteIdentifier(schema, 'schema')}.${quoteIdentifier(table, 'table')}`,
    indexBase: table,
  }
}

/**
 * Creates the schema, the payments table and its indexes when missing. Idempotent, and safe to run
 * from several processes at once (one transaction holding an advisory lock).
 *
 * @param connection - a pool or a connected client.
 * @param options - the schema and table name.
 * @example
 * ```ts
 * await migratePostgresStore(pool, { schema: 'payments' })
 * ```
 */
export async function migratePostgresStore(
  connection: PostgresQueryable,
  options: PostgresTableOptions = {},
): Promise<void> {
  const d = dialectFor(options)
  const schema = quoteIdentifier(options.schema ?? 'public', 'schema')
  // One simple-protocol query string: all statements run on one connection, in one transaction.
  const script = [
    'BEGIN',
    `SELECT pg_advisory_xact_lock(hashtext('tollgate:migrate:' || ${pgString(d.table)}))`,
    `CREATE SCHEMA IF NOT EXISTS ${schema}`,
    ...schemaStatements(d),
    'COMMIT',
  ].join(';\n')
  await connection.query(script)
}

function pgString(value: string): string {
  return `'${value.replaceAll("'", "''")}'`
}

/**
 * Creates a payment store in PostgreSQL.
 *
 * @param options - the connection (URL, pool or client), schema/table, migration switch and the
 *   shared {@link StoreOptions}.
 * @example
 * ```ts
 * import { createPostgresStore } from 'tollgate/stores/postgres'
 * const store = createPostgresStore({ connection: process.env.DATABASE_URL! })
 * ```
 */
export function createPostgresStore(options: PostgresStoreOptions): PaymentStore {
  const dialect = dialectFor(options)
  const ownedPool =
    typeof options.connection === 'string'
      ? new pg.Pool({ connectionString: options.connection, max: options.poolSize ?? 10 })
      : undefined
  // An idle client's error is emitted on the pool; unhandled, it would end the process.
  ownedPool?.on('error', (error) => options.onError?.(error))
  const db: PostgresQueryable = ownedPool ?? (options.connection as PostgresQueryable)

  let ready: Promise<void> | undefined
  function migrated(): Promise<void> {
    if (options.migrate === false) return Promise.resolve()
    ready ??= migratePostgresStore(db, options).catch((error: unknown) => {
      ready = undefined
      throw error
    })
    return ready
  }

  async function rows(query: Query): Promise<Record<string, unknown>[]> {
    await migrated()
    const result = await db.query(query.text, query.values)
    return result.rows as Record<string, unknown>[]
  }

  async function select(digest: string) {
    const [raw] = await rows(selectQuery(dialect, digest))
    return raw === undefined ? undefined : rowFrom(raw)
  }

  const engine: StoreEngine = {
    async claim(row, times): Promise<ClaimOutcome> {
      // INSERT … ON CONFLICT DO NOTHING takes no row lock on conflict, so a crowd of replays does
      // not queue on one row: one round trip answers both the winner and (usually) the losers.
      for (;;) {
        const [first] = await rows(insertQuery(dialect, row, true))
        if (first !== undefined && Number(first.won) === 1) return { status: 'claimed' }
        // The second branch reads the statement's snapshot: a record committed by a concurrent
        // claimer while this statement waited is read by a follow-up SELECT.
        const current = first === undefined ? await select(row.digest) : rowFrom(first)
        if (current === undefined) continue // deleted in between (release, prune): claim again
        if (!isClaimable(current, row.resource, times.now)) return { status: 'taken', row: current }
        const [won] = await rows(takeOverQuery(dialect, row, times))
        if (won === undefined) {
          const latest = await select(row.digest)
          if (latest === undefined) continue
          return { status: 'taken', row: latest }
        }
        const wonRow = rowFrom(won)
        return wonRow.state === 'settled'
          ? { status: 'settled_unserved', row: wonRow }
          : { status: 'claimed' }
      }
    },

    async apply(digest, transition) {
      const [changed] = await rows(applyQuery(dialect, digest, transition))
      if (changed !== undefined) {
        return { status: 'ok', row: transition.to === null ? undefined : rowFrom(changed) }
      }
      return classifyMiss(await select(digest), transition)
    },

    get: select,

    async list(state, limit) {
      return (await rows(listQuery(dialect, state, limit))).map(rowFrom)
    },

    async listLapsed(state, endedBy, limit) {
      return (await rows(lapsedQuery(dialect, state, endedBy, limit))).map(rowFrom)
    },

    async counts() {
      const counts: Partial<Record<PaymentState, number>> = {}
      for (const raw of await rows(countsQuery(dialect))) {
        counts[raw.state as PaymentState] = Number(raw.n)
      }
      return counts
    },

    async prune(cutoff) {
      await migrated()
      const query = pruneQuery(dialect, cutoff)
      const result = await db.query(query.text, query.values)
      return result.rowCount ?? 0
    },

    async close() {
      await ownedPool?.end()
    },
  }

  return createStore(engine, options)
}
