/**
 * Two seller processes on one channel, on PostgreSQL and on Redis: each holds at once many times
 * the price of a call and commits what it got; together they never spend more than the highest
 * voucher covers. Skipped (with the reason) when the service's URL is not set.
 */
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { Redis } from 'ioredis'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { testModule } from '../../scripts/cliUnderTest.js'
import { serviceUrl, uniqueName } from '../stores/contract.js'
import type { ChannelStore } from './channelStore.js'
import { createPostgresChannelStore } from './postgresChannelStore.js'
import { createRedisChannelStore } from './redisChannelStore.js'

const run = promisify(execFile)
const holder = testModule(fileURLToPath(new URL('./testing/holdWorker.ts', import.meta.url)))
const databaseUrl = serviceUrl('DATABASE_URL')
const redisUrl = serviceUrl('REDIS_URL')
const closers: (() => unknown)[] = []
afterAll(async () => {
  for (const close of closers) await close()
})

const names = {
  channels: uniqueName('channels'),
  holds: uniqueName('holds'),
  vouchers: uniqueName('vouchers'),
  keyPrefix: `${uniqueName('channels')}:`,
}
const channelId = `0x${'d'.repeat(64)}`
const price = 7n
/** The voucher covers this many calls; the two processes try 40 each. */
const covered = 25n

async function twoProcesses(kind: 'postgres' | 'redis', url: string, store: ChannelStore) {
  await store.track({
    channelId,
    payer: `0x${'a'.repeat(64)}`,
    payee: `0x${'b'.repeat(64)}`,
    coinType: '0x2::sui::SUI',
    signer: 'cd'.repeat(32),
    deposit: 1_000_000n,
    settled: 0n,
  })
  await store.acceptVoucher(channelId, covered * price, 'v')
  const job = { kind, url, names, channelId, price: price.toString(), count: 40 }
  const outputs = await Promise.all(
    [1, 2].map(() =>
      run(process.execPath, [...holder.execArgv, holder.file, JSON.stringify(job)], {
        timeout: 60_000,
      }),
    ),
  )
  const committed = outputs.map((o) => (JSON.parse(o.stdout) as { committed: number }).committed)
  expect(committed[0]! + committed[1]!).toBe(Number(covered))
  expect(await store.get(channelId)).toMatchObject({
    spent: covered * price,
    held: 0n,
    units: covered,
  })
}

describe.skipIf(databaseUrl === undefined)(
  'two processes on PostgreSQL (skipped when DATABASE_URL is not set)',
  () => {
    it('never spend more than the voucher covers', async () => {
      const pool = new pg.Pool({ connectionString: databaseUrl, max: 4 })
      closers.push(() => pool.end())
      const store = createPostgresChannelStore({ pool, ...names })
      await twoProcesses('postgres', databaseUrl as string, store)
    })
  },
)

describe.skipIf(redisUrl === undefined)(
  'two processes on Redis (skipped when REDIS_URL is not set)',
  () => {
    it('never spend more than the voucher covers', async () => {
      const client = new Redis(redisUrl as string)
      closers.push(() => client.disconnect())
      const store = createRedisChannelStore({ client, keyPrefix: names.keyPrefix })
      await twoProcesses('redis', redisUrl as string, store)
    })
  },
)
