/**
 * The packages the gateway loads that a seller's app does not need, so tollgate declares them as
 * optional peer dependencies instead of dependencies: Hono and its Node server, pino, prom-client,
 * and the driver of the payment store in use. `tollgate gateway` checks them before it starts and,
 * when some are missing, says in one line which `npm install` adds them.
 *
 * @module
 */
import type { GatewayConfig } from './config.js'
import type { StoreKind } from './server/server.js'

/** What every gateway loads, whatever its store. */
const always = ['hono', '@hono/node-server', 'pino', 'prom-client'] as const

/** The driver of each store (the memory store needs none). */
const drivers: Readonly<Record<StoreKind, string | undefined>> = {
  sqlite: 'better-sqlite3',
  postgres: 'pg',
  redis: 'ioredis',
  memory: undefined,
}

/**
 * The store a configuration selects: `STORE`, or with `auto` PostgreSQL when `DATABASE_URL` is set,
 * else Redis when `REDIS_URL` is set, else SQLite in the data folder.
 */
export function storeKindOf(config: Pick<GatewayConfig, 'store' | 'databaseUrl' | 'redisUrl'>) {
  if (config.store !== 'auto') return config.store
  if (config.databaseUrl !== undefined) return 'postgres'
  if (config.redisUrl !== undefined) return 'redis'
  return 'sqlite'
}

/** The optional peer dependencies a gateway with this configuration loads. */
export function gatewayPeers(
  config: Pick<GatewayConfig, 'store' | 'databaseUrl' | 'redisUrl'>,
): string[] {
  const driver = drivers[storeKindOf(config)]
  return driver === undefined ? [...always] : [...always, driver]
}

/**
 * Which of these packages cannot be loaded from here because they are not installed. A package
 * that is installed but fails to load (a missing package of its own, a broken native addon) is not
 * "missing": its error is thrown as it is.
 */
export async function missingPackages(names: readonly string[]): Promise<string[]> {
  const missing: string[] = []
  for (const name of names) {
    try {
      await import(name)
    } catch (error) {
      const code = (error as { code?: unknown }).code
      const notFound = code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND'
      if (!notFound || !String((error as Error).message).includes(`'${name}'`)) throw error
      missing.push(name)
    }
  }
  return missing
}

/** The one line that names the missing packages and the command that installs them. */
export function missingPeersMessage(missing: readonly string[]): string {
  return `tollgate gateway needs ${missing.join(', ')} (optional peer dependencies of tollgate, not installed): npm install ${missing.join(' ')}`
}
