/**
 * `npm run bench:session`: MPP sessions on the reference gateway's routes (issue 31), on a ledger
 * whose transactions take `LEDGER_LATENCY_MS` (default 400) to commit. Four processes: the stub
 * upstreams (`bench/gateway/stubs.ts`), the model server (`bench/inference/model.ts`, every reply
 * `BENCH_TOKENS` tokens long, default 2 000, one every `BENCH_TOKEN_MS`, default 1), the gateway
 * (`bench/session/gatewayServer.ts`: the embedded default, its own ledger emulator, sessions on),
 * once per store of `BENCH_STORES` (default `sqlite`, and `postgres` when `DATABASE_URL` is set),
 * and the buyers (this process: `createSessionFetch` and `createPayingFetch` of `tollgate/client`).
 *
 * Two routes: the catalog route `POST /exchangerate/v1/rates` (paid per call) and the keyless
 * inference route `POST /open/v1/chat/completions` (a session pays it per streamed token; its calls
 * here are streamed answers of `BENCH_CALL_TOKENS` tokens, default 16). The unpaid baseline of a
 * route is the same route of the same gateway served without payment: the gateway process listens
 * on a second port where its paid routes go through `bench/session/passThrough.ts` — the body read
 * and checked as the paywall does before a payment, then the same handler, upstream call and relay
 * (the keyless stream unmetered) — so "added" is the payment alone. For reference, the request the
 * gateway sent upstream for the route is also replayed from this process straight to the upstream
 * (the stub upstream, the model server): the "upstream direct" columns, the upstream alone.
 *
 * For each store and route, after a warm-up (the channel is opened then):
 * 1. calls/s at `BENCH_CONCURRENCY` in flight (default 32), `BENCH_CALLS` calls (default 2 000):
 *    unpaid, upstream direct, over one session (target ≥ 0.5× unpaid), and paid by MPP `charge`
 *    (`BENCH_CHARGE_CALLS`, default 16, one at a time: each waits for the ledger);
 * 2. latency added over an unpaid call, one call at a time, unpaid, session and upstream direct in
 *    turn, `BENCH_ROUNDS` rounds (default 300): the difference of the medians (target ≤ 1 ms), with
 *    its 95% interval from the rounds themselves (a paired bootstrap: how far the figure moves
 *    when the rounds are drawn again);
 * 3. ledger transactions per 1 000 calls over the session (its open and close counted, and any
 *    settlement of the gateway's schedule) and by `charge`, counted by the gateway's emulator;
 * 4. the gateway process's CPU per call in the calls/s runs, unpaid and over the session (a
 *    figure far steadier than a latency: what the payment costs the seller's process, without
 *    the database server's own), and the buyers' (this process's) in the same runs.
 * Then, on the keyless route, `BENCH_STREAMS` (default 16) answers of `BENCH_TOKENS` tokens paid per
 * token over the session, in turn with the same stream unpaid and upstream direct: the 99th
 * percentile of the gaps between tokens (target ≤ 5 ms added); and the time to the first token
 * (median, with its 95% interval; target ≤ 1 ms added over unpaid) of those answers and of
 * `BENCH_FIRST_TOKENS` (default 100) more, each read to its first token and then left — one
 * answer's time to its first token
 * varies by several ms, more than the target. The answers go in turns of four — unpaid, upstream
 * direct, per token, upstream direct — so that no answer through the gateway starts while the
 * gateway still winds down one it just served (an answer left at its first token).
 *
 * Prints markdown tables with the load average at the start and the end of each store's run.
 */
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SuiGrpcClient } from '@mysten/sui/grpc'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { createChannelBook, createPayingFetch, createSessionFetch } from 'tollgate/client'
import { defaultModelId } from '../../reference-gateway/inference/models.js'
import { startScript } from '../script.js'
import {
  added,
  ask,
  type Call,
  callCells,
  closeSession,
  compareCalls,
  firstTokenMs,
  load,
  median,
  medianDifferenceInterval,
  percentile,
  printCalls,
  settings,
  timed,
  tokenTimes,
} from './measure.js'

const streams = Number(process.env.BENCH_STREAMS ?? 16)
const firsts = Number(process.env.BENCH_FIRST_TOKENS ?? 100)
const streamTokens = Number(process.env.BENCH_TOKENS ?? 2000)
const callTokens = Number(process.env.BENCH_CALL_TOKENS ?? 16)
const tokenMs = process.env.BENCH_TOKEN_MS ?? '1'
const warm = 200

type Info = {
  url: string
  unpaidUrl: string
  ledgerUrl: string
  package: string
  registry: string
  buyerKey: string
}
type Sent = { url: string; method: string; headers: Record<string, string>; body: string | null }

const post = (body: unknown) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
})
const chat = (maxTokens: number) =>
  post({
    model: defaultModelId,
    messages: [{ role: 'user', content: 'Tell me a long story.' }],
    max_tokens: maxTokens,
    stream: true,
  })
const routes = [
  {
    name: 'catalog `POST /exchangerate/v1/rates`',
    path: '/exchangerate/v1/rates',
    init: post({ base: 'USD', symbols: ['EUR', 'JPY'] }),
    deposit: 100_000_000n,
  },
  {
    name: `keyless \`POST /open/v1/chat/completions\` (${callTokens} tokens streamed)`,
    path: '/open/v1/chat/completions',
    init: chat(callTokens),
    deposit: 10_000_000n,
  },
] as const

/** Headers that `fetch` sets itself. */
const ownHeaders = new Set(['host', 'content-length', 'connection', 'transfer-encoding'])
/** A call that replays the gateway's upstream request straight to the upstream (the reference). */
function direct(sent: Sent): Call {
  const headers = Object.fromEntries(
    Object.entries(sent.headers).filter(([name]) => !ownHeaders.has(name)),
  )
  return () => fetch(sent.url, { method: sent.method, headers, body: sent.body })
}

const upstreams = await startScript<{ baseUrls: Record<string, string> }>(
  new URL('../gateway/stubs.ts', import.meta.url),
)
const model = await startScript<{ baseUrl: string }>(
  new URL('../inference/model.ts', import.meta.url),
  { MODEL_REPLY_TOKENS: String(streamTokens), MODEL_TOKEN_INTERVAL_MS: tokenMs },
)
const callRows: string[] = []
const streamRows: string[] = []
try {
  for (const store of settings.stores) {
    const loadStart = load()
    const gateway = await startScript<Info>(new URL('./gatewayServer.ts', import.meta.url), {
      BENCH_STORE: store,
      LEDGER_LATENCY_MS: settings.latencyMs,
      UPSTREAM_URLS: JSON.stringify(upstreams.info.baseUrls),
      MODEL_URL: model.info.baseUrl,
    })
    const transactions = async () =>
      (await ask<{ transactions: number }>(gateway.process, 'count')).transactions
    const lastUpstream = async () => {
      const { upstream } = await ask<{ upstream: Sent | undefined }>(gateway.process, 'upstream')
      if (upstream === undefined) throw new Error('the gateway sent nothing upstream')
      return direct(upstream)
    }
    try {
      const info = gateway.info
      const signer = Ed25519Keypair.fromSecretKey(info.buyerKey)
      const client = new SuiGrpcClient({ network: 'mainnet', baseUrl: info.ledgerUrl })
      const folder = await mkdtemp(join(tmpdir(), 'tollgate-bench-book-'))
      const charge = createPayingFetch({
        signer,
        ledger: info.ledgerUrl,
        limits: false,
        prefer: 'mpp',
      })
      for (const route of routes) {
        let sent = 0
        /** The last refusal (402) of a paid request: why a close failed. */
        let refusal = ''
        const sessions = createSessionFetch({
          signer,
          client,
          pinned: [{ network: 'mainnet', package: info.package, registry: info.registry }],
          maxDeposit: 2n * route.deposit,
          deposit: () => route.deposit,
          book: createChannelBook(join(folder, `${route.path.replaceAll('/', '_')}.json`)),
          fetch: async (input, init) => {
            sent++
            const response = await fetch(input, init)
            if (response.status === 402 && new Headers(init?.headers).has('authorization')) {
              refusal = await response.clone().text()
            }
            return response
          },
        })
        const url = `${info.url}${route.path}`
        const unpaidUrl = `${info.unpaidUrl}${route.path}`
        const paid: Call = () => sessions.fetch(url, route.init)
        const unpaid: Call = () => fetch(unpaidUrl, route.init)

        // Warm-up: the channel opened, then the unpaid route and the upstream direct.
        const openBefore = await transactions()
        for (let i = 0; i < warm; i++) await timed(paid)
        const openTx = (await transactions()) - openBefore
        const upstream = await lastUpstream()
        for (let i = 0; i < warm; i++) await timed(unpaid)
        for (let i = 0; i < warm; i++) await timed(upstream)

        const compared = await compareCalls({
          unpaid,
          session: paid,
          charge: () => charge(url, route.init),
          reference: upstream,
          transactions,
          sent: () => sent,
          cpu: async () => (await ask<{ cpuUs: number }>(gateway.process, 'cpu')).cpuUs,
        })

        if (route.path === '/open/v1/chat/completions') {
          const long: Call = () => sessions.fetch(url, chat(streamTokens))
          const longUnpaid: Call = () => fetch(unpaidUrl, chat(streamTokens))
          await tokenTimes(long, streamTokens)
          const longUpstream = await lastUpstream()
          await tokenTimes(longUnpaid, streamTokens)
          await tokenTimes(longUpstream, streamTokens)
          const first = { unpaid: [] as number[], paid: [] as number[], upstream: [] as number[] }
          const gaps = { unpaid: [] as number[], paid: [] as number[], upstream: [] as number[] }
          // Each answer through the gateway follows one straight to the model: an answer through
          // the gateway right after another one left early would pay for winding that one down.
          const turn = [
            ['unpaid', longUnpaid],
            ['upstream', longUpstream],
            ['paid', long],
            ['upstream', longUpstream],
          ] as const
          for (let i = 0; i < streams; i++) {
            for (const [side, call] of turn) {
              const times = await tokenTimes(call, streamTokens)
              first[side].push(times.firstMs)
              gaps[side].push(...times.gaps)
            }
          }
          // The time to the first token varies by several ms from one answer to the next: more
          // samples, each answer read to its first token and then left.
          for (let i = 0; i < firsts; i++) {
            for (const [side, call] of turn) first[side].push(await firstTokenMs(call))
          }
          const ttft = {
            unpaid: median(first.unpaid),
            paid: median(first.paid),
            upstream: median(first.upstream),
          }
          // Each answer paid per token was measured in the same turn as one unpaid.
          const ttftInterval = medianDifferenceInterval(first.unpaid, first.paid)
          const p99 = {
            unpaid: percentile(gaps.unpaid, 0.99),
            paid: percentile(gaps.paid, 0.99),
            upstream: percentile(gaps.upstream, 0.99),
          }
          streamRows.push(
            `| ${store} | ${ttft.unpaid.toFixed(2)} / ${ttft.paid.toFixed(2)} (${added(ttft.paid - ttft.unpaid, ttftInterval)}) | ${p99.unpaid.toFixed(2)} / ${p99.paid.toFixed(2)} (+${(p99.paid - p99.unpaid).toFixed(2)}) | ${Math.max(...gaps.unpaid).toFixed(1)} / ${Math.max(...gaps.paid).toFixed(1)} | ${median(gaps.unpaid).toFixed(2)} / ${median(gaps.paid).toFixed(2)} | ${ttft.upstream.toFixed(2)} / ${p99.upstream.toFixed(2)} | ${loadStart} → ${load()} |`,
          )
          // Each row as soon as it is measured: a later failure loses none.
          console.error(streamRows.at(-1))
        }

        const closeTx = await closeSession(sessions, transactions).catch((error: unknown) => {
          console.error(`${store} ${route.path}: the close failed (${error}): ${refusal}`)
          return Number.NaN
        })
        callRows.push(
          `| ${store} | ${route.name} ${callCells(compared, openTx + closeTx)} ${loadStart} → ${load()} |`,
        )
        console.error(callRows.at(-1))
      }
    } finally {
      gateway.process.kill()
      await new Promise((resolve) => gateway.process.once('exit', resolve))
    }
  }
} finally {
  upstreams.process.kill()
  model.process.kill()
}

printCalls(['store', 'route'], callRows, {
  note: ` ${streams} streams of ${streamTokens} tokens, one every ${tokenMs} ms, each way. Unpaid: the same gateway route served without payment (its unpaid port). Upstream direct: the gateway's upstream request sent straight to the upstream (reference).`,
  reference: 'upstream direct',
  cpu: true,
})
console.log(
  `\n| store | ${streamTokens}-token stream: ms to first token (median of ${streams + firsts} answers), unpaid / per token (added, 95% interval) | p99 ms between tokens, unpaid / per token (added) | longest gap ms, unpaid / per token | median ms between tokens | upstream direct: ms to first token / p99 ms between tokens | load average |`,
)
console.log('|---|---:|---:|---:|---:|---:|---|')
for (const row of streamRows) console.log(row)
