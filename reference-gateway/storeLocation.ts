/**
 * Where the gateway's payment records live, from its settings (`STORE`, `DATA_DIR`, `DATABASE_URL`,
 * `REDIS_URL`, `STORE_PREFIX`): the one answer that `tollgate gateway` writes to and
 * `tollgate refunds` reads from. Loads no store driver until one is opened.
 *
 * @module
 */
import { resolve } from 'node:path'
import type { PaymentStore } from 'tollgate'
import type { GatewayConfig } from './config.js'

/** Which payment store is in use. */
export type StoreKind = 'sqlite' | 'postgres' | 'redis' | 'memory'

/** Where the gateway's payments are recorded. Never printed as is: see {@link describeStoreLocation}. */
export type StoreLocation =
  | { kind: 'sqlite'; file: string; table: string }
  | { kind: 'postgres'; url: string; table: string }
  | { kind: 'redis'; url: string; keyPrefix: string }
  | { kind: 'memory' }
  /** `STORE=postgres` / `STORE=redis` without its URL: `setting` names the missing one. */
  | { kind: 'missing'; store: 'postgres' | 'redis'; setting: 'DATABASE_URL' | 'REDIS_URL' }

/** The gateway's SQLite file in a data folder. */
export const sqliteFileName = 'payments.db'

/**
 * Where the gateway with these settings keeps its payments: `STORE=auto` is PostgreSQL when
 * `DATABASE_URL` is set, else Redis when `REDIS_URL` is set, else SQLite at
 * `<DATA_DIR>/payments.db` (default `.data/gateway/payments.db`). The table (SQL) or key prefix
 * (Redis) is `STORE_PREFIX`.
 *
 * @example
 * ```ts
 * gatewayStoreLocation(loadConfig()) // → { kind: 'sqlite', file: '/app/.data/gateway/payments.db', table: 'tollgate_payments' }
 * ```
 */
export function gatewayStoreLocation(
  config: Pick<GatewayConfig, 'store' | 'dataDir' | 'databaseUrl' | 'redisUrl' | 'storePrefix'>,
): StoreLocation {
  const kind: StoreKind =
    config.store !== 'auto'
      ? config.store
      : config.databaseUrl !== undefined
        ? 'postgres'
        : config.redisUrl !== undefined
          ? 'redis'
          : 'sqlite'
  switch (kind) {
    case 'memory':
      return { kind }
    case 'sqlite':
      return {
        kind,
        file: resolve(config.dataDir, sqliteFileName),
        table: config.storePrefix,
      }
    case 'postgres':
      return config.databaseUrl === undefined
        ? { kind: 'missing', store: kind, setting: 'DATABASE_URL' }
        : { kind, url: config.databaseUrl, table: config.storePrefix }
    case 'redis':
      return config.redisUrl === undefined
        ? { kind: 'missing', store: kind, setting: 'REDIS_URL' }
        : { kind, url: config.redisUrl, keyPrefix: `${config.storePrefix}:` }
  }
}

/** The location in words, without secrets (a URL is shown by its host and database only). */
export function describeStoreLocation(location: StoreLocation): string {
  switch (location.kind) {
    case 'sqlite':
      return `SQLite ${location.file} (table ${location.table})`
    case 'postgres':
      return `PostgreSQL ${hostOf(location.url)} (table ${location.table})`
    case 'redis':
      return `Redis ${hostOf(location.url)} (keys ${location.keyPrefix}*)`
    case 'memory':
      return 'memory (forgotten when the gateway stops)'
    case 'missing':
      return `${location.store} without ${location.setting}`
  }
}

/** Options of {@link openStoreAt}. */
export type OpenStoreOptions = {
  /** Told about connection errors of a pooled client (PostgreSQL, Redis). */
  onError?: ((error: Error) => void) | undefined
  /** SQLite commit durability. Default the store's (`normal`). */
  synchronous?: 'normal' | 'full' | undefined
  /** The serve lease, ms. Default the store's (30 000). */
  serveLeaseMs?: number | undefined
  /** The claim lease, ms. Default the store's (300 000). */
  claimLeaseMs?: number | undefined
}

/** Opens the store at `location` (its driver is loaded now). */
export async function openStoreAt(
  location: Exclude<StoreLocation, { kind: 'missing' }>,
  options: OpenStoreOptions = {},
): Promise<PaymentStore> {
  const leases = {
    ...(options.serveLeaseMs === undefined ? {} : { serveLeaseMs: options.serveLeaseMs }),
    ...(options.claimLeaseMs === undefined ? {} : { claimLeaseMs: options.claimLeaseMs }),
  }
  switch (location.kind) {
    case 'memory': {
      const { createMemoryStore } = await import('tollgate')
      return createMemoryStore(leases)
    }
    case 'sqlite': {
      const { createSqliteStore } = await import('tollgate/stores/sqlite')
      return createSqliteStore({
        ...leases,
        database: location.file,
        table: location.table,
        ...(options.synchronous === undefined ? {} : { synchronous: options.synchronous }),
      })
    }
    case 'postgres': {
      const { createPostgresStore } = await import('tollgate/stores/postgres')
      return createPostgresStore({
        ...leases,
        connection: location.url,
        table: location.table,
        onError: options.onError,
      })
    }
    case 'redis': {
      const { createRedisStore } = await import('tollgate/stores/redis')
      return createRedisStore({
        ...leases,
        connection: location.url,
        keyPrefix: location.keyPrefix,
        onError: options.onError,
      })
    }
  }
}

function hostOf(url: string): string {
  try {
    const parsed = new URL(url)
    return `${parsed.host}${parsed.pathname === '/' ? '' : parsed.pathname}`
  } catch {
    return '(unparsable URL)'
  }
}
