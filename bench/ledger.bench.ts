/**
 * Coin-form USDC transfers executed per second by the local ledger through the real
 * `SuiGrpcClient` (gRPC-web, grpc-web-text, loopback HTTP/1.1), at settlement latency 0.
 *
 * The ledger runs in its own process (bench/ledgerServer.ts). Every execution is a fresh, fully
 * signed transaction from its own wallet, pre-built, so what is measured is submission, signature
 * check, validation, execution, commit and the answer, end to end through the SDK. Target: ≥ 500/s.
 *
 * Run: npx vitest bench --run --project unit bench/ledger.bench.ts
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { SuiGrpcClient } from '@mysten/sui/grpc'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Transaction } from '@mysten/sui/transactions'
import { afterAll, bench, describe } from 'vitest'

const PREBUILT = 6_000
const BATCH = 64

const child = spawn(
  process.execPath,
  ['--import', 'tsx', new URL('./ledgerServer.ts', import.meta.url).pathname],
  {
    stdio: ['pipe', 'pipe', 'inherit'],
  },
)
const first = await new Promise<string>((resolve) =>
  createInterface({ input: child.stdout! }).once('line', resolve),
)
const { url, usdcType } = JSON.parse(first) as { url: string; usdcType: string }
const client = new SuiGrpcClient({ network: 'mainnet', baseUrl: url })
const seller = Ed25519Keypair.generate().toSuiAddress()

type Ref = { objectId: string; version: string; digest: string; coinType: string }
type Signed = { bytes: Uint8Array; signature: string }
const prebuilt: Signed[] = []
for (let i = 0; i < PREBUILT; i++) {
  const buyer = Ed25519Keypair.generate()
  const response = await fetch(`${url}/faucet`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ address: buyer.toSuiAddress(), usdc: '1', sui: '1' }),
  })
  const { coins } = (await response.json()) as { coins: Ref[] }
  const usdc = coins.find((c) => c.coinType === usdcType)!
  const sui = coins.find((c) => c.coinType !== usdcType)!
  const tx = new Transaction()
  tx.setSender(buyer.toSuiAddress())
  tx.setGasPrice(1000)
  tx.setGasBudget(10_000_000)
  tx.setGasPayment([sui])
  const [paid] = tx.splitCoins(tx.objectRef(usdc), [tx.pure.u64(20_000)])
  tx.transferObjects([paid!], tx.pure.address(seller))
  const bytes = await tx.build()
  prebuilt.push({ bytes, signature: (await buyer.signTransaction(bytes)).signature })
}
let next = 0

/** CPU time (user + system, ms) the ledger process has used so far (Linux /proc). */
function ledgerCpuMs(): number | undefined {
  try {
    const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
  } catch {
    return undefined
  }
}
const cpuAtStart = ledgerCpuMs()
const clientCpuAtStart = process.cpuUsage()
const executedAtStart = next
const binaryClient = new SuiGrpcClient({ network: 'mainnet', baseUrl: url, format: 'binary' })

async function execute(via: SuiGrpcClient = client) {
  const signed = prebuilt[next++ % PREBUILT]!
  const result = await via.core.executeTransaction({
    transaction: signed.bytes,
    signatures: [signed.signature],
    include: { balanceChanges: true },
  })
  if (!result.Transaction) throw new Error('payment did not execute')
}

afterAll(() => {
  const cpu = ledgerCpuMs()
  const executions = next - executedAtStart
  if (cpu !== undefined && cpuAtStart !== undefined && executions > 0) {
    const perExecution = (cpu - cpuAtStart) / executions
    const client = process.cpuUsage(clientCpuAtStart)
    console.log(
      `ledger process CPU per execution: ${perExecution.toFixed(2)} ms ` +
        `(≈ ${Math.round(1000 / perExecution)} executions/s per core, transport included); ` +
        `client (SDK + bench) CPU per execution: ${((client.user + client.system) / 1000 / executions).toFixed(2)} ms`,
    )
  }
  child.stdin?.end()
  child.kill('SIGTERM')
})

describe('local ledger: coin-form USDC transfers through SuiGrpcClient, latency 0', () => {
  bench('one execution at a time (executions/s = hz)', () => execute(), {
    time: 2_000,
    iterations: 300,
  })

  bench(
    `${BATCH} in flight (executions/s = hz x ${BATCH})`,
    async () => {
      await Promise.all(Array.from({ length: BATCH }, () => execute()))
    },
    { time: 3_000, iterations: 30 },
  )

  bench(
    `${BATCH} in flight, grpc-web+proto (executions/s = hz x ${BATCH})`,
    async () => {
      await Promise.all(Array.from({ length: BATCH }, () => execute(binaryClient)))
    },
    { time: 3_000, iterations: 30 },
  )
})
