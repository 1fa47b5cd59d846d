/**
 * The channel stores the session tests run against, each able to open a second connection to the
 * same storage: memory and SQLite always, PostgreSQL when DATABASE_URL is set, Redis when REDIS_URL
 * is. Connections are closed after the file's tests.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import pg from 'pg'
import { afterAll } from 'vitest'
import { serviceUrl, uniqueName } from '../../stores/contract.js'
import { openSqliteDatabase } from '../../stores/sqlite.js'
import { type ChannelStore, createMemoryChannelStore } from '../channelStore.js'
import { createPostgresChannelStore } from '../postgresChannelStore.js'
import { createRedisChannelStore } from '../redisChannelStore.js'
import { createSqliteChannelStore } from '../sqliteChannelStore.js'

/** A store to test; `second()` opens another connection to the same storage (memory: the same). */
export type ChannelStoreKind = {
  name: string
  /** Whether `second()` is another connection (a process that can crash apart from the first). */
  durable: boolean
  open(): { store: ChannelStore; second(): ChannelStore }
}

/** The kinds, and the service URLs found (undefined: that store is not tested, say why). */
export function channelStoreKinds(): ChannelStoreKind[] & {
  databaseUrl: string | undefined
  redisUrl: string | undefined
} {
  const databaseUrl = serviceUrl('DATABASE_URL')
  const redisUrl = serviceUrl('REDIS_URL')
  const pools: pg.Pool[] = []
  const clients: Redis[] = []
  afterAll(async () => {
    await Promise.all(pools.map((pool) => pool.end()))
    for (const client of clients) client.disconnect()
  })

  const kinds: ChannelStoreKind[] = [
    {
      name: 'memory',
      durable: false,
      open() {
        const store = createMemoryChannelStore()
        return { store, second: () => store }
      },
    },
    {
      name: 'sqlite',
      durable: true,
      open() {
        const file = join(mkdtempSync(join(tmpdir(), 'tollgate-channels-')), 'channels.db')
        const store = createSqliteChannelStore({ database: openSqliteDatabase(file) })
        return {
          store,
          second: () => createSqliteChannelStore({ database: openSqliteDatabase(file) }),
        }
      },
    },
  ]
  if (databaseUrl !== undefined) {
    kinds.push({
      name: 'postgres',
      durable: true,
      open() {
        const tables = {
          channels: uniqueName('channels'),
          holds: uniqueName('holds'),
          vouchers: uniqueName('vouchers'),
        }
        // The previous open's connections are done with: closed, so that many opens fit the server.
        for (const pool of pools.splice(0)) void pool.end()
        // The first connection sends each statement after the last is answered, the second
        // pipelines them: both ways of sending a batch are tested, against each other.
        const connect = (pipeline = false) => {
          const pool = new pg.Pool({ connectionString: databaseUrl, max: 4, pipeline })
          pools.push(pool)
          return createPostgresChannelStore({ pool, ...tables })
        }
        return { store: connect(), second: () => connect(true) }
      },
    })
  }

  if (redisUrl !== undefined) {
    kinds.push({
      name: 'redis',
      durable: true,
      open() {
        const keyPrefix = `${uniqueName('channels')}:`
        for (const client of clients.splice(0)) client.disconnect()
        const connect = () => {
          const client = new Redis(redisUrl)
          clients.push(client)
          return createRedisChannelStore({ client, keyPrefix })
        }
        return { store: connect(), second: connect }
      },
    })
  }

  return Object.assign(kinds, { databaseUrl, redisUrl })
}
