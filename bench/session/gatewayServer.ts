/**
 * The gateway of `bench/session/gateway.ts`, in its own process: the reference gateway's embedded
 * default — its own ledger emulator (every transaction committed after `LEDGER_LATENCY_MS`, default
 * 400), sessions on, stub upstreams — with the catalog's providers at `UPSTREAM_URLS` (the stub
 * upstreams' process) and its keyless model the embedded default's, served by the model server at
 * `MODEL_URL` (its own process). `BENCH_STORE` is `sqlite` (a temporary folder) or `postgres`
 * (`DATABASE_URL`; tables and schema named for this process, dropped at the end).
 *
 * The same gateway also listens on a second port, where its paid routes are served unpaid: the
 * same app, stores and upstreams, with the gateway's `pay` option set to `passThrough`
 * (`./passThrough.ts`), which picks the requests that came in on that port — the body read and
 * checked as the paywall does before a payment, then the route's handler without any payment (the
 * keyless route's stream unmetered). That port is the runner's unpaid baseline of a route.
 *
 * Prints one JSON line: the gateway's URL, its unpaid twin's URL, the ledger's URL, the channel
 * package and registry, a funded buyer's secret key. Answers on stdin, one JSON line each: `count`
 * with the ledger's executed transactions so far; `upstream` with the last request the gateway
 * sent upstream (URL, method, headers, body), which the runner replays straight to the upstream as
 * a reference (the upstream alone); `cpu` with this process's CPU time so far (user and system, µs).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import pg from 'pg'
import { createNodeFetch } from 'tollgate/node'
import { loadConfig } from '../../reference-gateway/config.js'
import { defaultModel } from '../../reference-gateway/inference/models.js'
import { listenGateway } from '../../reference-gateway/server/listen.js'
import { startGateway } from '../../reference-gateway/server/server.js'
import { createCleanups } from '../../reference-gateway/server/shutdown.js'
import { passThrough } from './passThrough.js'

const store = process.env.BENCH_STORE ?? 'sqlite'
const databaseUrl = process.env.DATABASE_URL
if (store === 'postgres' && databaseUrl === undefined) {
  throw new Error('BENCH_STORE=postgres needs DATABASE_URL')
}
const suffix = `${process.pid}_${Date.now()}`
const storePrefix = `bench_session_${suffix}`
const folder = mkdtempSync(join(tmpdir(), 'tollgate-bench-session-gateway-'))

type Sent = { url: string; method: string; headers: Record<string, string>; body: string | null }
let lastSent: Sent | undefined
const upstreamFetch = createNodeFetch({ maxBufferedBytes: 64 * 1024 * 1024 })
/** The gateway's upstream `fetch`, remembering the last request (the runner's direct reference). */
const recording: typeof fetch = (input, init = {}) => {
  const body = init.body
  lastSent = {
    url: String(input instanceof Request ? input.url : input),
    method: init.method ?? 'GET',
    headers: Object.fromEntries(new Headers(init.headers).entries()),
    body:
      typeof body === 'string'
        ? body
        : body instanceof Uint8Array
          ? Buffer.from(body).toString()
          : null,
  }
  return upstreamFetch(input, init)
}

/** The requests that came in on the unpaid port: served by `passThrough`, without payment. */
const unpaidRequests = new WeakSet<Request>()
const config = loadConfig({
  env: {},
  overrides: {
    port: 0,
    upstreams: 'stub',
    upstreamUrls: JSON.parse(process.env.UPSTREAM_URLS ?? '{}') as Record<string, string>,
    inferenceModels: [defaultModel(process.env.MODEL_URL as string)],
    emulatorLatencyMs: Number(process.env.LEDGER_LATENCY_MS ?? 400),
    store: store as 'sqlite',
    ...(store === 'postgres'
      ? { databaseUrl, databaseSchema: storePrefix, storePrefix }
      : { dataDir: folder }),
    rateLimitPerMinute: 1_000_000,
    // No scheduled settlement during the run: the transactions counted are the calls' own (the
    // default schedule's settlements are bounded in docs/benchmarks.md).
    sessionSweepIntervalMs: 3_600_000,
    logLevel: 'silent',
  },
})
const gateway = await startGateway({
  fetch: recording,
  config,
  pay: passThrough({ unpaid: (c) => unpaidRequests.has(c.req.raw) }),
})
// The unpaid twin: a second server like the gateway's own (`listenGateway`), on the same app.
const twinCleanups = createCleanups({
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  debug: () => undefined,
})
const twin = await listenGateway(config, twinCleanups)
twin.serve((request, env) => {
  unpaidRequests.add(request)
  return gateway.gateway.app.fetch(request, env as never)
})
const emulator = gateway.emulator
if (emulator === undefined || gateway.sessions === undefined) {
  throw new Error('the embedded default has its emulator and offers sessions')
}
const buyer = emulator.createTestWallet({ usdc: '1000', sui: '10' })
process.stdout.write(
  `${JSON.stringify({
    url: gateway.url,
    unpaidUrl: twin.url,
    ledgerUrl: emulator.url,
    package: gateway.sessions.package,
    registry: gateway.sessions.registry,
    buyerKey: buyer.getSecretKey(),
  })}\n`,
)
createInterface({ input: process.stdin }).on('line', (line) => {
  const cpu = process.cpuUsage()
  const answer =
    line === 'upstream'
      ? { upstream: lastSent }
      : line === 'cpu'
        ? { cpuUs: cpu.user + cpu.system }
        : { transactions: emulator.engine.state.transactions.size }
  process.stdout.write(`${JSON.stringify(answer)}\n`)
})

/** Drops what this run wrote to PostgreSQL: its schema and its payment and channel tables. */
async function dropTables(): Promise<void> {
  if (store !== 'postgres') return
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 })
  try {
    const { rows } = await pool.query<{ name: string }>(
      `SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE $1`,
      [`${storePrefix}%`],
    )
    for (const { name } of rows) await pool.query(`DROP TABLE IF EXISTS "${name}" CASCADE`)
    await pool.query(`DROP SCHEMA IF EXISTS "${storePrefix}" CASCADE`)
  } finally {
    await pool.end()
  }
}

process.once('SIGTERM', () => {
  void (async () => {
    await twinCleanups.run()
    await gateway.stop()
    await dropTables().catch(() => undefined)
    rmSync(folder, { recursive: true, force: true })
    process.exit(0)
  })()
})
