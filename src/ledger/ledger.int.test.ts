import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { afterAll, beforeAll, describe, expect, expectTypeOf, it } from 'vitest'
import { transactionDigest } from '../internal/suiSignature.js'
import type { RefundLedger } from '../refunds.js'
import type { SettlementLedger } from '../settle.js'
import { useTestLedger } from '../testing/index.js'
import { buildCoinTransfer } from '../testing/ledger/testHelpers.js'
import { createLedger } from './index.js'
import type { Ledger } from './types.js'

const emulator = useTestLedger({ beforeAll, afterAll })

async function signedPayment(amount = 20_000n) {
  const buyer = emulator.createTestWallet({ usdc: '1' })
  const seller = Ed25519Keypair.generate().toSuiAddress()
  const bytes = await buildCoinTransfer({
    client: emulator.client,
    payer: buyer,
    to: seller,
    amount,
    coinType: emulator.usdcType,
  })
  return { buyer, seller, bytes, signature: (await buyer.signTransaction(bytes)).signature }
}

describe('createLedger over the emulator URL', () => {
  it('is what settlement and refunds consume', () => {
    expectTypeOf<Ledger>().toMatchTypeOf<SettlementLedger>()
    expectTypeOf<Ledger>().toMatchTypeOf<RefundLedger>()
  })

  it.each([
    ['Node http (the default on Node)', undefined],
    ['the Web fetch (other runtimes)', globalThis.fetch],
  ])(
    'executes and reports normalised balance changes, sender and digest over %s',
    async (_, fetch) => {
      const ledger = createLedger({ url: emulator.url, ...(fetch === undefined ? {} : { fetch }) })
      const { buyer, seller, bytes, signature } = await signedPayment()
      const outcome = await ledger.execute(bytes, [signature])
      expect(outcome.status).toBe('executed')
      if (outcome.status !== 'executed') return
      expect(outcome.transaction).toMatchObject({
        digest: transactionDigest(bytes),
        success: true,
        sender: buyer.toSuiAddress(),
      })
      expect(outcome.transaction.balanceChanges).toContainEqual({
        address: seller,
        coinType: emulator.usdcType,
        amount: 20_000n,
      })
      // The execution's answer (sender from the submitted bytes) equals the look-up's (sender from
      // the bytes the node returns).
      const found = await ledger.getTransaction(outcome.transaction.digest)
      expect(found).toEqual({ status: 'found', transaction: outcome.transaction })
      expect(await ledger.getBalance(seller, emulator.usdcType)).toEqual({
        total: 20_000n,
        coinBalance: 20_000n,
        addressBalance: 0n,
      })
      expect(await ledger.chainIdentifier()).toBe(emulator.chainId)
    },
  )

  it('reports a failed execution as executed with success false and the error', async () => {
    const ledger = createLedger({ url: emulator.url })
    const buyer = emulator.createTestWallet({ usdc: '0.01' })
    const bytes = await buildCoinTransfer({
      client: emulator.client,
      payer: buyer,
      to: '0x1',
      amount: 50_000n,
      coinType: emulator.usdcType,
    })
    const outcome = await ledger.execute(bytes, [(await buyer.signTransaction(bytes)).signature])
    expect(outcome).toMatchObject({
      status: 'executed',
      transaction: { success: false, error: expect.stringMatching(/less than/) },
    })
  })

  it('tells a rejection from an unknown outcome', async () => {
    const ledger = createLedger({ url: emulator.url })
    const { bytes, signature } = await signedPayment()
    const bad = await ledger.execute(bytes, [
      (await Ed25519Keypair.generate().signTransaction(bytes)).signature,
    ])
    expect(bad).toMatchObject({ status: 'rejected', reason: expect.stringMatching(/signature/) })
    emulator.faults.failNextExecutions = 1
    const unknown = await ledger.execute(bytes, [signature])
    expect(unknown).toEqual({
      status: 'unknown',
      reason: expect.any(String),
      digest: transactionDigest(bytes),
    })
    expect(await ledger.getTransaction(transactionDigest(bytes))).toEqual({ status: 'not_found' })
    expect((await ledger.execute(bytes, [signature])).status).toBe('executed')
  })

  it('resolves a lost response by digest look-up: executed, not unknown', async () => {
    const ledger = createLedger({ url: emulator.url })
    const { seller, bytes, signature } = await signedPayment(30_000n)
    emulator.faults.loseNextResponses = 1
    const outcome = await ledger.execute(bytes, [signature])
    expect(outcome.status).toBe('executed')
    expect(await ledger.getBalance(seller, emulator.usdcType)).toMatchObject({ total: 30_000n })
  })

  it('times out as unknown (never rejected) on a slow node, and waitFor finds it later', async () => {
    const ledger = createLedger({ url: emulator.url, timeoutMs: 150 })
    const { bytes, signature } = await signedPayment()
    emulator.faults.slowMs = 400
    const outcome = await ledger.execute(bytes, [signature])
    emulator.faults.slowMs = 0
    expect(outcome.status).toBe('unknown')
    const found = await createLedger({ url: emulator.url }).waitFor(transactionDigest(bytes), {
      timeoutMs: 3_000,
    })
    expect(found.status).toBe('found')
  })

  it('answers unknown (not not_found) when the node is down', async () => {
    const ledger = createLedger({ url: emulator.url })
    emulator.faults.unavailable = true
    try {
      expect((await ledger.getTransaction('11111111111111111111111111111111')).status).toBe(
        'unknown',
      )
    } finally {
      emulator.faults.unavailable = false
    }
  })

  it('waitFor gives not_found after its timeout for a digest that never executes', async () => {
    const ledger = createLedger({ url: emulator.url })
    const { bytes } = await signedPayment()
    expect(await ledger.waitFor(transactionDigest(bytes), { timeoutMs: 200 })).toEqual({
      status: 'not_found',
    })
  })
})

describe('operator transfers', () => {
  it('pays USDC in the gasless address-balance form when the operator holds an address balance', async () => {
    const operator = Ed25519Keypair.generate()
    emulator.faucet({
      address: operator.toSuiAddress(),
      usdc: '1',
      sui: '0',
      into: 'addressBalance',
    })
    const ledger = createLedger({ url: emulator.url, operator })
    const to = Ed25519Keypair.generate().toSuiAddress()
    const outcome = await ledger.transfer({ to, amount: 20_000n, coinType: emulator.usdcType })
    expect(outcome.status).toBe('executed')
    expect(await ledger.getBalance(to, emulator.usdcType)).toEqual({
      total: 20_000n,
      coinBalance: 0n,
      addressBalance: 20_000n,
    })
    expect(await ledger.getBalance(operator.toSuiAddress(), '0x2::sui::SUI')).toMatchObject({
      total: 0n,
    })
  })

  it('pays in the coin form when only coins are held, and when gasless is disabled', async () => {
    const operator = emulator.createTestWallet({ usdc: '1' })
    const to = Ed25519Keypair.generate().toSuiAddress()
    const ledger = createLedger({ url: emulator.url, operator, allowGasless: false })
    const outcome = await ledger.transfer({ to, amount: 20_000n, coinType: emulator.usdcType })
    expect(outcome).toMatchObject({ status: 'executed', transaction: { success: true } })
    expect(await ledger.getBalance(to, emulator.usdcType)).toEqual({
      total: 20_000n,
      coinBalance: 20_000n,
      addressBalance: 0n,
    })
    const sui = await ledger.transfer({ to, amount: 5_000n, coinType: '0x2::sui::SUI' })
    expect(sui).toMatchObject({ status: 'executed', transaction: { success: true } })
  })

  it('refuses to build a transfer the operator cannot fund', async () => {
    const operator = emulator.createTestWallet({ usdc: '0.01' })
    const ledger = createLedger({ url: emulator.url, operator })
    await expect(
      ledger.transfer({ to: '0x1', amount: 50_000n, coinType: emulator.usdcType }),
    ).rejects.toMatchObject({
      code: 'INSUFFICIENT_BALANCE',
    })
  })
})
