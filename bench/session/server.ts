/**
 * The seller of `bench/session/run.ts`, in its own process: the local ledger (every transaction
 * committed after `LEDGER_LATENCY_MS`, default 400, as on a real network) and a paywall on loopback
 * with `GET /free` (no price: the baseline), `GET /call` (0.01 USDC: x402, MPP charge, and an MPP
 * session), its channel books in `CHANNEL_STORE` (`memory`, `sqlite` — a file in a temporary
 * folder — or `postgres` at `DATABASE_URL`). Prints one JSON line: the URLs, the channel package,
 * a funded buyer's secret key; answers `count` on stdin with the ledger's transactions so far.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { serve } from '@hono/node-server'
import { SuiGrpcClient } from '@mysten/sui/grpc'
import pg from 'pg'
import {
  createLedger,
  createMemoryStore,
  createPaywall,
  Methods,
  Session,
} from '../../src/index.js'
import { openSqliteDatabase } from '../../src/stores/sqlite.js'
import { startLedger } from '../../src/testing/index.js'

const latencyMs = Number(process.env.LEDGER_LATENCY_MS ?? 400)
const kind = process.env.CHANNEL_STORE ?? 'memory'
let transactions = 0
const ledger = await startLedger({
  latencyMs,
  onCommit: () => {
    transactions++
  },
})

function channelStore(): Session.ChannelStore {
  if (kind === 'sqlite') {
    const folder = mkdtempSync(join(tmpdir(), 'tollgate-bench-session-'))
    return Session.createSqliteChannelStore({ database: openSqliteDatabase(join(folder, 'c.db')) })
  }
  if (kind === 'postgres') {
    const url = process.env.DATABASE_URL
    if (url === undefined) throw new Error('CHANNEL_STORE=postgres needs DATABASE_URL')
    const suffix = `${process.pid}_${Date.now()}`
    return Session.createPostgresChannelStore({
      pool: new pg.Pool({ connectionString: url, max: 8, pipeline: true }),
      channels: `bench_channels_${suffix}`,
      holds: `bench_holds_${suffix}`,
    })
  }
  return Session.createMemoryChannelStore()
}

const client = new SuiGrpcClient({ network: 'mainnet', baseUrl: ledger.url })
const payee = ledger.createTestWallet({ usdc: '0', sui: '10' })
const buyer = ledger.createTestWallet({ usdc: '1000', sui: '10' })
const session = Methods.createSessionMethod({
  client,
  signer: payee,
  package: ledger.modulesPackage,
  registry: ledger.channel.registry,
  store: channelStore(),
  network: 'mainnet',
})
const paywall = createPaywall({
  payTo: payee.toSuiAddress(),
  ledger: createLedger({ url: ledger.url }),
  store: createMemoryStore(),
  secrets: ['a-benchmark-challenge-secret-of-32-bytes'],
  methods: [...Methods.builtInMethods, session],
})
const answer = () => Response.json({ quote: 'EUR/USD 1.0832', at: '2026-11-27T12:00:00Z' })
const paid = paywall.protect({ price: '0.01' }, answer)
const server = serve({
  port: 0,
  hostname: '127.0.0.1',
  fetch: (request) => (new URL(request.url).pathname === '/free' ? answer() : paid(request)),
})
await new Promise((resolve) => server.once('listening', resolve))
const address = server.address()
const port = typeof address === 'object' && address !== null ? address.port : 0
console.log(
  JSON.stringify({
    url: `http://127.0.0.1:${port}`,
    ledgerUrl: ledger.url,
    package: ledger.modulesPackage,
    registry: ledger.channel.registry,
    buyerKey: buyer.getSecretKey(),
  }),
)
createInterface({ input: process.stdin }).on('line', () => {
  process.stdout.write(`${JSON.stringify({ transactions })}\n`)
})
// A clean exit on the runner's kill, so that a CPU profile (`BENCH_PROFILE`) is written.
process.once('SIGTERM', () => process.exit(0))
