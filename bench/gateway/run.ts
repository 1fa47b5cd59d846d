/**
 * `npx tsx bench/gateway/run.ts`: the reference gateway under load. Four processes, as in
 * production: the ledger emulator (a full node), the stub upstreams (the providers' APIs,
 * `bench/gateway/stubs.ts`), the gateway (`bench/gateway/server.ts`), and the buyers (this process).
 *
 * 1. Paid calls per second through the gateway (ledger latency 0, stub upstream with no delay) vs
 *    the same stub upstream called directly, at the same concurrency; the gateway's CPU per paid call.
 * 2. SSE time to first byte added by the gateway after settlement: (first byte at the buyer −
 *    the moment the payment settled in the gateway) − the direct upstream's time to first byte;
 *    medians.
 * 3. 1 000 concurrent paid calls at 400 ms settlement latency: wall time until all are answered.
 *    With it, the CPU every process spent during the burst, and the shortest wall time the machine's
 *    cores allow for that much work (their sum ÷ cores + the settlement latency): a wall time near
 *    that floor means nothing waits on anything but CPU.
 * 4. Peak RSS of the gateway process.
 *
 * Payments are signed before each timed run (one fresh wallet per payment), so buyer-side signing is
 * not measured. Before each timed part the gateway serves `BENCH_WARM` paid calls (default 3 000, 128
 * at a time), as the direct path is warmed up first too: a gateway in service has its code compiled,
 * and a fresh process's paid calls cost it more CPU for the first few thousand (in the burst: about
 * 4.0–4.6 ms each after 300, 3.4 ms after 1 500, 2.7–3.3 ms after 3 000). `BENCH_PARTS` picks
 * the parts (`rate` = 1 and 2, `burst` = 3; default both), `BENCH_STORE` the gateway's store (sqlite
 * or memory) and `BENCH_SQLITE_SYNCHRONOUS` the SQLite store's commits (normal, full). Prints a
 * markdown table.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdirSync, readFileSync } from 'node:fs'
import { Agent, request as httpRequest } from 'node:http'
import { availableParallelism, loadavg } from 'node:os'
import { SuiGrpcClient } from '@mysten/sui/grpc'
import { signTestPayment, x402PaymentHeader } from '../../src/testing/payments.js'
import { createTestWallet } from '../../src/testing/wallet.js'
import { parsePaymentRequired, x402Headers } from '../../src/x402.js'
import { startScript } from '../script.js'

const paidCalls = Number(process.env.BENCH_PAID ?? 300)
const directCalls = Number(process.env.BENCH_DIRECT ?? 3000)
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 32)
const sseRounds = Number(process.env.BENCH_SSE ?? 40)
const burst = Number(process.env.BENCH_BURST ?? 1000)
const warmCalls = Number(process.env.BENCH_WARM ?? 3000)
/** Which parts run: `rate` (1 and 2) and `burst` (3); both by default. */
const parts = (process.env.BENCH_PARTS ?? 'rate,burst').split(',')

const chatPath = '/openai/v1/chat/completions'
const chatBody = JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] })
const stubAuth = { authorization: 'Bearer stub-key' }
const streamBody = JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], stream: true })

type Gateway = {
  url: string
  payTo: string
  process: ChildProcess
  /** When the last payment settled in the gateway (epoch ms). */
  lastSettled(): Promise<number>
  usage(): Promise<{ cpuMs: number; maxRssMiB: number }>
}

type Setup = {
  /** The ledger's and the stub upstreams' processes. */
  helpers: { ledger: ChildProcess; stubs: ChildProcess }
  chainUrl: string
  client: SuiGrpcClient
  gateway: Gateway
  /** The stub upstreams' base URLs by provider segment. */
  stubs: Record<string, string>
  stop(): void
}

async function setup(latencyMs: number): Promise<Setup> {
  const chain = await startScript<{ url: string }>(new URL('../ledgerServer.ts', import.meta.url), {
    LATENCY_MS: String(latencyMs),
  })
  const stubs = await startScript<{ baseUrls: Record<string, string> }>(
    new URL('./stubs.ts', import.meta.url),
  )
  const started = await startScript<{ url: string; payTo: string }>(
    new URL('./server.ts', import.meta.url),
    { LEDGER_URL: chain.info.url, UPSTREAM_URLS: JSON.stringify(stubs.info.baseUrls) },
    true,
  )
  /** Sends `request` over IPC and resolves with the first answer that has `key`. */
  const ask = <T>(request: string, key: string) =>
    new Promise<T>((resolve) => {
      const onMessage = (message: unknown) => {
        if ((message as Record<string, unknown>)[key] === undefined) return
        started.process.off('message', onMessage)
        resolve(message as T)
      }
      started.process.on('message', onMessage)
      started.process.send(request)
    })
  const gateway: Gateway = {
    ...started.info,
    process: started.process,
    lastSettled: async () => (await ask<{ settled: number }>('settled', 'settled')).settled,
    usage: () => ask('cpu', 'cpuMs'),
  }
  return {
    helpers: { ledger: chain.process, stubs: stubs.process },
    chainUrl: chain.info.url,
    client: new SuiGrpcClient({ network: 'mainnet', baseUrl: chain.info.url }),
    gateway,
    stubs: stubs.info.baseUrls,
    stop() {
      started.process.kill('SIGTERM')
      stubs.process.kill('SIGTERM')
      chain.process.kill('SIGTERM')
    },
  }
}

function post(url: string, body: string, headers: Record<string, string> = {}) {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
  })
}

/**
 * Keep-alive connections of the buyers' timed calls, as many as are in flight; a fresh set for each
 * timed run ({@link freshConnections}), so that none is reused just as the server closes it idle.
 */
let buyersAgent = new Agent({ keepAlive: true })

/** Closes the buyers' idle connections; the next calls open new ones. */
function freshConnections() {
  buyersAgent.destroy()
  buyersAgent = new Agent({ keepAlive: true })
}

/**
 * A timed call: POST over Node's `http` (the buyers' side is the load generator, not what is
 * measured, and Node's `http` costs it a fraction of the CPU of `fetch`, which runs on the same
 * cores as the gateway). Answers the status once the whole body has arrived.
 */
function call(url: string, body: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const sent = httpRequest(
      url,
      {
        method: 'POST',
        agent: buyersAgent,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          ...headers,
        },
      },
      (response) => {
        // The body is kept only when the call failed, to say why.
        const chunks: Buffer[] = []
        response.on('data', (chunk: Buffer) => {
          if (response.statusCode !== 200) chunks.push(chunk)
        })
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            body: Buffer.concat(chunks).toString('utf8').slice(0, 300),
          }),
        )
        response.on('error', reject)
      },
    )
    sent.on('error', reject)
    sent.end(body)
  })
}

/** Signs `count` payments for the chat route, one fresh wallet each. */
async function presign(s: Setup, count: number, body = chatBody): Promise<string[]> {
  const url = `${s.gateway.url}${chatPath}`
  const headers: string[] = []
  const batch = 16
  for (let i = 0; i < count; i += batch) {
    const made = await Promise.all(
      Array.from({ length: Math.min(batch, count - i) }, async () => {
        const challenge = await post(url, body)
        const requirement = parsePaymentRequired(await challenge.json()).accepts[0]
        if (!requirement) throw new Error('no requirement')
        const { keypair: payer } = await createTestWallet({ url: s.chainUrl, usdc: '1', sui: '1' })
        return x402PaymentHeader(s.client, payer, requirement)
      }),
    )
    headers.push(...made)
  }
  return headers
}

/**
 * With `BENCH_PERF=1`, samples where the processes spend CPU during the burst with Linux `perf`
 * (`cpu-clock`: only time on a core counts, unlike a V8 profile, which also samples a process that
 * waits for a core or in a system call); the processes run with `--perf-basic-prof` for the
 * JavaScript names (set `NODE_OPTIONS=--perf-basic-prof`; V8 then also leaves `isolate-*-v8.log`
 * files in the working folder, which git ignores). Writes `.data/profiles/burst.perf.data`; read it
 * with `perf report -i .data/profiles/burst.perf.data --no-children --sort pid,sym`.
 */
async function recordCpu(processes: ChildProcess[]) {
  if (process.env.BENCH_PERF !== '1') return undefined
  mkdirSync('.data/profiles', { recursive: true })
  const perf = spawn(
    'perf',
    ['record', '-e', 'cpu-clock', '-F', '999', '-g', '-o', '.data/profiles/burst.perf.data'].concat(
      ['-p', processes.map((child) => child.pid).join(',')],
    ),
    { stdio: 'ignore' },
  )
  await new Promise((resolve) => setTimeout(resolve, 300))
  return {
    stop: () =>
      new Promise<void>((resolve) => {
        perf.once('exit', () => resolve())
        perf.kill('SIGINT')
      }),
  }
}

/** Serves `warmCalls` paid calls through the gateway, 128 at a time. */
async function warmUp(s: Setup): Promise<void> {
  const payments = await presign(s, warmCalls)
  const url = `${s.gateway.url}${chatPath}`
  await pool(warmCalls, 128, async (i) =>
    expectStatus(await call(url, chatBody, { [x402Headers.payment]: payments[i] as string }), 200),
  )
}

/**
 * CPU time (user + system, ms) a child process has used so far, from `/proc` (Linux); NaN elsewhere.
 * `mainThreadOnly`: its main thread's alone (JavaScript runs there; V8's compiler and garbage
 * collector threads do the rest).
 */
function cpuMsOf(child: ChildProcess, mainThreadOnly = false): number {
  try {
    const path = mainThreadOnly
      ? `/proc/${child.pid}/task/${child.pid}/stat`
      : `/proc/${child.pid}/stat`
    const stat = readFileSync(path, 'utf8')
    // Fields after the command name (which is in parentheses): utime and stime are the 12th and 13th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicksPerSecond
  } catch {
    return Number.NaN
  }
}

/** Linux's USER_HZ, the unit of `/proc/<pid>/stat` times: 100 on every mainstream platform. */
const clockTicksPerSecond = 100

/** Runs `tasks` with at most `limit` in flight; answers the wall time in ms. */
async function pool(count: number, limit: number, task: (i: number) => Promise<void>) {
  freshConnections()
  let next = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: Math.min(limit, count) }, async () => {
      while (next < count) await task(next++)
    }),
  )
  return performance.now() - started
}

function expectStatus(response: { status: number; body?: string }, status: number) {
  if (response.status !== status)
    throw new Error(`expected ${status}, got ${response.status}: ${response.body ?? ''}`)
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
}

async function firstByte(response: Response): Promise<number> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader()
  await reader.read()
  const at = performance.now()
  while (!(await reader.read()).done) {
    // drain
  }
  return at
}

const rows: [string, string][] = []
/** The machine's one-minute load average when the run began: other work on the two cores shows here. */
const startLoad = (loadavg()[0] ?? Number.NaN).toFixed(2)

/** This process's (the buyers') CPU time so far, ms. */
const buyersCpuMs = () => {
  const { user, system } = process.cpuUsage()
  return (user + system) / 1000
}

// 1 + 2: throughput and SSE at ledger latency 0.
if (parts.includes('rate')) {
  const s = await setup(0)
  const direct = `${s.stubs.openai}/chat/completions`
  await pool(200, concurrency, async () =>
    expectStatus(await call(direct, chatBody, stubAuth), 200),
  )
  const directMs = await pool(directCalls, concurrency, async () =>
    expectStatus(await call(direct, chatBody, stubAuth), 200),
  )
  await warmUp(s)
  const payments = await presign(s, paidCalls)
  const gatewayUrl = `${s.gateway.url}${chatPath}`
  const cpuBefore = (await s.gateway.usage()).cpuMs
  const paidMs = await pool(paidCalls, concurrency, async (i) =>
    expectStatus(
      await call(gatewayUrl, chatBody, { [x402Headers.payment]: payments[i] as string }),
      200,
    ),
  )
  const cpuPerCall = ((await s.gateway.usage()).cpuMs - cpuBefore) / paidCalls
  // The ledger alone: the same kind of signed transfers executed directly, same concurrency.
  const usdcType = '0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC'
  const transfers: { bytes: Uint8Array; signature: string }[] = []
  for (let i = 0; i < paidCalls; i++) {
    const { keypair } = await createTestWallet({ url: s.chainUrl, usdc: '1', sui: '1' })
    transfers.push(
      await signTestPayment(s.client, keypair, {
        to: s.gateway.payTo,
        amount: 20_000n,
        coinType: usdcType,
      }),
    )
  }
  const ledgerMs = await pool(paidCalls, concurrency, async (i) => {
    const signed = transfers[i] as { bytes: Uint8Array; signature: string }
    await s.client.core.executeTransaction({
      transaction: signed.bytes,
      signatures: [signed.signature],
    })
  })
  rows.push([
    'ledger emulator alone: signed transfers executed/s',
    ((paidCalls / ledgerMs) * 1000).toFixed(0),
  ])
  const directRate = (directCalls / directMs) * 1000
  const paidRate = (paidCalls / paidMs) * 1000
  rows.push(['direct stub upstream, calls/s', directRate.toFixed(0)])
  rows.push(['paid calls/s through the gateway (ledger latency 0)', paidRate.toFixed(0)])
  rows.push(["gateway process's CPU per paid call (ms)", cpuPerCall.toFixed(2)])

  const directTtfb: number[] = []
  for (let i = 0; i < sseRounds; i++) {
    const started = performance.now()
    const response = await post(direct, streamBody, stubAuth)
    directTtfb.push((await firstByte(response)) - started)
  }
  const streamPayments = await presign(s, sseRounds, streamBody)
  const added: number[] = []
  const total: number[] = []
  for (let i = 0; i < sseRounds; i++) {
    const started = performance.now()
    const response = await post(gatewayUrl, streamBody, {
      [x402Headers.payment]: streamPayments[i] as string,
    })
    if (response.status !== 200) throw new Error(`stream answered ${response.status}`)
    const at = await firstByte(response)
    const settled = await s.gateway.lastSettled()
    total.push(at - started)
    added.push(performance.timeOrigin + at - settled)
  }
  const directMedian = median(directTtfb)
  rows.push(['SSE TTFB direct (median, ms)', directMedian.toFixed(2)])
  rows.push([
    'SSE TTFB through the gateway incl. settlement (median, ms)',
    median(total).toFixed(2),
  ])
  rows.push([
    'SSE TTFB added by the gateway after settlement (median, ms; target ≤ 2)',
    (median(added) - directMedian).toFixed(2),
  ])
  s.stop()
}

// 3: a burst of concurrent paid calls at 400 ms settlement latency.
if (parts.includes('burst')) {
  const s = await setup(400)
  await warmUp(s)
  const payments = await presign(s, burst)
  const gatewayUrl = `${s.gateway.url}${chatPath}`
  const cpuBefore = (await s.gateway.usage()).cpuMs
  const othersBefore = [cpuMsOf(s.helpers.ledger), cpuMsOf(s.helpers.stubs), buyersCpuMs()]
  const mainBefore = cpuMsOf(s.gateway.process, true)
  freshConnections()
  const recording = await recordCpu([s.gateway.process, s.helpers.ledger, s.helpers.stubs])
  const started = performance.now()
  const answers = await Promise.all(
    payments.map((payment) => call(gatewayUrl, chatBody, { [x402Headers.payment]: payment })),
  )
  const wall = performance.now() - started
  await recording?.stop()
  const gatewayMainCpu = cpuMsOf(s.gateway.process, true) - mainBefore
  const [ledgerCpu, stubsCpu, buyersCpu] = [
    cpuMsOf(s.helpers.ledger),
    cpuMsOf(s.helpers.stubs),
    buyersCpuMs(),
  ].map((after, i) => after - (othersBefore[i] as number)) as [number, number, number]
  const usage = await s.gateway.usage()
  const failed = answers.filter((answer) => answer.status !== 200)
  const ok = burst - failed.length
  for (const answer of failed.slice(0, 5)) console.error(`burst: ${answer.status} ${answer.body}`)
  rows.push([
    `${burst} concurrent paid calls at 400 ms settlement: wall time (ms; target ≤ 2 500)`,
    `${wall.toFixed(0)} (${ok}/${burst} answered 200)`,
  ])
  const gatewayCpu = usage.cpuMs - cpuBefore
  const totalCpu = gatewayCpu + ledgerCpu + stubsCpu + buyersCpu
  const cores = availableParallelism()
  rows.push([
    "gateway process's CPU during the burst (ms): all threads · its main thread",
    `${gatewayCpu.toFixed(0)} · ${gatewayMainCpu.toFixed(0)}`,
  ])
  rows.push([
    'CPU of the other processes during the burst (ms): ledger emulator · stub upstreams · buyers',
    `${ledgerCpu.toFixed(0)} · ${stubsCpu.toFixed(0)} · ${buyersCpu.toFixed(0)}`,
  ])
  rows.push([
    `shortest wall time this machine allows: all four processes' CPU ÷ ${cores} cores + 400 ms (ms)`,
    (totalCpu / cores + 400).toFixed(0),
  ])
  rows.push(['peak RSS of the gateway process (MiB)', usage.maxRssMiB.toFixed(0)])
  s.stop()
}

console.log(
  `Node ${process.version}, ${concurrency} concurrent buyers; ledger, stub upstreams, gateway and buyers in four processes; load average before the run ${startLoad}\n`,
)
console.log('| measurement | value |')
console.log('|---|---:|')
for (const [name, value] of rows) console.log(`| ${name} | ${value} |`)
process.exit(0)
