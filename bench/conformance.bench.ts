// A full `paid` conformance run (gates, read-only checks, 8 paid checks with real payments) against a
// local seller on the ledger emulator at latency 0. The seller's challenges live 2 s, so the expiry
// check's wait (about 3 s) dominates.
// Run: npx vitest bench --run bench/conformance.bench.ts   (target: < 5 s per run)
import { SuiGrpcClient } from '@mysten/sui/grpc'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { afterAll, beforeAll, bench, describe } from 'vitest'
import { registerAgent } from '../conformance/fixtures/agent.js'
import { goodSeller, type RunningSeller } from '../conformance/fixtures/sellers.js'
import { runConformance } from '../conformance/run.js'
import { type StartedLedger, startLedger, WORMHOLE_USDC_TYPE } from '../src/testing/index.js'

let chain: StartedLedger
let client: SuiGrpcClient
let seller: RunningSeller
let agent: string

beforeAll(async () => {
  chain = await startLedger({ latencyMs: 0 })
  client = new SuiGrpcClient({ network: 'mainnet', baseUrl: chain.url })
  const wallet = chain.createTestWallet({ usdc: '0' })
  await registerAgent(client, wallet, chain.modulesPackage)
  agent = wallet.toSuiAddress()
  seller = await goodSeller.start({
    ledgerUrl: chain.url,
    wallet: agent,
    stranger: new Ed25519Keypair().toSuiAddress(),
  })
})

afterAll(async () => {
  await seller?.close()
  await chain?.stop()
})

describe('conformance', () => {
  bench(
    'full paid run, local seller, ledger latency 0',
    async () => {
      const report = await runConformance({
        url: seller.url,
        agent,
        ledger: client,
        registryPackage: chain.modulesPackage,
        mode: 'paid',
        wallet: chain.createTestWallet({
          usdc: '10',
          extra: { coinType: WORMHOLE_USDC_TYPE, amount: 1_000_000n },
        }),
        allowPrivateNetwork: true,
      })
      if (!report.listable || report.summary.fail > 0) throw new Error('the good seller failed')
    },
    { iterations: 3, time: 0, warmupIterations: 0 },
  )
})
