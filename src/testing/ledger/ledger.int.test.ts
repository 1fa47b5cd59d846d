import { SuiGrpcClient } from '@mysten/sui/grpc'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Transaction } from '@mysten/sui/transactions'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { transactionDigest } from '../../internal/suiSignature.js'
import { SUI_TYPE, WORMHOLE_USDC_TYPE } from './state.js'
import { buildCoinTransfer, buildGaslessTransfer, coinRefs, sumByType } from './testHelpers.js'
import { useTestLedger } from './testLedger.js'
import { usdcBalanceOf, useCheckedLedger } from './testSetup.js'

const ledger = useCheckedLedger()

const usdcOf = (address: string) => usdcBalanceOf(ledger, address)

const include = { balanceChanges: true, effects: true, events: true } as const

describe('transaction forms through SuiGrpcClient', () => {
  it('answers the mainnet chain id and USDC type by default', async () => {
    expect((await ledger.client.core.getChainIdentifier()).chainIdentifier).toBe(
      '4btiuiMPvEENsttpZC7CZ53DruC3MAgfznDbASZ7DR6S',
    )
    expect(ledger.usdcType).toBe(
      '0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC',
    )
    expect((await ledger.client.core.getReferenceGasPrice()).referenceGasPrice).toBe('1000')
  })

  it('executes a coin-form USDC payment: balance changes sum to zero for USDC and to minus gas for SUI', async () => {
    const buyer = ledger.createTestWallet({ usdc: '1' })
    const seller = Ed25519Keypair.generate().toSuiAddress()
    const bytes = await buildCoinTransfer({
      client: ledger.client,
      payer: buyer,
      to: seller,
      amount: 20_000n,
      coinType: ledger.usdcType,
    })
    const { signature } = await buyer.signTransaction(bytes)
    const result = await ledger.client.core.executeTransaction({
      transaction: bytes,
      signatures: [signature],
      include,
    })
    expect(result.$kind).toBe('Transaction')
    const tx = result.Transaction!
    expect(tx.digest).toBe(transactionDigest(bytes))
    const sums = sumByType(tx.balanceChanges)
    expect(sums.get(ledger.usdcType)).toBe(0n)
    const gas = tx.effects.gasUsed
    const charged =
      BigInt(gas.computationCost) + BigInt(gas.storageCost) - BigInt(gas.storageRebate)
    expect(sums.get(SUI_TYPE)).toBe(-charged)
    expect(charged).toBeGreaterThan(0n)
    expect(tx.balanceChanges).toContainEqual({
      address: seller,
      coinType: ledger.usdcType,
      amount: '20000',
    })
    expect(await usdcOf(seller)).toMatchObject({
      balance: '20000',
      coinBalance: '20000',
      addressBalance: '0',
    })
    expect((await usdcOf(buyer.toSuiAddress())).balance).toBe('980000')
  })

  it('executes a gasless payment: funds arrive in the address balance, nothing is charged', async () => {
    const buyer = ledger.createTestWallet({ usdc: '1', sui: '0', into: 'addressBalance' })
    const seller = Ed25519Keypair.generate().toSuiAddress()
    const bytes = await buildGaslessTransfer({
      payer: buyer,
      to: seller,
      amount: 20_000n,
      coinType: ledger.usdcType,
      chainId: ledger.chainId,
    })
    const { signature } = await buyer.signTransaction(bytes)
    const result = await ledger.client.core.executeTransaction({
      transaction: bytes,
      signatures: [signature],
      include,
    })
    expect(result.$kind).toBe('Transaction')
    const sums = sumByType(result.Transaction!.balanceChanges)
    expect(sums.get(ledger.usdcType)).toBe(0n)
    expect(sums.has(SUI_TYPE)).toBe(false)
    expect(await usdcOf(seller)).toMatchObject({
      balance: '20000',
      coinBalance: '0',
      addressBalance: '20000',
    })
    expect(
      (await ledger.client.core.listCoins({ owner: seller, coinType: ledger.usdcType })).objects,
    ).toHaveLength(0)
  })

  it('executes a sponsored payment: the sponsor pays gas, both signatures required', async () => {
    const buyer = ledger.createTestWallet({ usdc: '1', sui: '0' })
    const sponsor = ledger.createTestWallet({ usdc: '0', sui: '1' })
    const bytes = await buildCoinTransfer({
      client: ledger.client,
      payer: buyer,
      sponsor,
      to: sponsor.toSuiAddress(),
      amount: 50_000n,
      coinType: ledger.usdcType,
    })
    const signatures = [
      (await buyer.signTransaction(bytes)).signature,
      (await sponsor.signTransaction(bytes)).signature,
    ]
    const result = await ledger.client.core.executeTransaction({
      transaction: bytes,
      signatures,
      include,
    })
    expect(result.$kind).toBe('Transaction')
    const changes = result.Transaction!.balanceChanges
    expect(sumByType(changes).get(ledger.usdcType)).toBe(0n)
    const suiChanges = changes.filter((c) => c.coinType === SUI_TYPE)
    expect(suiChanges).toHaveLength(1)
    expect(suiChanges[0]?.address).toBe(sponsor.toSuiAddress())
    expect(BigInt(suiChanges[0]?.amount ?? 0)).toBeLessThan(0n)
  })

  it('moves wUSDC as its own coin type, so a caller requiring USDC can tell them apart', async () => {
    const buyer = Ed25519Keypair.generate()
    ledger.faucet({
      address: buyer.toSuiAddress(),
      usdc: '0',
      extra: { coinType: WORMHOLE_USDC_TYPE, amount: 1_000_000n },
    })
    const seller = Ed25519Keypair.generate().toSuiAddress()
    const bytes = await buildCoinTransfer({
      client: ledger.client,
      payer: buyer,
      to: seller,
      amount: 20_000n,
      coinType: WORMHOLE_USDC_TYPE,
    })
    const result = await ledger.client.core.executeTransaction({
      transaction: bytes,
      signatures: [(await buyer.signTransaction(bytes)).signature],
      include,
    })
    const received = result.Transaction!.balanceChanges.filter((c) => c.address === seller)
    expect(received).toEqual([{ address: seller, coinType: WORMHOLE_USDC_TYPE, amount: '20000' }])
    expect(received.some((c) => c.coinType === ledger.usdcType)).toBe(false)
  })

  it('fails a transaction atomically: nothing changes but gas', async () => {
    const buyer = ledger.createTestWallet({ usdc: '0.05' })
    const seller = Ed25519Keypair.generate().toSuiAddress()
    const before = await coinRefs(ledger.client, buyer.toSuiAddress(), ledger.usdcType)
    const bytes = await buildCoinTransfer({
      client: ledger.client,
      payer: buyer,
      to: seller,
      amount: 60_000n,
      coinType: ledger.usdcType,
    })
    const result = await ledger.client.core.executeTransaction({
      transaction: bytes,
      signatures: [(await buyer.signTransaction(bytes)).signature],
      include,
    })
    expect(result.$kind).toBe('FailedTransaction')
    expect(result.FailedTransaction!.status.error?.$kind).toBe('Unknown')
    expect(result.FailedTransaction!.status.error?.message).toMatch(/less than 60000/)
    expect(
      result.FailedTransaction!.balanceChanges.every(
        (c) => c.coinType === SUI_TYPE && BigInt(c.amount) < 0n,
      ),
    ).toBe(true)
    expect(await coinRefs(ledger.client, buyer.toSuiAddress(), ledger.usdcType)).toEqual(before)
    expect((await usdcOf(seller)).balance).toBe('0')
  })
})

describe('idempotence', () => {
  it('executes the same bytes submitted 10 times concurrently once; every caller gets the same effects', async () => {
    const buyer = ledger.createTestWallet({ usdc: '1' })
    const seller = Ed25519Keypair.generate().toSuiAddress()
    const bytes = await buildCoinTransfer({
      client: ledger.client,
      payer: buyer,
      to: seller,
      amount: 30_000n,
      coinType: ledger.usdcType,
    })
    const { signature } = await buyer.signTransaction(bytes)
    const results = await Promise.all(
      Array.from({ length: 10 }, () =>
        ledger.client.core.executeTransaction({
          transaction: bytes,
          signatures: [signature],
          include,
        }),
      ),
    )
    const digests = new Set(results.map((r) => r.Transaction?.digest))
    expect(digests.size).toBe(1)
    const effects = results.map((r) =>
      JSON.stringify(r.Transaction?.effects, (_k, v) => (v instanceof Uint8Array ? null : v)),
    )
    expect(new Set(effects).size).toBe(1)
    expect((await usdcOf(seller)).balance).toBe('30000')
    expect((await usdcOf(buyer.toSuiAddress())).balance).toBe('970000')
  })

  it('returns the original effects when executed bytes are submitted again later, changing nothing', async () => {
    const buyer = ledger.createTestWallet({ usdc: '1' })
    const seller = Ed25519Keypair.generate().toSuiAddress()
    const bytes = await buildCoinTransfer({
      client: ledger.client,
      payer: buyer,
      to: seller,
      amount: 30_000n,
      coinType: ledger.usdcType,
    })
    const { signature } = await buyer.signTransaction(bytes)
    const first = await ledger.client.core.executeTransaction({
      transaction: bytes,
      signatures: [signature],
      include,
    })
    const again = await ledger.client.core.executeTransaction({
      transaction: bytes,
      signatures: [signature],
      include,
    })
    expect(again.Transaction?.digest).toBe(first.Transaction?.digest)
    expect(again.Transaction?.checkpoint).toBe(first.Transaction?.checkpoint)
    expect((await usdcOf(seller)).balance).toBe('30000')
  })
})

describe('reading transactions', () => {
  it('finds executed digests with getTransaction and waitForTransaction', async () => {
    const buyer = ledger.createTestWallet({ usdc: '1' })
    const bytes = await buildCoinTransfer({
      client: ledger.client,
      payer: buyer,
      to: buyer.toSuiAddress(),
      amount: 10_000n,
      coinType: ledger.usdcType,
    })
    const executed = await ledger.client.core.executeTransaction({
      transaction: bytes,
      signatures: [(await buyer.signTransaction(bytes)).signature],
    })
    const digest = executed.Transaction!.digest
    const got = await ledger.client.core.getTransaction({
      digest,
      include: { balanceChanges: true, transaction: true },
    })
    expect(got.Transaction?.digest).toBe(digest)
    expect(got.Transaction?.transaction.sender).toBe(buyer.toSuiAddress())
    const waited = await ledger.client.core.waitForTransaction({ digest, timeout: 2_000 })
    expect(waited.Transaction?.digest).toBe(digest)
  })

  it('answers NOT_FOUND for unknown digests, and waitForTransaction times out', async () => {
    const digest = transactionDigest(
      await buildCoinTransfer({
        client: ledger.client,
        payer: ledger.createTestWallet(),
        to: '0x1',
        amount: 1n,
        coinType: ledger.usdcType,
      }),
    )
    await expect(ledger.client.core.getTransaction({ digest })).rejects.toMatchObject({
      reason: 'notFound',
    })
    await expect(ledger.client.core.waitForTransaction({ digest, timeout: 400 })).rejects.toThrow()
  })

  it('simulates without changing anything', async () => {
    const buyer = ledger.createTestWallet({ usdc: '1' })
    const seller = Ed25519Keypair.generate().toSuiAddress()
    const bytes = await buildCoinTransfer({
      client: ledger.client,
      payer: buyer,
      to: seller,
      amount: 10_000n,
      coinType: ledger.usdcType,
    })
    const simulated = await ledger.client.core.simulateTransaction({
      transaction: bytes,
      include: { balanceChanges: true },
    })
    expect(simulated.Transaction?.balanceChanges).toContainEqual({
      address: seller,
      coinType: ledger.usdcType,
      amount: '10000',
    })
    expect((await usdcOf(seller)).balance).toBe('0')
    await expect(
      ledger.client.core.getTransaction({ digest: transactionDigest(bytes) }),
    ).rejects.toMatchObject({ reason: 'notFound' })
  })

  it('answers UNIMPLEMENTED for methods it does not serve, without hanging', async () => {
    await expect(
      ledger.client.movePackageService.getPackage({ packageId: '0x2' }),
    ).rejects.toMatchObject({
      code: 'UNIMPLEMENTED',
    })
  })

  it('speaks application/grpc-web+proto as well as grpc-web-text', async () => {
    const binary = new SuiGrpcClient({ network: 'mainnet', baseUrl: ledger.url, format: 'binary' })
    expect((await binary.core.getChainIdentifier()).chainIdentifier).toBe(ledger.chainId)
    const wallet = ledger.createTestWallet({ usdc: '2' })
    expect(
      (await binary.core.getBalance({ owner: wallet.toSuiAddress(), coinType: ledger.usdcType }))
        .balance.balance,
    ).toBe('2000000')
  })
})

describe('gas from the address balance, and epochs', () => {
  it('charges gas to the SUI address balance when no gas coin is given', async () => {
    const buyer = ledger.createTestWallet({ usdc: '1', sui: '0' })
    ledger.faucet({ address: buyer.toSuiAddress(), usdc: '0', sui: '1', into: 'addressBalance' })
    const seller = Ed25519Keypair.generate().toSuiAddress()
    const [coin] = await coinRefs(ledger.client, buyer.toSuiAddress(), ledger.usdcType)
    const tx = new Transaction()
    tx.setSender(buyer.toSuiAddress())
    tx.setGasPrice(1000)
    tx.setGasBudget(10_000_000)
    tx.setGasPayment([])
    tx.setExpiration({
      ValidDuring: {
        minEpoch: '0',
        maxEpoch: '1',
        minTimestamp: null,
        maxTimestamp: null,
        chain: ledger.chainId,
        nonce: 1,
      },
    })
    const [paid] = tx.splitCoins(tx.objectRef(coin!), [tx.pure.u64(20_000)])
    tx.transferObjects([paid!], tx.pure.address(seller))
    const bytes = await tx.build()
    const result = await ledger.client.core.executeTransaction({
      transaction: bytes,
      signatures: [(await buyer.signTransaction(bytes)).signature],
      include,
    })
    expect(result.$kind).toBe('Transaction')
    expect(result.Transaction!.effects.gasObject).toBeNull()
    const sui = result.Transaction!.balanceChanges.filter((c) => c.coinType === SUI_TYPE)
    expect(sui).toHaveLength(1)
    const after = await ledger.client.core.getBalance({ owner: buyer.toSuiAddress() })
    expect(BigInt(after.balance.addressBalance)).toBe(1_000_000_000n + BigInt(sui[0]!.amount))
  })

  describe('with an epoch timer', () => {
    const timed = useTestLedger({ beforeAll, afterAll }, { epochDurationMs: 50 })

    it('advances epochs on a timer, and reports them to the SDK', async () => {
      await new Promise((resolve) => setTimeout(resolve, 250))
      const { systemState } = await timed.client.core.getCurrentSystemState()
      expect(Number(systemState.epoch)).toBeGreaterThanOrEqual(2)
    })
  })
})
