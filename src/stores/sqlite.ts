/**
 * The SQLite payment store (better-sqlite3): the embedded default. One file, WAL journal, safe for
 * several processes on one host that share the file (every write runs in a `BEGIN IMMEDIATE`
 * transaction; a busy file is waited for up to `busyTimeoutMs`). Writes asked for in the same turn
 * of the event loop share one transaction, each in its own savepoint (group commit: a burst of
 * payments pays for one commit instead of one each); every caller is answered once it committed.
 *
 * `better-sqlite3` is an optional peer dependency: install it to use this module.
 *
 * @module
 */
import type Database from 'better-sqlite3'
import { type ClaimOutcome, createStore, type StoreEngine } from './internal/core.js'
import { type Row, rowFrom } from './internal/row.js'
import {
  applyQuery,
  claimQuery,
  classifyMiss,
  countsQuery,
  lapsedQuery,
  listQuery,
  pruneQuery,
  type Query,
  quoteIdentifier,
  type SqlDialect,
  schemaStatements,
  selectQuery,
} from './internal/sql.js'
import { groupCommit, openSqliteFile, syncedCommit } from './internal/sqliteFile.js'
import type { PaymentState, PaymentStore, StoreOptions } from './types.js'

/**
 * An open better-sqlite3 `Database`, as far as the store uses one. Declared here, not imported from
 * `@types/better-sqlite3`, so that these declarations type-check without that package (a
 * better-sqlite3 `Database` is one; `src/stores/sqlite.test-d.ts` keeps that true).
 */
export type SqliteDatabase = {
  readonly open: boolean
  prepare(source: string): unknown
  exec(source: string): unknown
  pragma(source: string, options?: { simple?: boolean }): unknown
  // biome-ignore lint/suspicious/noExplicitAny: better-sqlite3's own signature (any arguments)
  transaction(fn: (...args: any[]) => unknown): unknown
  close(): unknown
}

/**
 * Opens a SQLite file the way the store opens its own (creating its folder): WAL journal, the busy
 * timeout (default 5 s), `synchronous` NORMAL or FULL, and the switch to WAL retried while another
 * process opening the same new file holds it up. For a file that the store shares with your own
 * tables, or that several processes open at once.
 *
 * @returns an open better-sqlite3 `Database` (typed structurally: see {@link SqliteDatabase}).
 */
export function openSqliteDatabase(
  path: string,
  options: { busyTimeoutMs?: number | undefined; synchronous?: 'normal' | 'full' | undefined } = {},
): SqliteDatabase {
  return openSqliteFile(path, options)
}

/** Options of {@link createSqliteStore}. */
export type SqliteStoreOptions = StoreOptions & {
  /**
   * A file path (its folder is created when missing; `:memory:` for a private in-memory database), or
   * an open better-sqlite3 `Database` (left open by `close()`; its journal mode is left as it is —
   * use WAL for several processes).
   */
  database: string | SqliteDatabase
  /** The table name. Default: `tollgate_payments`. */
  table?: string | undefined
  /**
   * How long to wait for another process's write lock, in ms, when the store opens the file.
   * Default: 5000.
   */
  busyTimeoutMs?: number | undefined
  /**
   * When a write reaches the disk (for a file the store opens; an open `Database` is left as it is).
   * `normal` (the default): SQLite's `synchronous = NORMAL` in WAL mode — a commit survives the
   * process being killed at any point, and an operating-system crash or power loss can lose the
   * last commits before the next checkpoint; the two writes after which money leaves the seller (a
   * refund owed, a refund transaction recorded before it is submitted) are synced at once all the
   * same. What a power loss can cost: a payment served once more if it is presented again. `full`:
   * every commit is synced (`synchronous = FULL`), about a millisecond of blocked event loop per
   * write on a typical disk.
   */
  synchronous?: 'normal' | 'full' | undefined
}

/**
 * Creates a payment store in a SQLite file. The table is created when missing.
 *
 * @param options - the file or database, the table name, and the shared {@link StoreOptions}.
 * @example
 * ```ts
 * import { createSqliteStore } from 'tollgate/stores/sqlite'
 * const store = createSqliteStore({ database: './data/payments.db' })
 * ```
 */
export function createSqliteStore(options: SqliteStoreOptions): PaymentStore {
  const owned = typeof options.database === 'string'
  /** Whether commits are synced only when a transition asks for it. */
  const relaxed = owned && (options.synchronous ?? 'normal') === 'normal'
  const db =
    typeof options.database === 'string'
      ? openSqliteFile(options.database, {
          busyTimeoutMs: options.busyTimeoutMs,
          synchronous: options.synchronous,
        })
      : // The structural type above stands for better-sqlite3's own (see its comment).
        (options.database as Database.Database)

  const tableName = options.table ?? 'tollgate_payments'
  const dialect: SqlDialect = {
    param: (i) => `@p${i}`,
    intParam: (i) => `@p${i}`,
    bigint: 'INTEGER',
    table: quoteIdentifier(tableName, 'table'),
    indexBase: tableName,
  }

  db.transaction(() => {
    for (const statement of schemaStatements(dialect)) db.exec(statement)
  }).immediate()

  const statements = new Map<string, Database.Statement>()
  function all(query: Query): Record<string, unknown>[] {
    let statement = statements.get(query.text)
    if (statement === undefined) {
      statement = db.prepare(query.text)
      statements.set(query.text, statement)
    }
    const params: Record<string, unknown> = {}
    query.values.forEach((value, i) => {
      params[`p${i + 1}`] = value
    })
    return (query.values.length === 0 ? statement.all() : statement.all(params)) as Record<
      string,
      unknown
    >[]
  }
  function select(digest: string): Row | undefined {
    const raw = all(selectQuery(dialect, digest))[0]
    return raw === undefined ? undefined : rowFrom(raw)
  }

  const claim = db.transaction((row: Row, times: Parameters<StoreEngine['claim']>[1]) => {
    const won = all(claimQuery(dialect, row, times))[0]
    if (won !== undefined) {
      const wonRow = rowFrom(won)
      return wonRow.state === 'settled'
        ? { status: 'settled_unserved' as const, row: wonRow }
        : { status: 'claimed' as const }
    }
    const current = select(row.digest)
    if (current === undefined) throw new Error('claimed digest vanished inside a transaction')
    return { status: 'taken' as const, row: current }
  })

  const apply = db.transaction(
    (digest: string, transition: Parameters<StoreEngine['apply']>[1]) => {
      const changed = all(applyQuery(dialect, digest, transition))[0]
      if (changed !== undefined) {
        return { status: 'ok' as const, row: transition.to === null ? undefined : rowFrom(changed) }
      }
      return classifyMiss(select(digest), transition)
    },
  )

  const commit = groupCommit(db)
  const engine: StoreEngine = {
    claim: (row, times): Promise<ClaimOutcome> => commit(() => claim(row, times)),
    async apply(digest, transition) {
      if (relaxed && transition.durable === true) {
        // Synced at once, after whatever is waiting for the next group (in the order asked).
        commit.flush()
        return syncedCommit(db, () => apply.immediate(digest, transition))
      }
      return commit(() => apply(digest, transition))
    },
    async get(digest) {
      return select(digest)
    },
    async list(state, limit) {
      return all(listQuery(dialect, state, limit)).map(rowFrom)
    },
    async listLapsed(state, endedBy, limit) {
      return all(lapsedQuery(dialect, state, endedBy, limit)).map(rowFrom)
    },
    async counts() {
      const counts: Partial<Record<PaymentState, number>> = {}
      for (const raw of all(countsQuery(dialect))) {
        counts[raw.state as PaymentState] = Number(raw.n)
      }
      return counts
    },
    async prune(cutoff) {
      const query = pruneQuery(dialect, cutoff)
      const statement = db.prepare(query.text)
      return statement.run({ p1: cutoff }).changes
    },
    async close() {
      commit.flush()
      statements.clear()
      if (owned && db.open) db.close()
    },
  }

  return createStore(engine, options)
}
