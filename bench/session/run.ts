/**
 * `npx tsx bench/session/run.ts`: paid calls over one MPP session against the same route unpaid and
 * paid by one ledger transaction per call (MPP `charge`), on a ledger whose transactions take
 * `LEDGER_LATENCY_MS` (default 400) to commit, as on a real network. Two processes: the seller
 * (`bench/session/server.ts`: the local ledger and a paywall, its channel books in SQLite, and in
 * PostgreSQL when `DATABASE_URL` is set; `BENCH_STORES=sqlite,postgres,memory` to choose) and the
 * buyer (this process: `createSessionFetch` and `createPayingFetch` from `tollgate/client`).
 *
 * For each store, after a warm-up (the channel is opened then):
 * 1. calls/s at `BENCH_CONCURRENCY` in flight (default 32), `BENCH_CALLS` calls (default 2 000):
 *    unpaid, over the session (ratio to unpaid: target ≥ 0.5×), and paid by `charge`
 *    (`BENCH_CHARGE_CALLS`, default 16, at `BENCH_CHARGE_CONCURRENCY`, default 1: each waits for
 *    the ledger, and the buyer client's concurrent charges from one wallet can build the same
 *    transaction, refused as a replay);
 * 2. latency added over an unpaid call, one call at a time, alternating, `BENCH_ROUNDS` rounds
 *    (default 300): the difference of the medians (target ≤ 1 ms);
 * 3. ledger transactions per 1 000 calls over the session (the open and the close counted) and by
 *    `charge`; requests sent per session call (a voucher that arrives after a later one is refused
 *    as stale and the call paid again).
 *
 * Prints a markdown table with the load average at the start and the end of each store's run.
 */
import { mkdtemp } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { SuiGrpcClient } from '@mysten/sui/grpc'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { createChannelBook, createPayingFetch, createSessionFetch } from '../../src/client/index.js'
import { startScript } from '../script.js'

const calls = Number(process.env.BENCH_CALLS ?? 2000)
const chargeCalls = Number(process.env.BENCH_CHARGE_CALLS ?? 16)
const chargeConcurrency = Number(process.env.BENCH_CHARGE_CONCURRENCY ?? 1)
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 32)
const rounds = Number(process.env.BENCH_ROUNDS ?? 300)
const latencyMs = process.env.LEDGER_LATENCY_MS ?? '400'
const stores = (
  process.env.BENCH_STORES ?? (process.env.DATABASE_URL ? 'sqlite,postgres' : 'sqlite')
).split(',')

type Info = { url: string; ledgerUrl: string; package: string; registry: string; buyerKey: string }

const load = () => loadavg()[0]?.toFixed(2) ?? '?'
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
}

/** Runs `count` calls of `call`, `concurrency` at a time; calls/s. Every answer must be 200. */
async function rate(
  count: number,
  call: () => Promise<Response>,
  inFlight = concurrency,
): Promise<number> {
  let next = 0
  const started = performance.now()
  const worker = async () => {
    while (next < count) {
      next++
      const response = await call()
      await response.arrayBuffer()
      if (response.status !== 200) throw new Error(`answered ${response.status}`)
    }
  }
  await Promise.all(Array.from({ length: Math.min(inFlight, count) }, worker))
  return count / ((performance.now() - started) / 1000)
}

async function timed(call: () => Promise<Response>): Promise<number> {
  const started = performance.now()
  const response = await call()
  await response.arrayBuffer()
  if (response.status !== 200) throw new Error(`answered ${response.status}`)
  return performance.now() - started
}

const rows: string[] = []
for (const store of stores) {
  const loadStart = load()
  const seller = await startScript<Info>(new URL('./server.ts', import.meta.url), {
    CHANNEL_STORE: store,
    LEDGER_LATENCY_MS: latencyMs,
  })
  const transactions = async () => {
    const stdin = seller.process.stdin
    const stdout = seller.process.stdout
    if (stdin === null || stdout === null) throw new Error('no pipe to the seller')
    const line = new Promise<string>((resolve) =>
      stdout.once('data', (chunk: Buffer) => resolve(chunk.toString())),
    )
    stdin.write('count\n')
    return (JSON.parse(await line) as { transactions: number }).transactions
  }
  try {
    const { url, ledgerUrl } = seller.info
    const signer = Ed25519Keypair.fromSecretKey(seller.info.buyerKey)
    const client = new SuiGrpcClient({ network: 'mainnet', baseUrl: ledgerUrl })
    let sent = 0
    const counting: typeof fetch = (input, init) => {
      sent++
      return fetch(input, init)
    }
    const sessions = createSessionFetch({
      signer,
      client,
      pinned: [
        { network: 'mainnet', package: seller.info.package, registry: seller.info.registry },
      ],
      maxDeposit: 500_000_000n,
      deposit: () => 200_000_000n,
      book: createChannelBook(
        join(await mkdtemp(join(tmpdir(), 'tollgate-bench-book-')), 's.json'),
      ),
      fetch: counting,
    })
    const charge = createPayingFetch({ signer, ledger: ledgerUrl, limits: false, prefer: 'mpp' })
    const free = () => fetch(`${url}/free`)
    const paidBySession = () => sessions.fetch(`${url}/call`)

    // Warm-up: both paths, and the channel opened.
    for (let i = 0; i < 200; i++) await (await free()).arrayBuffer()
    for (let i = 0; i < 200; i++) await (await paidBySession()).arrayBuffer()

    const unpaidRate = await rate(calls, free)
    const txBefore = await transactions()
    sent = 0
    const sessionRate = await rate(calls, paidBySession)
    const requestsPerCall = sent / calls
    const sessionTx = (await transactions()) - txBefore
    const chargeBefore = await transactions()
    const chargeRate = await rate(chargeCalls, () => charge(`${url}/call`), chargeConcurrency)
    const chargeTx = (await transactions()) - chargeBefore

    const unpaid: number[] = []
    const session: number[] = []
    for (let i = 0; i < rounds; i++) {
      unpaid.push(await timed(free))
      session.push(await timed(paidBySession))
    }
    const [channel] = (await sessions.list()).filter((c) => c.state === 'open')
    const closeBefore = await transactions()
    if (channel !== undefined) await sessions.close(channel.channelId)
    const closeTx = (await transactions()) - closeBefore
    // Per 1 000 session calls: the calls' own transactions, plus the open and the close once.
    const perThousand = ((sessionTx + 1 + closeTx) / calls) * 1000
    rows.push(
      `| ${store} | ${unpaidRate.toFixed(0)} | ${sessionRate.toFixed(0)} (${(sessionRate / unpaidRate).toFixed(2)}×) | ${chargeRate.toFixed(1)} (session ${(sessionRate / chargeRate).toFixed(0)}×) | ${median(unpaid).toFixed(2)} / ${median(session).toFixed(2)} (+${(median(session) - median(unpaid)).toFixed(2)}) | ${perThousand.toFixed(1)} / ${((chargeTx / chargeCalls) * 1000).toFixed(0)} | ${requestsPerCall.toFixed(2)} | ${loadStart} → ${load()} |`,
    )
  } finally {
    seller.process.kill()
  }
}

console.log(
  `\nLedger latency ${latencyMs} ms, ${calls} calls at ${concurrency} in flight (charge: ${chargeCalls} at ${chargeConcurrency}), ${rounds} sequential rounds.\n`,
)
console.log(
  '| channel store | unpaid calls/s | session calls/s (vs unpaid) | charge calls/s | median ms unpaid / session (added) | ledger tx per 1 000 calls: session / charge | requests per session call | load average |',
)
console.log('|---|---:|---:|---:|---:|---:|---:|---|')
for (const row of rows) console.log(row)
