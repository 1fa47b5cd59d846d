/**
 * A child process of `channelStore.processes.int.test.ts`: opens its own connection to the shared
 * store, holds `count` times at once on one channel, commits every hold it got, and reports how
 * many it got. Arguments come as JSON in `process.argv[2]`.
 */
import { Redis } from 'ioredis'
import pg from 'pg'
import { createPostgresChannelStore } from '../postgresChannelStore.js'
import { createRedisChannelStore } from '../redisChannelStore.js'

type Job = {
  kind: 'postgres' | 'redis'
  url: string
  names: { channels: string; holds: string; vouchers: string; keyPrefix: string }
  channelId: string
  price: string
  count: number
}

const job = JSON.parse(process.argv[2] ?? '{}') as Job
const pool =
  job.kind === 'postgres' ? new pg.Pool({ connectionString: job.url, max: 8 }) : undefined
const redis = job.kind === 'redis' ? new Redis(job.url) : undefined
const store =
  pool !== undefined
    ? createPostgresChannelStore({
        pool,
        channels: job.names.channels,
        holds: job.names.holds,
        vouchers: job.names.vouchers,
      })
    : createRedisChannelStore({ client: redis as Redis, keyPrefix: job.names.keyPrefix })

const attempts = await Promise.all(
  Array.from({ length: job.count }, () =>
    store.hold(job.channelId, BigInt(job.price), crypto.randomUUID(), Date.now() + 60_000),
  ),
)
let committed = 0
for (const attempt of attempts) {
  if (attempt.status === 'held' && (await store.commit(attempt.holdId))) committed++
}
process.stdout.write(JSON.stringify({ committed }))
await pool?.end()
redis?.disconnect()
