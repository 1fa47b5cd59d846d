/**
 * Replay across processes: several OS processes share one backing storage and race to claim the
 * same payment digests. Exactly one claim per digest may win, whatever the process.
 */
import { type ChildProcess, fork } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Redis } from 'ioredis'
import pg from 'pg'
import { afterAll, describe, expect, test } from 'vitest'
import { testModule } from '../../scripts/cliUnderTest.js'
import { randomDigest, serviceUrl, uniqueName } from './contract.js'
import { createPostgresStore } from './postgres.js'
import { createRedisStore } from './redis.js'
import { createSqliteStore } from './sqlite.js'
import type { WorkerConfig, WorkerReport } from './testing/claimWorker.js'
import type { PaymentStore } from './types.js'

const workerPath = fileURLToPath(new URL('./testing/claimWorker.ts', import.meta.url))
const worker = testModule(workerPath)
const tsxInstalled = existsSync(
  fileURLToPath(new URL('../../node_modules/.bin/tsx', import.meta.url)),
)
const redisUrl = serviceUrl('REDIS_URL')
const databaseUrl = serviceUrl('DATABASE_URL')

const digestCount = 50
const claimsPerDigest = 200

type Message =
  | { type: 'ready' }
  | { type: 'report'; report: WorkerReport }
  | { type: 'error'; error: string }

function next(child: ChildProcess, type: Message['type']): Promise<Message> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: Message) => {
      child.off('exit', onExit)
      if (message.type === 'error') reject(new Error(`worker failed: ${message.error}`))
      else if (message.type !== type) reject(new Error(`expected ${type}, got ${message.type}`))
      else resolve(message)
    }
    const onExit = (code: number | null) => {
      child.off('message', onMessage)
      reject(new Error(`worker exited with ${code} before ${type}`))
    }
    child.once('message', onMessage)
    child.once('exit', onExit)
  })
}

/** Forks `processes` workers on the same storage, starts them together, and returns their reports. */
async function race(
  processes: number,
  config: Omit<WorkerConfig, 'claimsPerDigest'>,
): Promise<WorkerReport[]> {
  const children = Array.from({ length: processes }, () =>
    fork(worker.file, [], {
      execArgv: worker.execArgv,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    }),
  )
  try {
    const ready = children.map((child) => next(child, 'ready'))
    for (const child of children) {
      child.send({ ...config, claimsPerDigest: claimsPerDigest / processes } satisfies WorkerConfig)
    }
    await Promise.all(ready)
    const reports = children.map((child) => next(child, 'report'))
    const started = performance.now()
    for (const child of children) child.send('go')
    const done = (await Promise.all(reports)).map((m) => (m as { report: WorkerReport }).report)
    const ms = performance.now() - started
    const claims = config.digests.length * claimsPerDigest
    console.log(
      `${config.backend}: ${claims} claims from ${processes} processes in ${ms.toFixed(0)} ms (${Math.round((claims / ms) * 1000)}/s)`,
    )
    return done
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL')
  }
}

/**
 * Runs one worker in `crash` mode (settle, owe refunds, record refund transactions), kills it with
 * SIGKILL once it reports, then checks with a fresh store (its clock two hours on, so the dead
 * process's serve leases have run out) that nothing was lost.
 */
async function crashAndRecover(
  config: Omit<WorkerConfig, 'claimsPerDigest' | 'mode'>,
  reopen: (now: () => number) => PaymentStore,
) {
  const child = fork(worker.file, [], {
    execArgv: worker.execArgv,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  try {
    const ready = next(child, 'ready')
    child.send({ ...config, claimsPerDigest: 1, mode: 'crash' } satisfies WorkerConfig)
    await ready
    const report = next(child, 'report')
    child.send('go')
    await report
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGKILL')
    await exited
  }
  const store = reopen(() => Date.now() + 7_200_000)
  try {
    const owed = config.digests.filter((_, i) => i % 2 === 1)
    const unserved = config.digests.filter((_, i) => i % 2 === 0)
    const due = (await store.listRefundsDue({ limit: 1000 })).filter((r) =>
      config.digests.includes(r.digest),
    )
    expect(due.map((r) => r.digest).sort()).toEqual([...owed].sort())
    for (const record of due) {
      expect(record.refund?.transaction).toEqual({
        txBytes: 'AAEC',
        refundDigest: `r${record.digest}`,
      })
      const index = config.digests.indexOf(record.digest)
      expect(record.settlement?.amount).toBe(10_000n + BigInt(index))
    }
    const meta = { resource: 'https://api.example/paid', dialect: 'mpp' } as const
    for (const digest of unserved) {
      const results = await Promise.all([store.claim(digest, meta), store.claim(digest, meta)])
      expect(results.map((r) => r.status).sort()).toEqual(['settled_unserved', 'taken'])
      await store.served(digest)
    }
  } finally {
    await store.close()
  }
}

/** Exactly one win per digest across all processes, of the expected kind; every other claim taken. */
function expectOneWinner(
  reports: WorkerReport[],
  digests: string[],
  kind: 'claimed' | 'settledUnserved',
) {
  for (const digest of digests) {
    const wins = reports.map((r) => r[kind][digest] ?? 0)
    const other = kind === 'claimed' ? 'settledUnserved' : 'claimed'
    expect(
      wins.reduce((a, b) => a + b, 0),
      `wins for ${digest}`,
    ).toBe(1)
    expect(reports.map((r) => r[other][digest] ?? 0).reduce((a, b) => a + b, 0)).toBe(0)
  }
  const taken = reports.reduce((sum, r) => sum + r.taken, 0)
  expect(taken).toBe(digests.length * (claimsPerDigest - 1))
}

/** Settles digests with a clock an hour back, so their serve lease has run out (a crash). */
async function settleUnserved(store: PaymentStore, digests: string[]) {
  for (const digest of digests) {
    await store.claim(digest, { resource: 'https://api.example/paid', dialect: 'x402' })
    await store.settled(digest, {
      payer: `0x${'cd'.repeat(32)}`,
      amount: 10_000n,
      resource: 'https://api.example/paid',
      dialect: 'x402',
      network: 'sui:mainnet',
      asset: '0x2::usdc::USDC',
      settledAt: new Date(),
    })
  }
}

const anHourAgo = () => Date.now() - 3_600_000
const digests = () => Array.from({ length: digestCount }, randomDigest)
const crashDigests = () => Array.from({ length: 20 }, randomDigest)

describe.skipIf(!tsxInstalled)(
  'cross-process replay (skipped when node_modules/.bin/tsx is missing)',
  // Forking processes and 10 000 claims per test take a while on a loaded 2-core machine.
  { timeout: 180_000 },
  () => {
    describe('2 processes sharing one SQLite file', () => {
      const folder = mkdtempSync(join(tmpdir(), 'tollgate-replay-'))
      const path = join(folder, 'payments.db')
      afterAll(() => rmSync(folder, { recursive: true, force: true }))

      test('200 claims per digest over 50 digests: exactly one wins each', async () => {
        createSqliteStore({ database: path }).close()
        const list = digests()
        const reports = await race(2, {
          backend: 'sqlite',
          connection: path,
          namespace: '',
          digests: list,
        })
        expectOneWinner(reports, list, 'claimed')
        const store = createSqliteStore({ database: path })
        expect((await store.counts()).claimed).toBe(digestCount)
        await store.close()
      })

      test('settled but unserved payments re-presented from both processes are served once', async () => {
        const list = digests()
        const store = createSqliteStore({ database: path, now: anHourAgo })
        await settleUnserved(store, list)
        await store.close()
        const reports = await race(2, {
          backend: 'sqlite',
          connection: path,
          namespace: '',
          digests: list,
        })
        expectOneWinner(reports, list, 'settledUnserved')
      })

      test('a process killed (SIGKILL) after settling loses nothing: refunds kept, unserved served once', async () => {
        await crashAndRecover(
          { backend: 'sqlite', connection: path, namespace: '', digests: crashDigests() },
          (now) => createSqliteStore({ database: path, now }),
        )
      })
    })

    describe.skipIf(redisUrl === undefined)(
      '4 processes sharing Redis (skipped when REDIS_URL is not set)',
      () => {
        const keyPrefix = `${uniqueName('tg_replay')}:`
        afterAll(async () => {
          const redis = new Redis(redisUrl!)
          const keys = await redis.keys(`${keyPrefix}*`)
          if (keys.length > 0) await redis.del(...keys)
          await redis.quit()
        })

        test('200 claims per digest over 50 digests: exactly one wins each', async () => {
          const list = digests()
          const reports = await race(4, {
            backend: 'redis',
            connection: redisUrl!,
            namespace: keyPrefix,
            digests: list,
          })
          expectOneWinner(reports, list, 'claimed')
        })

        test('settled but unserved payments re-presented from 4 processes are served once', async () => {
          const list = digests()
          const store = createRedisStore({ connection: redisUrl!, keyPrefix, now: anHourAgo })
          await settleUnserved(store, list)
          await store.close()
          const reports = await race(4, {
            backend: 'redis',
            connection: redisUrl!,
            namespace: keyPrefix,
            digests: list,
          })
          expectOneWinner(reports, list, 'settledUnserved')
        })

        test('a process killed (SIGKILL) after settling loses nothing: refunds kept, unserved served once', async () => {
          await crashAndRecover(
            {
              backend: 'redis',
              connection: redisUrl!,
              namespace: keyPrefix,
              digests: crashDigests(),
            },
            (now) => createRedisStore({ connection: redisUrl!, keyPrefix, now }),
          )
        })
      },
    )

    describe.skipIf(databaseUrl === undefined)(
      '4 processes sharing PostgreSQL (skipped when DATABASE_URL is not set)',
      () => {
        const schema = uniqueName('tg_replay')
        afterAll(async () => {
          const pool = new pg.Pool({ connectionString: databaseUrl })
          await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
          await pool.end()
        })

        test('200 claims per digest over 50 digests: exactly one wins each', async () => {
          const store = createPostgresStore({ connection: databaseUrl!, schema })
          await store.counts() // migrate once before the race
          await store.close()
          const list = digests()
          const reports = await race(4, {
            backend: 'postgres',
            connection: databaseUrl!,
            namespace: schema,
            digests: list,
          })
          expectOneWinner(reports, list, 'claimed')
        })

        test('settled but unserved payments re-presented from 4 processes are served once', async () => {
          const list = digests()
          const store = createPostgresStore({ connection: databaseUrl!, schema, now: anHourAgo })
          await settleUnserved(store, list)
          await store.close()
          const reports = await race(4, {
            backend: 'postgres',
            connection: databaseUrl!,
            namespace: schema,
            digests: list,
          })
          expectOneWinner(reports, list, 'settledUnserved')
        })

        test('a process killed (SIGKILL) after settling loses nothing: refunds kept, unserved served once', async () => {
          await crashAndRecover(
            {
              backend: 'postgres',
              connection: databaseUrl!,
              namespace: schema,
              digests: crashDigests(),
            },
            (now) => createPostgresStore({ connection: databaseUrl!, schema, now }),
          )
        })
      },
    )
  },
)
