/**
 * The suite against its own fixtures: real sellers on 127.0.0.1, the ledger emulator (latency 0),
 * real payments from funded test wallets.
 */
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { useTestLedger, WORMHOLE_USDC_TYPE } from 'tollgate/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { registerAgent } from './fixtures/agent.js'
import {
  brokenSellers,
  type Fixture,
  type FixtureEnvironment,
  goodSeller,
} from './fixtures/sellers.js'
import type { ConformanceReport } from './report.js'
import { runConformance } from './run.js'

const chain = useTestLedger({ beforeAll, afterAll })
let env: FixtureEnvironment
let seller: Ed25519Keypair

beforeAll(async () => {
  seller = chain.createTestWallet({ usdc: '0' })
  await registerAgent(chain.client, seller, chain.modulesPackage)
  env = {
    ledgerUrl: chain.url,
    wallet: seller.toSuiAddress(),
    stranger: new Ed25519Keypair().toSuiAddress(),
  }
})

/** A buyer wallet funded with USDC, SUI for gas and wUSDC for the wrong-asset check. */
function buyer(): Ed25519Keypair {
  return chain.createTestWallet({
    usdc: '40',
    extra: { coinType: WORMHOLE_USDC_TYPE, amount: 1_000_000n },
  })
}

async function run(fixture: Fixture, mode: 'read-only' | 'paid'): Promise<ConformanceReport> {
  const running = await fixture.start(env)
  try {
    return await runConformance({
      url: running.url,
      agent: fixture.registered ? env.wallet : new Ed25519Keypair().toSuiAddress(),
      walletAddress: env.wallet,
      ledger: chain.client,
      registryPackage: chain.modulesPackage,
      mode,
      ...(mode === 'paid' ? { wallet: buyer() } : {}),
      allowPrivateNetwork: true,
    })
  } finally {
    await running.close()
  }
}

const ids = (report: ConformanceReport, status: string) =>
  report.checks.filter((c) => c.status === status).map((c) => c.id)

describe('a good seller', () => {
  it('passes every read-only check, and the paid checks are skipped', async () => {
    const report = await run(goodSeller, 'read-only')
    expect(ids(report, 'fail')).toEqual([])
    expect(ids(report, 'error')).toEqual([])
    expect(ids(report, 'skip').every((id) => id.startsWith('paid.'))).toBe(true)
    expect(report.listable).toBe(true)
    expect(report.wallet).toBe(env.wallet)
  })

  it('passes every check in paid mode; the run is timed', async () => {
    const started = performance.now()
    const report = await run(goodSeller, 'paid')
    const seconds = (performance.now() - started) / 1000
    console.log(`full paid run against a local seller (ledger latency 0): ${seconds.toFixed(2)} s`)
    expect(
      report.checks.filter((c) => c.status !== 'pass').map((c) => `${c.id}: ${c.message}`),
    ).toEqual([])
    expect(report.listable).toBe(true)
    // Generous bound for a loaded machine; the goal (< 5 s) is measured and reported.
    expect(seconds).toBeLessThan(30)
  })
})

describe.each(brokenSellers)('fixture: $name', (fixture) => {
  it.each(['read-only', 'paid'] as const)(
    'fails exactly the checks it breaks (%s)',
    async (mode) => {
      const report = await run(fixture, mode)
      const failing = report.checks
        .filter((c) => c.status === 'fail' || c.status === 'error')
        .map((c) => c.id)
      expect(
        failing,
        JSON.stringify(report.checks.filter((c) => failing.includes(c.id)).map((c) => c.message)),
      ).toEqual([...fixture.breaks[mode]])
      for (const check of report.checks.filter((c) => c.status === 'fail')) {
        expect(check.hint).not.toBe('')
      }
      const gateBroken = fixture.breaks[mode].some((id) => id.startsWith('gate.'))
      expect(report.listable).toBe(!gateBroken)
    },
  )
})
