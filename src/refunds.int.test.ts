/**
 * Refunds over the ledger emulator, with the real ledger client: a signed refund that the ledger
 * refused for a temporary reason (the operator's address balance momentarily too low) stays valid
 * until its window of epochs ends, so it is kept and re-submitted, never doubled by a replacement;
 * a replacement is built only once the ledger's epoch has passed the window.
 */
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLedger, type Ledger } from './ledger/index.js'
import { createRefunder } from './refunds.js'
import { createMemoryStore } from './stores/memory.js'
import { useTestLedger } from './testing/index.js'

const emulator = useTestLedger({ beforeAll, afterAll })
let ledger: Ledger

beforeAll(async () => {
  ledger = createLedger({ url: emulator.url })
})

const amount = 20_000n

/**
 * An operator holding 0.05 USDC in its address balance (so refunds take the gasless form) and
 * USDC and SUI coins (so a replacement could take the coin form), a payer owed 0.02 USDC, and a
 * refunder whose first submission is refused: just after the refund is recorded, the operator
 * spends 0.04 from its address balance elsewhere.
 */
async function scenario() {
  const operator = Ed25519Keypair.generate()
  const address = operator.toSuiAddress()
  emulator.faucet({ address, usdc: '0.05', into: 'addressBalance' })
  emulator.faucet({ address, usdc: '1', sui: '1' })
  const payer = Ed25519Keypair.generate().toSuiAddress()
  const store = createMemoryStore()
  await store.claim('D1', { resource: 'r', dialect: 'x402' })
  await store.settled('D1', {
    payer,
    amount,
    resource: 'r',
    dialect: 'x402',
    network: 'sui:mainnet',
    asset: emulator.usdcType,
    settledAt: new Date(),
  })
  await store.oweRefund('D1', 'handler threw')
  const operatorLedger = createLedger({ url: emulator.url, operator })
  let drained = false
  const refunder = createRefunder({
    store,
    ledger,
    signer: operator,
    async onStep(step) {
      if (step !== 'recorded' || drained) return
      drained = true
      const spent = await operatorLedger.transfer({
        to: Ed25519Keypair.generate().toSuiAddress(),
        amount: 40_000n,
        coinType: emulator.usdcType,
      })
      expect(spent.status).toBe('executed')
    },
  })
  const received = async () => BigInt((await ledger.getBalance(payer, emulator.usdcType)).total)
  const recorded = async () => (await store.get('D1'))?.refund?.transaction
  return { operator: address, store, refunder, received, recorded }
}

describe('refunds over the emulator', () => {
  it('keeps a temporarily refused refund and pays it once when the balance is back', async () => {
    const { operator, refunder, received, recorded, store } = await scenario()
    expect((await refunder.runOnce()).failed).toBe(1)
    const first = await recorded()
    expect(first).toBeDefined()
    // Still refused (balance low) but within its window: kept, nothing else built or paid.
    expect(await refunder.runOnce()).toEqual({ refunded: 0, failed: 0, waiting: 1 })
    expect((await recorded())?.refundDigest).toBe(first?.refundDigest)
    expect(await received()).toBe(0n)

    emulator.faucet({ address: operator, usdc: '0.03', into: 'addressBalance' })
    expect((await refunder.runOnce()).refunded).toBe(1)
    expect((await store.get('D1'))?.refund?.refundDigest).toBe(first?.refundDigest)
    // Whoever holds the signed bytes may submit them again: the ledger executes them once.
    await ledger.execute(Buffer.from(first!.txBytes, 'base64'), [first!.signature!])
    await refunder.runOnce()
    expect(await received()).toBe(amount)
  })

  it('replaces the refused refund only once the ledger’s epoch has passed its window', async () => {
    const { operator, refunder, received, recorded } = await scenario()
    await refunder.runOnce()
    const first = await recorded()
    emulator.advanceEpoch() // the last epoch of its window
    expect((await refunder.runOnce()).waiting).toBe(1)
    expect((await recorded())?.refundDigest).toBe(first?.refundDigest)

    emulator.advanceEpoch() // past it: the first refund can never execute
    expect(await ledger.canStillExecute(Buffer.from(first!.txBytes, 'base64'))).toMatchObject({
      status: 'never',
    })
    expect((await refunder.runOnce()).refunded).toBe(1)
    expect((await recorded())?.refundDigest).not.toBe(first?.refundDigest)
    expect(await received()).toBe(amount)

    // With the balance back, the first refund's bytes are still refused: paid once.
    emulator.faucet({ address: operator, usdc: '1', into: 'addressBalance' })
    const replay = await ledger.execute(Buffer.from(first!.txBytes, 'base64'), [first!.signature!])
    expect(replay.status).toBe('rejected')
    expect(await received()).toBe(amount)
  })

  it('judges a coin-form transaction unexecutable once a coin it spends has moved on', async () => {
    const sender = emulator.createTestWallet({ usdc: '1', sui: '1' })
    const bytes = await ledger.buildTransfer({
      sender: sender.toSuiAddress(),
      to: Ed25519Keypair.generate().toSuiAddress(),
      amount,
      coinType: emulator.usdcType,
    })
    expect(await ledger.canStillExecute(bytes)).toEqual({ status: 'possible' })
    const spend = await createLedger({ url: emulator.url, operator: sender }).transfer({
      to: Ed25519Keypair.generate().toSuiAddress(),
      amount: 1n,
      coinType: emulator.usdcType,
    })
    expect(spend.status).toBe('executed')
    expect(await ledger.canStillExecute(bytes)).toMatchObject({ status: 'never' })
  })
})
