/**
 * The gateway's relational store: one Kysely query layer over SQLite (better-sqlite3, a file in the
 * data folder: zero set-up) or PostgreSQL (pg, shared by several gateway processes). The migrations
 * of `migrations.ts` run when it opens. Drivers are loaded only when a store of their kind opens.
 *
 * @module
 */
import { join } from 'node:path'
import {
  CompiledQuery,
  type DatabaseConnection,
  type DialectAdapter,
  type Driver,
  Kysely,
  Migrator,
  PostgresDialect,
  SqliteAdapter,
  SqliteDialect,
  type SqliteDialectConfig,
  SqliteDriver,
} from 'kysely'
import { PaymentError } from 'tollgate'
import { migrationProvider } from './migrations.js'
import type { GatewaySchema } from './schema.js'

/** Where the relational store lives. */
export type DatabaseLocation =
  | {
      kind: 'sqlite'
      /** The database file (its folder is created), or `:memory:`. */
      file: string
    }
  | {
      kind: 'postgres'
      /** A `postgres://` URL. Secret: never logged. */
      url: string
      /** The schema holding the tables (created when missing). Default `public`. */
      schema?: string | undefined
      /** Pool size. Default 10. */
      poolSize?: number | undefined
    }

/** An open relational store. */
export type GatewayDatabase = {
  /** The query layer. */
  db: Kysely<GatewaySchema>
  /** Which engine is under it. */
  dialect: 'sqlite' | 'postgres'
  /** Closes the connections. */
  close(): Promise<void>
  /**
   * SQLite only: synchronous statements on the store's one connection, for the paths where the
   * query layer's per-query work costs more than the query (the keyed inference calls).
   */
  sqlite?: SqliteDirect | undefined
}

/** A prepared statement of the SQLite connection (better-sqlite3's, the methods used). */
export type SqliteStatement = {
  run(...params: unknown[]): { changes: number }
  get(...params: unknown[]): unknown
}

/** The SQLite connection while {@link SqliteDirect.run} holds it. */
export type SqliteConnection = {
  /** The statement of `sql`, prepared once per SQL text. */
  statement(sql: string): SqliteStatement
  /** Runs `work` in one `BEGIN IMMEDIATE` transaction: committed when it returns, rolled back when it throws. */
  immediate<T>(work: () => T): T
}

/** Direct access to the SQLite connection under the query layer. */
export type SqliteDirect = {
  /**
   * Runs `work` synchronously on the connection: at once when the query layer holds it for nobody,
   * else once it hands it over. No query or transaction of the query layer runs or is open
   * meanwhile (SQLite has one connection, and the query layer lends it to one user at a time).
   */
  run<T>(work: (connection: SqliteConnection) => T): Promise<T>
}

/** Options of {@link openDatabase}. */
export type OpenDatabaseOptions = {
  /** Called with errors of idle PostgreSQL connections (they are replaced by the pool). */
  onError?: ((error: Error) => void) | undefined
}

const schemaName = /^[a-z_][a-z0-9_]{0,62}$/

/**
 * Opens the relational store and brings its schema up to date (Kysely `Migrator`). Refuses a bad
 * schema name; a failed migration closes the connections and throws.
 *
 * @example
 * ```ts
 * const { db, close } = await openDatabase({ kind: 'sqlite', file: '.data/gateway/gateway.db' })
 * ```
 */
export async function openDatabase(
  location: DatabaseLocation,
  options: OpenDatabaseOptions = {},
): Promise<GatewayDatabase> {
  let db: Kysely<GatewaySchema>
  let migrationSchema: string | undefined
  let sqlite: SqliteDirect | undefined
  if (location.kind === 'sqlite') {
    const { openSqliteDatabase } = await import('tollgate/stores/sqlite')
    // better-sqlite3's own Database (the store's return type names only what the store uses).
    const database = openSqliteDatabase(location.file) as import('better-sqlite3').Database
    database.pragma('foreign_keys = ON')
    // Integers come back as bigints: no amount is ever read through a float.
    database.defaultSafeIntegers(true)
    const cached = withStatementCache(database)
    const lending = { lent: 0 }
    db = new Kysely<GatewaySchema>({
      dialect: new ImmediateSqliteDialect({ database: cached }, lending),
    })
    sqlite = directSqlite(db, cached.prepare, lending)
  } else {
    const schema = location.schema ?? 'public'
    if (!schemaName.test(schema)) {
      throw new PaymentError('invalid_config', 'the database schema must be [a-z_][a-z0-9_]*')
    }
    const { default: pg } = await import('pg')
    const pool = new pg.Pool({
      connectionString: location.url,
      max: location.poolSize ?? 10,
      // Every connection works in the configured schema.
      options: `-c search_path=${schema}`,
    })
    pool.on('error', (error) => options.onError?.(error))
    if (schema !== 'public') await createSchema(pool, schema)
    db = new Kysely<GatewaySchema>({ dialect: new PostgresDialect({ pool }) })
    migrationSchema = schema
  }
  try {
    await migrate(db, migrationSchema)
  } catch (error) {
    await db.destroy()
    throw error
  }
  return {
    db,
    dialect: location.kind,
    close: () => db.destroy(),
    sqlite,
  }
}

/** How many users of the query layer hold the SQLite connection (0 or 1: it lends it to one at a time). */
type Lending = { lent: number }

/**
 * {@link SqliteDirect} over the query layer's connection and its statement cache. While the query
 * layer lends the connection to nobody (`lending.lent` is 0: no query or transaction of it runs or
 * is open), work runs at once, without borrowing the connection through it (its connection hand-over
 * costs several promise turns per call): the work is synchronous, so nothing of the query layer can
 * start before it ends.
 */
function directSqlite(
  db: Kysely<GatewaySchema>,
  statement: (sql: string) => SqliteStatement,
  lending: Lending,
): SqliteDirect {
  const begin = () => statement('begin immediate').run()
  const connection: SqliteConnection = {
    statement,
    immediate(work) {
      begin()
      try {
        const result = work()
        statement('commit').run()
        return result
      } catch (error) {
        // A failed statement, or a COMMIT that could not take place: nothing of it is kept.
        try {
          statement('rollback').run()
        } catch {}
        throw error
      }
    },
  }
  return {
    run(work) {
      if (lending.lent === 0) {
        try {
          return Promise.resolve(work(connection))
        } catch (error) {
          return Promise.reject(error)
        }
      }
      // Holding the connection through the query layer waits out its queries and transactions.
      return db.connection().execute(async () => work(connection))
    },
  }
}

async function createSchema(pool: import('pg').Pool, schema: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await pool.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`)
      return
    } catch (error) {
      // Two processes creating it at once: one of them meets a unique violation; look again.
      if (attempt >= 2) throw error
    }
  }
}

/**
 * Kysely's SQLite dialect, with every transaction begun IMMEDIATE and the migrations run in one.
 *
 * Kysely begins SQLite transactions DEFERRED and runs migrations outside any transaction, with no
 * lock. Two gateway processes starting on one new file then both applied the first migration and one
 * of them stopped ("table … already exists"); and a deferred transaction that has read (preparing a
 * statement reads the schema) cannot take the write lock after another process committed: SQLite
 * answers SQLITE_BUSY at once, without waiting out the busy timeout. `BEGIN IMMEDIATE` takes the
 * write lock first, waiting for it, and SQLite's DDL is transactional: the second process waits,
 * then finds the migrations done.
 */
class ImmediateSqliteDialect extends SqliteDialect {
  readonly #settings: SqliteDialectConfig
  readonly #lending: Lending

  constructor(settings: SqliteDialectConfig, lending: Lending) {
    super(settings)
    this.#settings = settings
    this.#lending = lending
  }

  override createDriver(): Driver {
    return new ImmediateSqliteDriver(this.#settings, this.#lending)
  }

  override createAdapter(): DialectAdapter {
    return new TransactionalSqliteAdapter()
  }
}

/** Kysely's SQLite driver, beginning transactions IMMEDIATE and counting who holds the connection. */
class ImmediateSqliteDriver extends SqliteDriver {
  readonly #lending: Lending

  constructor(settings: SqliteDialectConfig, lending: Lending) {
    super(settings)
    this.#lending = lending
  }

  override async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await super.acquireConnection()
    this.#lending.lent++
    return connection
  }

  override async releaseConnection(): Promise<void> {
    this.#lending.lent--
    await super.releaseConnection()
  }

  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'))
  }
}

class TransactionalSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true
  }
}

/** Most prepared statements kept per SQLite connection. */
const statementCacheSize = 256

/**
 * The database as Kysely's SQLite driver sees it, with its statements prepared once per SQL text
 * (the driver prepares every query anew, which cost a tenth of the gateway's CPU on keyed calls).
 * Safe: the driver runs one query at a time on its connection, and each runs to completion.
 */
function withStatementCache(database: import('better-sqlite3').Database): {
  close(): void
  prepare(sql: string): import('better-sqlite3').Statement
} {
  const statements = new Map<string, import('better-sqlite3').Statement>()
  return {
    close: () => database.close(),
    prepare(sql: string) {
      let statement = statements.get(sql)
      if (statement === undefined) {
        statement = database.prepare(sql)
        if (statements.size >= statementCacheSize) {
          const oldest = statements.keys().next().value
          if (oldest !== undefined) statements.delete(oldest)
        }
        statements.set(sql, statement)
      }
      return statement
    },
  }
}

/**
 * Applies every pending migration. Throws the first failure.
 *
 * @param schema - PostgreSQL: the schema of the migration tables. Named, not left to the
 *   `search_path`: Kysely looks for its tables by name in every schema, so another gateway's
 *   tables in another schema of the same database would be taken for this one's.
 */
export async function migrate(db: Kysely<GatewaySchema>, schema?: string): Promise<void> {
  const migrator = new Migrator({
    db,
    provider: migrationProvider,
    migrationTableName: 'gateway_migrations',
    migrationLockTableName: 'gateway_migrations_lock',
    ...(schema === undefined ? {} : { migrationTableSchema: schema }),
  })
  let { error } = await migrator.migrateToLatest()
  // Kysely's migrator looks for its lock table through PostgreSQL's catalog of every schema and
  // table: another schema or table dropped at that moment — by another application or test
  // sharing the database — fails the read with 3F000 ("schema … does not exist") or 42P01
  // ("relation … does not exist"), though nothing of ours is missing. Read again, for up to
  // about 5 s (a test suite creating and dropping schemas keeps the catalog churning for longer
  // than half a second); a schema or table of ours that is missing still fails after the last try.
  for (let attempt = 1; attempt < 30 && catalogRaced(error); attempt++) {
    await new Promise((resolve) =>
      setTimeout(resolve, Math.min(200, 10 * attempt) + Math.random() * 20),
    )
    ;({ error } = await migrator.migrateToLatest())
  }
  if (error === undefined) return
  throw error instanceof Error
    ? error
    : new PaymentError('store_error', `a migration failed: ${String(error).slice(0, 300)}`)
}

/**
 * PostgreSQL's `invalid_schema_name` (3F000) or `undefined_table` (42P01): a schema or table that
 * does not exist (any more), as a catalog read racing a drop elsewhere in the database sees it.
 */
function catalogRaced(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code
  return code === '3F000' || code === '42P01'
}

/** A driver's integer (bigint, number or numeric string) as a bigint. */
export function toBigint(value: bigint | number | string): bigint {
  return typeof value === 'bigint' ? value : BigInt(value)
}

/** The settings that place the relational store. */
export type DatabaseSettings = {
  dataDir: string
  databaseUrl?: string | undefined
  databaseSchema?: string | undefined
}

/**
 * Where the gateway keeps its relational data, from its settings: PostgreSQL when `DATABASE_URL` is
 * set (in `DATABASE_SCHEMA`), else SQLite at `<DATA_DIR>/gateway.db`. The gateway and `tollgate keys`
 * both use this, so they find the same store.
 */
export function databaseLocationOf(settings: DatabaseSettings): DatabaseLocation {
  return settings.databaseUrl === undefined
    ? { kind: 'sqlite', file: join(settings.dataDir, 'gateway.db') }
    : { kind: 'postgres', url: settings.databaseUrl, schema: settings.databaseSchema }
}
