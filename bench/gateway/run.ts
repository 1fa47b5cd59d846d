/**
 * `npx tsx bench/gateway/run.ts`: the reference gateway under load. The gateway, its stub upstreams
 * and the buyers share one process; the ledger emulator runs in its own (as a full node would).
 *
 * 1. Paid calls per second through the gateway (ledger latency 0, stub upstream with no delay) vs
 *    the same stub upstream called directly, at the same concurrency.
 * 2. SSE time to first byte added by the gateway after settlement: (first byte at the buyer −
 *    the moment the payment settled) − the direct upstream's time to first byte; medians.
 * 3. 1 000 concurrent paid calls at 400 ms settlement latency: wall time until all are answered.
 * 4. Peak RSS of the process (gateway, stubs and buyers; the ledger runs in its own process).
 *
 * Payments are signed before each timed run (one fresh wallet per payment), so buyer-side signing is
 * not measured. Prints a markdown table.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { SuiGrpcClient } from '@mysten/sui/grpc'
import { loadConfig } from '../../reference-gateway/config.js'
import { type RunningGateway, startGateway } from '../../reference-gateway/server.js'
import type { SellerEvent } from '../../src/seller.js'
import { signTestPayment, x402PaymentHeader } from '../../src/testing/payments.js'
import { createTestWallet } from '../../src/testing/wallet.js'
import { parsePaymentRequired, x402Headers } from '../../src/x402.js'

const paidCalls = Number(process.env.BENCH_PAID ?? 300)
const directCalls = Number(process.env.BENCH_DIRECT ?? 3000)
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 32)
const sseRounds = Number(process.env.BENCH_SSE ?? 40)
const burst = Number(process.env.BENCH_BURST ?? 1000)

const chatPath = '/openai/v1/chat/completions'
const chatBody = JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] })
const stubAuth = { authorization: 'Bearer stub-key' }
const streamBody = JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], stream: true })

type Chain = { url: string; stop(): void }

/** The ledger emulator in its own process (as a full node is in production). */
async function startChain(latencyMs: number): Promise<Chain> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', new URL('../ledger-server.ts', import.meta.url).pathname],
    { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, LATENCY_MS: String(latencyMs) } },
  )
  const line = await new Promise<string>((resolve) =>
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).once('line', resolve),
  )
  const { url } = JSON.parse(line) as { url: string }
  return { url, stop: () => child.kill('SIGTERM') }
}

type Setup = {
  chain: Chain
  client: SuiGrpcClient
  gateway: RunningGateway
  folder: string
  settledAt: number[]
}

async function setup(latencyMs: number): Promise<Setup> {
  const chain = await startChain(latencyMs)
  const client = new SuiGrpcClient({ network: 'mainnet', baseUrl: chain.url })
  const folder = mkdtempSync(join(tmpdir(), 'tollgate-bench-gateway-'))
  const settledAt: number[] = []
  const gateway = await startGateway({
    config: loadConfig({
      env: {},
      overrides: {
        port: 0,
        ledgerUrl: chain.url,
        operatorKey: (
          await createTestWallet({ url: chain.url, usdc: '10', sui: '10' })
        ).keypair.getSecretKey(),
        upstreams: 'stub',
        store: (process.env.BENCH_STORE ?? 'sqlite') as 'sqlite',
        dataDir: folder,
        logLevel: 'silent',
      },
    }),
    onEvent: (event: SellerEvent) => {
      if (event.type === 'settled') settledAt.push(performance.now())
    },
  })
  return { chain, client, gateway, folder, settledAt }
}

async function teardown(s: Setup) {
  await s.gateway.stop()
  s.chain.stop()
  rmSync(s.folder, { recursive: true, force: true })
}

function post(url: string, body: string, headers: Record<string, string> = {}) {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body,
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
        const { keypair: payer } = await createTestWallet({ url: s.chain.url, usdc: '1', sui: '1' })
        return x402PaymentHeader(s.client, payer, requirement)
      }),
    )
    headers.push(...made)
  }
  return headers
}

/** Runs `tasks` with at most `limit` in flight; answers the wall time in ms. */
async function pool(count: number, limit: number, task: (i: number) => Promise<void>) {
  let next = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: Math.min(limit, count) }, async () => {
      while (next < count) await task(next++)
    }),
  )
  return performance.now() - started
}

async function expectStatus(response: Response, status: number) {
  await response.arrayBuffer()
  if (response.status !== status) throw new Error(`expected ${status}, got ${response.status}`)
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

// 1 + 2: throughput and SSE at ledger latency 0.
{
  const s = await setup(0)
  const direct = `${s.gateway.stubs?.baseUrls.openai}/chat/completions`
  await pool(200, concurrency, async () =>
    expectStatus(await post(direct, chatBody, stubAuth), 200),
  )
  const directMs = await pool(directCalls, concurrency, async () =>
    expectStatus(await post(direct, chatBody, stubAuth), 200),
  )
  const payments = await presign(s, paidCalls)
  const gatewayUrl = `${s.gateway.url}${chatPath}`
  const paidMs = await pool(paidCalls, concurrency, async (i) =>
    expectStatus(
      await post(gatewayUrl, chatBody, { [x402Headers.payment]: payments[i] as string }),
      200,
    ),
  )
  // The ledger alone: the same kind of signed transfers executed directly, same concurrency.
  const usdcType = '0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC'
  const transfers: { bytes: Uint8Array; signature: string }[] = []
  for (let i = 0; i < paidCalls; i++) {
    const { keypair } = await createTestWallet({ url: s.chain.url, usdc: '1', sui: '1' })
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
    const settled = s.settledAt.at(-1) as number
    total.push(at - started)
    added.push(at - settled)
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
  await teardown(s)
}

// 3: a burst of concurrent paid calls at 400 ms settlement latency.
{
  const s = await setup(400)
  const payments = await presign(s, burst)
  const gatewayUrl = `${s.gateway.url}${chatPath}`
  const started = performance.now()
  const statuses = await Promise.all(
    payments.map(async (payment) => {
      const response = await post(gatewayUrl, chatBody, { [x402Headers.payment]: payment })
      await response.arrayBuffer()
      return response.status
    }),
  )
  const wall = performance.now() - started
  const ok = statuses.filter((code) => code === 200).length
  rows.push([
    `${burst} concurrent paid calls at 400 ms settlement: wall time (ms; target ≤ 2 500)`,
    `${wall.toFixed(0)} (${ok}/${burst} answered 200)`,
  ])
  await teardown(s)
}

rows.push([
  'peak RSS of the whole process (MiB)',
  (process.resourceUsage().maxRSS / 1024).toFixed(0),
])

console.log(`Node ${process.version}, ${concurrency} concurrent buyers, one process\n`)
console.log('| measurement | value |')
console.log('|---|---:|')
for (const [name, value] of rows) console.log(`| ${name} | ${value} |`)
process.exit(0)
