/**
 * The session checks against sellers offering MPP sessions: real sellers on 127.0.0.1, the ledger
 * emulator (latency 0), a channel opened and closed by a funded test wallet. The good seller passes
 * every session check; each broken seller fails exactly its own, and the payer gets its deposit back.
 */
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Session } from 'tollgate'
import { useTestLedger } from 'tollgate/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { registerAgent } from './fixtures/agent.js'
import {
  brokenSessionSellers,
  type Fixture,
  type FixtureEnvironment,
  goodSeller,
  goodSessionSeller,
} from './fixtures/sellers.js'
import type { ConformanceReport } from './report.js'
import { type ConformanceOptions, runConformance } from './run.js'

const chain = useTestLedger({ beforeAll, afterAll })
let env: FixtureEnvironment

beforeAll(async () => {
  const seller = chain.createTestWallet({ usdc: '0', sui: '1' })
  await registerAgent(chain.client, seller, chain.modulesPackage)
  env = {
    ledgerUrl: chain.url,
    wallet: seller.toSuiAddress(),
    sessions: {
      payee: seller,
      package: chain.modulesPackage,
      registry: chain.channel.registry,
    },
  }
})

async function run(
  fixture: Fixture,
  mode: 'read-only' | 'paid',
  payer: Ed25519Keypair = chain.createTestWallet({ usdc: '1' }),
  pinning: Pick<ConformanceOptions, 'ledger' | 'sessionChannels'> = {
    ledger: chain.client,
    sessionChannels: { package: chain.modulesPackage, registry: chain.channel.registry },
  },
): Promise<ConformanceReport> {
  const running = await fixture.start(env)
  try {
    return await runConformance({
      url: running.url,
      agent: env.wallet,
      ...pinning,
      registryPackage: chain.modulesPackage,
      mode,
      ...(mode === 'paid' ? { wallet: payer } : {}),
      // The expiry check is judged in conformance.int.test.ts; here it would only wait.
      maxExpiryWaitMs: 0,
      allowPrivateNetwork: true,
    })
  } finally {
    await running.close()
  }
}

const sessionIds = [
  'session.challenge',
  'session.voucher-served',
  'session.voucher-replay',
  'session.voucher-lower',
  'session.closed-410',
]
const sessionChecks = (report: ConformanceReport) =>
  report.checks.filter((c) => c.id.startsWith('session.'))
const failing = (report: ConformanceReport) =>
  report.checks.filter((c) => c.status === 'fail' || c.status === 'error')

describe('a seller offering sessions', () => {
  it('passes the session challenge check read-only; the paid session checks are skipped', async () => {
    const report = await run(goodSessionSeller, 'read-only')
    expect(failing(report).map((c) => `${c.id}: ${c.message}`)).toEqual([])
    const checks = sessionChecks(report)
    expect(checks.map((c) => c.id)).toEqual(sessionIds)
    expect(checks.map((c) => c.status)).toEqual(['pass', 'skip', 'skip', 'skip', 'skip'])
    expect(checks[0]?.message).toContain('per request')
    // The charge challenge beside the session one is still judged as well-formed.
    expect(report.checks.find((c) => c.id === 'mpp.well-formed')?.status).toBe('pass')
  })

  it('passes every session check in paid mode, and the deposit less one call comes back', async () => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const report = await run(goodSessionSeller, 'paid', payer)
    expect(failing(report).map((c) => `${c.id}: ${c.message}`)).toEqual([])
    expect(sessionChecks(report).map((c) => [c.id, c.status])).toEqual(
      sessionIds.map((id) => [id, 'pass']),
    )
    const served = report.checks.find((c) => c.id === 'session.voucher-served')
    const channelId = served?.details?.channelId
    expect(typeof channelId).toBe('string')
    expect(served?.evidence.length).toBeGreaterThan(0)
    const replay = report.checks.find((c) => c.id === 'session.voucher-replay')
    expect(replay?.message).toContain('402 (replay)')
    const closed = report.checks.find((c) => c.id === 'session.closed-410')
    expect(closed?.details?.channelId).toBe(channelId)
    // On the ledger: the channel is closed and the seller captured the one call served; the rest of
    // the deposit went back to the payer.
    const channel = await Session.readChannel(chain.client, String(channelId))
    expect(channel.closed).toBe(true)
    expect(channel.payer).toBe(payer.toSuiAddress())
    expect(channel.settled).toBe(20_000n)
    expect(channel.deposited).toBe(80_000n)
    expect(closed?.message).toContain('20000 base units spent, 60000 back to the payer')
  })

  it('opens no channel on a package the payer did not pin', async () => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const elsewhere = { package: chain.modulesPackage, registry: `0x${'ab'.repeat(32)}` }
    const report = await run(goodSessionSeller, 'paid', payer, {
      ledger: chain.client,
      sessionChannels: elsewhere,
    })
    const served = report.checks.find((c) => c.id === 'session.voucher-served')
    expect(served?.status).toBe('skip')
    expect(served?.message).toContain(
      `not the pinned ${elsewhere.package} and ${elsewhere.registry}`,
    )
    expect(failing(report).map((c) => c.id)).toEqual([])
    const closed = report.checks.find((c) => c.id === 'session.closed-410')
    expect(closed?.message).toBe('no channel was opened')
  })

  it("pins the local ledger's channel package when given the ledger's URL", async () => {
    const report = await run(goodSessionSeller, 'paid', undefined, { ledger: chain.url })
    expect(failing(report).map((c) => `${c.id}: ${c.message}`)).toEqual([])
    expect(sessionChecks(report).map((c) => c.status)).toEqual(sessionIds.map(() => 'pass'))
  })

  it('leaves a seller without sessions with no session check in its report', async () => {
    const report = await run(goodSeller, 'paid')
    expect(sessionChecks(report)).toEqual([])
    expect(failing(report).map((c) => c.id)).toEqual([])
  })
})

it('asks the ledger to close a channel its seller would not close', async () => {
  const refusesClose = brokenSessionSellers.find((f) => f.name === 'refuses a cooperative close')
  if (refusesClose === undefined) throw new Error('no such fixture')
  const report = await run(refusesClose, 'paid')
  const closed = report.checks.find((c) => c.id === 'session.closed-410')
  expect(closed?.message).toContain('the cooperative close failed')
  expect(closed?.message).toContain('a close was asked on the ledger')
  const channel = await Session.readChannel(chain.client, String(closed?.details?.channelId))
  expect(channel.closeRequestedMs).toBeGreaterThan(0n)
  expect(channel.settled).toBe(0n)
})

describe.each(brokenSessionSellers)('fixture: $name', (fixture) => {
  const modes =
    fixture.breaks['read-only'].length > 0 ? (['read-only', 'paid'] as const) : (['paid'] as const)
  it.each(modes)('fails exactly the check it breaks (%s)', async (mode) => {
    const report = await run(fixture, mode)
    const failed = failing(report)
    expect(
      failed.map((c) => c.id),
      JSON.stringify(failed.map((c) => c.message)),
    ).toEqual([...fixture.breaks[mode]])
    for (const check of failed) {
      expect(check.hint).not.toBe('')
      expect(check.message.length).toBeGreaterThan(20)
    }
  })
})
