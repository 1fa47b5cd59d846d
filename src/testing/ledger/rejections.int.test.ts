import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Transaction } from '@mysten/sui/transactions'
import { fromBase64, toBase64 } from '@mysten/sui/utils'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { WORMHOLE_USDC_TYPE } from './state.js'
import { buildCoinTransfer, buildGaslessTransfer, coinRefs } from './testHelpers.js'
import { useTestLedger } from './testLedger.js'
import { useCheckedLedger } from './testSetup.js'

const ledger = useCheckedLedger()

/** Submits and expects a rejection (gRPC error, nothing executed) whose message matches. */
async function expectRejected(bytes: Uint8Array, signatures: string[], message: RegExp) {
  await expect(
    ledger.client.core.executeTransaction({ transaction: bytes, signatures }),
  ).rejects.toMatchObject({
    code: 'INVALID_ARGUMENT',
    message: expect.stringMatching(message),
  })
}

async function usdcTransfer(payer: Ed25519Keypair, amount = 20_000n) {
  return buildCoinTransfer({
    client: ledger.client,
    payer,
    to: Ed25519Keypair.generate().toSuiAddress(),
    amount,
    coinType: ledger.usdcType,
  })
}

describe('signatures', () => {
  it('rejects a tampered signature', async () => {
    const buyer = ledger.createTestWallet()
    const bytes = await usdcTransfer(buyer)
    const raw = fromBase64((await buyer.signTransaction(bytes)).signature)
    raw[5] = (raw[5] ?? 0) ^ 0xff
    await expectRejected(bytes, [toBase64(raw)], /Invalid user signature/)
  })

  it('rejects a valid signature by someone other than the sender', async () => {
    const buyer = ledger.createTestWallet()
    const bytes = await usdcTransfer(buyer)
    const { signature } = await Ed25519Keypair.generate().signTransaction(bytes)
    await expectRejected(bytes, [signature], /not the sender or the gas owner/)
  })

  it('rejects a sponsored transaction without the sponsor signature', async () => {
    const buyer = ledger.createTestWallet({ sui: '0' })
    const sponsor = ledger.createTestWallet({ usdc: '0' })
    const bytes = await buildCoinTransfer({
      client: ledger.client,
      payer: buyer,
      sponsor,
      to: sponsor.toSuiAddress(),
      amount: 20_000n,
      coinType: ledger.usdcType,
    })
    await expectRejected(
      bytes,
      [(await buyer.signTransaction(bytes)).signature],
      /gas owner \(sponsor\).*absent/,
    )
  })

  it('rejects a sponsored transaction signed only by the sponsor', async () => {
    const buyer = ledger.createTestWallet({ sui: '0' })
    const sponsor = ledger.createTestWallet({ usdc: '0' })
    const bytes = await buildCoinTransfer({
      client: ledger.client,
      payer: buyer,
      sponsor,
      to: sponsor.toSuiAddress(),
      amount: 20_000n,
      coinType: ledger.usdcType,
    })
    await expectRejected(
      bytes,
      [(await sponsor.signTransaction(bytes)).signature],
      /sender .* is absent/,
    )
  })
})

describe('objects', () => {
  it('rejects a stale object version', async () => {
    const buyer = ledger.createTestWallet()
    const [coin] = await coinRefs(ledger.client, buyer.toSuiAddress(), ledger.usdcType)
    const first = await usdcTransfer(buyer)
    expect(
      (
        await ledger.client.core.executeTransaction({
          transaction: first,
          signatures: [(await buyer.signTransaction(first)).signature],
        })
      ).$kind,
    ).toBe('Transaction')
    const stale = await buildCoinTransfer({
      client: ledger.client,
      payer: buyer,
      to: '0x1',
      amount: 10_000n,
      coinType: ledger.usdcType,
      coin: coin!,
    })
    await expectRejected(
      stale,
      [(await buyer.signTransaction(stale)).signature],
      /needs to be rebuilt .* version 0x1 is unavailable/,
    )
  })

  it('executes only the first of two different transactions spending one coin (double spend)', async () => {
    const buyer = ledger.createTestWallet()
    const [coin] = await coinRefs(ledger.client, buyer.toSuiAddress(), ledger.usdcType)
    const gas = await coinRefs(ledger.client, buyer.toSuiAddress(), '0x2::sui::SUI')
    const a = await buildCoinTransfer({
      client: ledger.client,
      payer: buyer,
      to: '0xa',
      amount: 10_000n,
      coinType: ledger.usdcType,
      coin: coin!,
      gas,
    })
    const b = await buildCoinTransfer({
      client: ledger.client,
      payer: buyer,
      to: '0xb',
      amount: 10_000n,
      coinType: ledger.usdcType,
      coin: coin!,
      gas,
    })
    const [sa, sb] = [
      (await buyer.signTransaction(a)).signature,
      (await buyer.signTransaction(b)).signature,
    ]
    const results = await Promise.allSettled([
      ledger.client.core.executeTransaction({ transaction: a, signatures: [sa] }),
      ledger.client.core.executeTransaction({ transaction: b, signatures: [sb] }),
    ])
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected'])
    const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult
    expect(String(rejected.reason.message)).toMatch(/unavailable for consumption/)
  })

  it('fails (not rejects) a payment larger than the coin, charging gas only', async () => {
    const buyer = ledger.createTestWallet({ usdc: '0.01' })
    const bytes = await usdcTransfer(buyer, 20_000n)
    const result = await ledger.client.core.executeTransaction({
      transaction: bytes,
      signatures: [(await buyer.signTransaction(bytes)).signature],
    })
    expect(result.$kind).toBe('FailedTransaction')
    expect(result.FailedTransaction?.status.error?.message).toMatch(
      /coin balance 10000 is less than 20000/,
    )
  })

  it('rejects gas that does not cover the budget', async () => {
    const buyer = ledger.createTestWallet({ sui: '0.001' })
    const bytes = await usdcTransfer(buyer)
    await expectRejected(
      bytes,
      [(await buyer.signTransaction(bytes)).signature],
      /lower than the needed amount/,
    )
  })
})

describe('expiration and chain', () => {
  // A ledger of its own, whose epochs this file's other tests do not see move.
  const own = useTestLedger({ beforeAll, afterAll })

  it('rejects an expired ValidDuring', async () => {
    const buyer = own.createTestWallet({ into: 'addressBalance', sui: '0' })
    const bytes = await buildGaslessTransfer({
      payer: buyer,
      to: '0x1',
      amount: 20_000n,
      coinType: own.usdcType,
      chainId: own.chainId,
      epoch: 0n,
    })
    own.advanceEpoch()
    own.advanceEpoch()
    await expect(
      own.client.core.executeTransaction({
        transaction: bytes,
        signatures: [(await buyer.signTransaction(bytes)).signature],
      }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: 'Transaction Expired' })
  })

  it('rejects a transaction for another chain', async () => {
    const buyer = ledger.createTestWallet({ into: 'addressBalance', sui: '0' })
    const testnet = '69WiPg3DAQiwdxfncX6wYQ2siKwAe6L9BZthQea3JNMD'
    const bytes = await buildGaslessTransfer({
      payer: buyer,
      to: '0x1',
      amount: 20_000n,
      coinType: ledger.usdcType,
      chainId: testnet,
    })
    await expectRejected(
      bytes,
      [(await buyer.signTransaction(bytes)).signature],
      /is for chain 69Wi.*but this is chain 4bti/,
    )
  })
})

describe('gasless rules', () => {
  const gasless = async (options: {
    fund?: string
    amount: bigint
    coinType?: string
    target?: `${string}::${string}::${string}`
  }) => {
    const buyer = ledger.createTestWallet({
      usdc: options.fund ?? '1',
      sui: '0',
      into: 'addressBalance',
    })
    const bytes = await buildGaslessTransfer({
      payer: buyer,
      to: Ed25519Keypair.generate().toSuiAddress(),
      amount: options.amount,
      coinType: options.coinType ?? ledger.usdcType,
      chainId: ledger.chainId,
      ...(options.target ? { target: options.target } : {}),
    })
    return { bytes, signature: (await buyer.signTransaction(bytes)).signature, buyer }
  }

  it('rejects a gasless transfer below 0.01 USDC', async () => {
    const { bytes, signature } = await gasless({ amount: 9_999n })
    await expectRejected(bytes, [signature], /transfer of 9999 is below the minimum of 10000/)
  })

  it('rejects a gasless transfer leaving a remainder under 0.01 USDC, accepts one taking everything', async () => {
    const short = await gasless({ fund: '0.015', amount: 10_000n })
    await expectRejected(short.bytes, [short.signature], /leaves a remainder of 5000/)
    const all = await gasless({ fund: '0.015', amount: 15_000n })
    expect(
      (
        await ledger.client.core.executeTransaction({
          transaction: all.bytes,
          signatures: [all.signature],
        })
      ).$kind,
    ).toBe('Transaction')
  })

  it('rejects a gasless call outside the allow-list', async () => {
    const { bytes, signature } = await gasless({
      amount: 20_000n,
      target: '0x2::balance::destroy_zero',
    })
    await expectRejected(bytes, [signature], /not allowed without gas/)
  })

  it('rejects gasless wUSDC (USDC only)', async () => {
    const buyer = Ed25519Keypair.generate()
    ledger.faucet({
      address: buyer.toSuiAddress(),
      usdc: '0',
      sui: '0',
      into: 'addressBalance',
      extra: { coinType: WORMHOLE_USDC_TYPE, amount: 1_000_000n },
    })
    const bytes = await buildGaslessTransfer({
      payer: buyer,
      to: '0x1',
      amount: 20_000n,
      coinType: WORMHOLE_USDC_TYPE,
      chainId: ledger.chainId,
    })
    await expectRejected(
      bytes,
      [(await buyer.signTransaction(bytes)).signature],
      /may only move .*usdc::USDC/,
    )
  })

  it('rejects a gasless withdrawal above the address balance (insufficient balance)', async () => {
    const { bytes, signature } = await gasless({ fund: '0.02', amount: 30_000n })
    await expectRejected(bytes, [signature], /Available balance for withdrawal is insufficient/)
  })

  it('rejects a transaction without gas coins and without ValidDuring', async () => {
    const buyer = ledger.createTestWallet({ into: 'addressBalance' })
    const tx = new Transaction()
    tx.setSender(buyer.toSuiAddress())
    tx.setGasPrice(0)
    tx.setGasBudget(0)
    tx.setGasPayment([])
    tx.setExpiration({ None: true })
    const [funds] = tx.moveCall({
      target: '0x2::balance::redeem_funds',
      typeArguments: [ledger.usdcType],
      arguments: [tx.withdrawal({ amount: 20_000n, type: ledger.usdcType })],
    })
    tx.moveCall({
      target: '0x2::balance::send_funds',
      typeArguments: [ledger.usdcType],
      arguments: [funds!, tx.pure.address('0x1')],
    })
    const bytes = await tx.build()
    await expectRejected(
      bytes,
      [(await buyer.signTransaction(bytes)).signature],
      /need a ValidDuring expiration/,
    )
  })
})

describe('Move calls', () => {
  it('aborts a call to a function the ledger does not have, as Move would, charging gas', async () => {
    const buyer = ledger.createTestWallet()
    const gas = await coinRefs(ledger.client, buyer.toSuiAddress(), '0x2::sui::SUI')
    const tx = new Transaction()
    tx.setSender(buyer.toSuiAddress())
    tx.setGasPrice(1000)
    tx.setGasBudget(10_000_000)
    tx.setGasPayment(gas)
    tx.moveCall({ target: '0x1234::nothing::here', arguments: [] })
    const bytes = await tx.build()
    const result = await ledger.client.core.executeTransaction({
      transaction: bytes,
      signatures: [(await buyer.signTransaction(bytes)).signature],
      include: { balanceChanges: true },
    })
    expect(result.$kind).toBe('FailedTransaction')
    expect(result.FailedTransaction?.status.error?.$kind).toBe('MoveAbort')
    expect(result.FailedTransaction?.balanceChanges).toHaveLength(1)
  })
})
