/**
 * A child process for the cross-process replay test: opens a store on shared storage, waits for
 * `go`, claims every digest `claimsPerDigest` times at once, and reports how many claims it won.
 *
 * Run with `node --import tsx` (see `replay.int.test.ts`). Not part of the published package.
 *
 * @module
 */
import { createPostgresStore } from '../postgres.js'
import { createRedisStore } from '../redis.js'
import { createSqliteStore } from '../sqlite.js'
import type { PaymentStore } from '../types.js'

/** What the parent sends first. */
export type WorkerConfig = {
  backend: 'sqlite' | 'redis' | 'postgres'
  /** File path, redis URL or postgres URL. */
  connection: string
  /** Key prefix (redis) or schema (postgres). */
  namespace: string
  digests: string[]
  claimsPerDigest: number
  /**
   * `race` (default): claim every digest `claimsPerDigest` times at once and exit. `crash`: claim and
   * settle every digest, owe a refund with a recorded refund transaction for every second one,
   * report, then hang until killed (the parent sends SIGKILL).
   */
  mode?: 'race' | 'crash' | undefined
}

/** What the worker answers: per digest, how many of its claims were won, by outcome. */
export type WorkerReport = {
  claimed: Record<string, number>
  settledUnserved: Record<string, number>
  taken: number
}

function open(config: WorkerConfig): PaymentStore {
  switch (config.backend) {
    case 'sqlite':
      return createSqliteStore({ database: config.connection })
    case 'redis':
      return createRedisStore({ connection: config.connection, keyPrefix: config.namespace })
    case 'postgres':
      return createPostgresStore({
        connection: config.connection,
        schema: config.namespace,
        poolSize: 5,
      })
  }
}

async function run(config: WorkerConfig, store: PaymentStore): Promise<WorkerReport> {
  const report: WorkerReport = { claimed: {}, settledUnserved: {}, taken: 0 }
  const meta = { resource: 'https://api.example/paid', dialect: 'x402' } as const
  await Promise.all(
    config.digests.flatMap((digest) =>
      Array.from({ length: config.claimsPerDigest }, async () => {
        const result = await store.claim(digest, meta)
        if (result.status === 'claimed') report.claimed[digest] = (report.claimed[digest] ?? 0) + 1
        else if (result.status === 'settled_unserved') {
          report.settledUnserved[digest] = (report.settledUnserved[digest] ?? 0) + 1
        } else report.taken++
      }),
    ),
  )
  return report
}

async function crash(config: WorkerConfig, store: PaymentStore): Promise<WorkerReport> {
  const meta = { resource: 'https://api.example/paid', dialect: 'mpp' } as const
  for (const [i, digest] of config.digests.entries()) {
    await store.claim(digest, meta)
    await store.settled(digest, {
      payer: `0x${'ef'.repeat(32)}`,
      amount: 10_000n + BigInt(i),
      resource: meta.resource,
      dialect: meta.dialect,
      network: 'sui:mainnet',
      asset: '0x2::usdc::USDC',
      settledAt: new Date(),
    })
    if (i % 2 === 1) {
      await store.oweRefund(digest, 'handler failed')
      await store.recordRefundTransaction(digest, { txBytes: 'AAEC', refundDigest: `r${digest}` })
    }
  }
  // Stay alive with the store open: the parent kills this process without warning.
  setInterval(() => {}, 60_000)
  return { claimed: {}, settledUnserved: {}, taken: 0 }
}

process.once('message', (message) => {
  const config = message as WorkerConfig
  const store = open(config)
  // Touch the storage once (connect, migrate) before reporting ready, so that `go` starts a race.
  void store
    .get(config.digests[0] ?? 'warmup')
    .then(() => {
      process.once('message', () => {
        const work = config.mode === 'crash' ? crash(config, store) : run(config, store)
        work
          .then(async (report) => {
            if (config.mode === 'crash') {
              process.send?.({ type: 'report', report })
              return
            }
            await store.close()
            process.send?.({ type: 'report', report }, () => process.exit(0))
          })
          .catch((error: unknown) => {
            process.send?.({ type: 'error', error: String(error) }, () => process.exit(1))
          })
      })
      process.send?.({ type: 'ready' })
    })
    .catch((error: unknown) => {
      process.send?.({ type: 'error', error: String(error) }, () => process.exit(1))
    })
})
