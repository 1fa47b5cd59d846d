/**
 * Paid-request load through the paywall engine, with the ledger emulator in its own process:
 *
 * 1. throughput at settlement latency 0: paid requests/s (64 in flight) against the baseline of the
 *    same ledger executing equivalent signed transfers directly through the client, same run;
 * 2. 500 concurrent buyers at settlement latency 400 ms: total wall time against the 400 ms the
 *    ledger itself takes (target: all 500 done in under 1.5 s — no serialisation behind the ledger).
 *
 * Both report the CPU each paid request costs the seller (this process) and the ledger (its own
 * process). Payments are signed and their HTTP requests built before the clock starts: that is the
 * buyers' work, not the seller's.
 *
 * Run: npx tsx bench/settleLoad.ts
 */
import { readFileSync } from 'node:fs'
import { SuiGrpcClient } from '@mysten/sui/grpc'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { createPaywall } from '../src/engine/paywall.js'
import { nodeFetch } from '../src/internal/nodeFetch.js'
import { createLedger } from '../src/ledger/index.js'
import { createMemoryStore } from '../src/stores/memory.js'
import { buildCoinTransfer } from '../src/testing/ledger/testHelpers.js'
import { encodeXPayment, x402Headers } from '../src/x402.js'
import { startScript } from './script.js'

type Chain = { url: string; usdcType: string; cpuMs(): number; stop(): void }

/** CPU time (user + system, ms) of another process, from `/proc` (Linux). */
function processCpuMs(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
  } catch {
    return Number.NaN
  }
}

const ownCpuMs = () => {
  const { user, system } = process.cpuUsage()
  return (user + system) / 1000
}

async function startChain(latencyMs: number): Promise<Chain> {
  const { process: child, info } = await startScript<{ url: string; usdcType: string }>(
    new URL('./ledgerServer.ts', import.meta.url),
    { LATENCY_MS: String(latencyMs) },
  )
  const { url, usdcType } = info
  return {
    url,
    usdcType,
    cpuMs: () => processCpuMs(child.pid),
    stop: () => child.kill('SIGTERM'),
  }
}

type Signed = { bytes: Uint8Array; transaction: string; signature: string }

async function prebuild(chain: Chain, to: string, count: number): Promise<Signed[]> {
  const client = new SuiGrpcClient({ network: 'mainnet', baseUrl: chain.url })
  const out: Signed[] = []
  for (let i = 0; i < count; i++) {
    const payer = Ed25519Keypair.generate()
    await fetch(`${chain.url}/faucet`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ address: payer.toSuiAddress(), usdc: '1', sui: '1' }),
    })
    const bytes = await buildCoinTransfer({
      client,
      payer,
      to,
      amount: 20_000n,
      coinType: chain.usdcType,
    })
    const { signature } = await payer.signTransaction(bytes)
    out.push({ bytes, transaction: Buffer.from(bytes).toString('base64'), signature })
  }
  return out
}

/** Runs `work` and reports the CPU per item it cost this process and the ledger's. */
async function measured<T>(chain: Chain, count: number, work: () => Promise<T>) {
  const seller0 = ownCpuMs()
  const ledger0 = chain.cpuMs()
  const result = await work()
  const perItem = (ms: number) => `${((ms * 1000) / count).toFixed(0)} µs`
  const cpu = `CPU per paid request: seller ${perItem(ownCpuMs() - seller0)}, ledger ${perItem(chain.cpuMs() - ledger0)}`
  return { result, cpu }
}

async function inFlight<T>(items: T[], concurrency: number, run: (item: T) => Promise<void>) {
  let next = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await run(items[next++]!)
    }),
  )
  return performance.now() - started
}

function seller(chain: Chain) {
  const payTo = Ed25519Keypair.generate().toSuiAddress()
  const paywall = createPaywall({
    payTo,
    ledger: createLedger({ url: chain.url, fetch: nodeFetch }),
    store: createMemoryStore(),
    secrets: ['a-benchmark-secret-of-at-least-32-bytes'],
    publicBaseUrl: 'http://seller.bench',
  })
  const handler = paywall.protect({ price: '0.02' }, () => Response.json({ ok: true }))
  return { payTo, handler }
}

async function challengeId(handler: (r: Request) => Promise<Response>): Promise<string> {
  const response = await handler(new Request('http://seller.bench/paid', { method: 'POST' }))
  const body = (await response.json()) as { accepts: { extra: { challengeId: string } }[] }
  return body.accepts[0]!.extra.challengeId
}

function paidRequest(id: string, payment: Signed): Request {
  const header = encodeXPayment({
    payload: { challengeId: id, transaction: payment.transaction, signature: payment.signature },
  })
  return new Request('http://seller.bench/paid', {
    method: 'POST',
    headers: { [x402Headers.payment]: header },
  })
}

async function throughput() {
  const chain = await startChain(0)
  try {
    const { payTo, handler } = seller(chain)
    const count = 600
    const [direct, paid] = [
      await prebuild(chain, payTo, count),
      await prebuild(chain, payTo, count),
    ]
    const client = new SuiGrpcClient({ network: 'mainnet', baseUrl: chain.url })
    const directMs = await inFlight(direct, 64, async (p) => {
      const r = await client.core.executeTransaction({
        transaction: p.bytes,
        signatures: [p.signature],
        include: { balanceChanges: true },
      })
      if (!r.Transaction) throw new Error('direct execution failed')
    })
    const id = await challengeId(handler)
    const requests = paid.map((p) => paidRequest(id, p))
    const { result: paidMs, cpu } = await measured(chain, count, () =>
      inFlight(requests, 64, async (request) => {
        const r = await handler(request)
        if (r.status !== 200) throw new Error(`paid request answered ${r.status}`)
        await r.arrayBuffer()
      }),
    )
    const directRate = (count / directMs) * 1000
    const paidRate = (count / paidMs) * 1000
    console.log(`latency 0 — direct ledger executions: ${directRate.toFixed(0)}/s (baseline)`)
    console.log(
      `latency 0 — paid requests through the paywall: ${paidRate.toFixed(0)}/s = ${(paidRate / directRate).toFixed(2)}x baseline (${cpu})`,
    )
  } finally {
    chain.stop()
  }
}

async function concurrentBuyers() {
  const latency = 400
  const chain = await startChain(latency)
  try {
    const { payTo, handler } = seller(chain)
    const payments = await prebuild(chain, payTo, 500)
    const id = await challengeId(handler)
    const requests = payments.map((p) => paidRequest(id, p))
    const started = performance.now()
    const { result: statuses, cpu } = await measured(chain, requests.length, () =>
      Promise.all(
        requests.map(async (request) => {
          const r = await handler(request)
          await r.arrayBuffer()
          return r.status
        }),
      ),
    )
    const total = performance.now() - started
    const served = statuses.filter((s) => s === 200).length
    console.log(
      `latency ${latency} ms — 500 concurrent buyers: ${served} served in ${total.toFixed(0)} ms = ${(total / latency).toFixed(2)}x the ledger latency (target < 1500 ms; ${cpu})`,
    )
  } finally {
    chain.stop()
  }
}

await throughput()
await concurrentBuyers()
process.exit(0)
