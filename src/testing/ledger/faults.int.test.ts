import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Transaction } from '@mysten/sui/transactions'
import { describe, expect, it } from 'vitest'
import { transactionDigest } from '../../internal/suiSignature.js'
import { SUI_TYPE } from './state.js'
import { buildCoinTransfer, coinRefs } from './testHelpers.js'
import { usdcBalanceOf, useCheckedLedger } from './testSetup.js'

const ledger = useCheckedLedger()

const usdcOf = (address: string) => usdcBalanceOf(ledger, address)

const include = { balanceChanges: true, effects: true, events: true } as const

describe('faults and faucet', () => {
  it('lost response after commit: the client errors, yet finds the transaction by digest', async () => {
    const buyer = ledger.createTestWallet({ usdc: '1' })
    const seller = Ed25519Keypair.generate().toSuiAddress()
    const bytes = await buildCoinTransfer({
      client: ledger.client,
      payer: buyer,
      to: seller,
      amount: 40_000n,
      coinType: ledger.usdcType,
    })
    ledger.faults.loseNextResponses = 1
    await expect(
      ledger.client.core.executeTransaction({
        transaction: bytes,
        signatures: [(await buyer.signTransaction(bytes)).signature],
      }),
    ).rejects.toThrow()
    const found = await ledger.client.core.getTransaction({
      digest: transactionDigest(bytes),
      include: { balanceChanges: true },
    })
    expect(found.Transaction?.balanceChanges).toContainEqual({
      address: seller,
      coinType: ledger.usdcType,
      amount: '40000',
    })
  })

  it('fail-next and unavailable faults answer UNAVAILABLE and execute nothing', async () => {
    const buyer = ledger.createTestWallet({ usdc: '1' })
    const bytes = await buildCoinTransfer({
      client: ledger.client,
      payer: buyer,
      to: '0x2',
      amount: 10_000n,
      coinType: ledger.usdcType,
    })
    const { signature } = await buyer.signTransaction(bytes)
    ledger.faults.failNextExecutions = 1
    await expect(
      ledger.client.core.executeTransaction({ transaction: bytes, signatures: [signature] }),
    ).rejects.toMatchObject({ code: 'UNAVAILABLE' })
    await expect(
      ledger.client.core.getTransaction({ digest: transactionDigest(bytes) }),
    ).rejects.toMatchObject({ reason: 'notFound' })
    ledger.faults.unavailable = true
    await expect(ledger.client.core.getReferenceGasPrice()).rejects.toMatchObject({
      code: 'UNAVAILABLE',
    })
    ledger.faults.unavailable = false
    const result = await ledger.client.core.executeTransaction({
      transaction: bytes,
      signatures: [signature],
    })
    expect(result.$kind).toBe('Transaction')
  })

  it('mints over POST /faucet into coins or the address balance, and refuses bad requests', async () => {
    const address = Ed25519Keypair.generate().toSuiAddress()
    const post = (body: unknown) =>
      fetch(`${ledger.url}/faucet`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
    const minted = await post({ address, usdc: '2.5', sui: '0' })
    expect(minted.status).toBe(200)
    const body = (await minted.json()) as { coins: { coinType: string; balance: string }[] }
    expect(body.coins).toEqual([
      expect.objectContaining({ coinType: ledger.usdcType, balance: '2500000' }),
    ])
    expect((await post({ address, usdc: '1', sui: '0', into: 'addressBalance' })).status).toBe(200)
    expect(await usdcOf(address)).toMatchObject({
      coinBalance: '2500000',
      addressBalance: '1000000',
      balance: '3500000',
    })
    expect((await post({ address: 'not-an-address' })).status).toBe(400)
    expect((await post({ address, usdc: '-1' })).status).toBe(400)
    expect((await post({ address, usdc: '0.0000001' })).status).toBe(400)
  })

  it('lists balances and owned coins, and reads objects by id', async () => {
    const wallet = ledger.createTestWallet({ usdc: '3', sui: '2' })
    const { balances } = await ledger.client.core.listBalances({ owner: wallet.toSuiAddress() })
    expect(balances.map((b) => [b.coinType, b.balance]).sort()).toEqual(
      [
        [ledger.usdcType, '3000000'],
        [SUI_TYPE, '2000000000'],
      ].sort(),
    )
    const [coin] = await coinRefs(ledger.client, wallet.toSuiAddress(), ledger.usdcType)
    const { objects } = await ledger.client.core.getObjects({
      objectIds: [coin!.objectId, '0x123'],
    })
    expect(objects[0]).toMatchObject({
      objectId: coin!.objectId,
      version: coin!.version,
      digest: coin!.digest,
    })
    expect(objects[1]).toBeInstanceOf(Error)
  })
})

describe('transactions built with the SDK intents', () => {
  it('executes a gasless payment built with tx.balance intents and assumeSufficientAddressBalances', async () => {
    const buyer = ledger.createTestWallet({ usdc: '1', sui: '0', into: 'addressBalance' })
    const seller = Ed25519Keypair.generate().toSuiAddress()
    const tx = new Transaction()
    tx.setSender(buyer.toSuiAddress())
    tx.setGasPrice(0)
    tx.setGasBudget(0)
    tx.setGasPayment([])
    tx.setExpiration({
      ValidDuring: {
        minEpoch: '0',
        maxEpoch: '1',
        minTimestamp: null,
        maxTimestamp: null,
        chain: ledger.chainId,
        nonce: 7,
      },
    })
    const funds = tx.balance({ balance: 25_000n, type: ledger.usdcType })
    tx.moveCall({
      target: '0x2::balance::send_funds',
      typeArguments: [ledger.usdcType],
      arguments: [funds, tx.pure.address(seller)],
    })
    const bytes = await tx.build({ assumeSufficientAddressBalances: true })
    const result = await ledger.client.core.executeTransaction({
      transaction: bytes,
      signatures: [(await buyer.signTransaction(bytes)).signature],
      include,
    })
    expect(result.$kind).toBe('Transaction')
    expect((await usdcOf(seller)).addressBalance).toBe('25000')
  })
})

describe('untrusted requests', () => {
  const call = (path: string, body: BodyInit, type = 'application/grpc-web+proto') =>
    fetch(`${ledger.url}/${path}`, { method: 'POST', headers: { 'content-type': type }, body })

  it('answers malformed bodies INVALID_ARGUMENT and unknown services UNIMPLEMENTED', async () => {
    const garbage = await call(
      'sui.rpc.v2.LedgerService/GetTransaction',
      Uint8Array.of(0, 0, 0, 0, 9, 1),
    )
    expect(garbage.headers.get('grpc-status')).toBe('3')
    const unknown = await call('sui.rpc.v2.NameService/LookupName', Uint8Array.of(0, 0, 0, 0, 0))
    expect(unknown.headers.get('grpc-status')).toBe('12')
    const notGrpc = await call(
      'sui.rpc.v2.LedgerService/GetEpoch',
      'not base64 at all',
      'application/grpc-web-text',
    )
    expect(notGrpc.headers.get('grpc-status')).toBe('3')
  })

  it('refuses bodies over the size limit', async () => {
    const huge = new Uint8Array(2 * 1024 * 1024)
    const response = await call(
      'sui.rpc.v2.TransactionExecutionService/ExecuteTransaction',
      huge,
    ).catch(() => undefined)
    expect(response === undefined || response.headers.get('grpc-status') === '3').toBe(true)
  })
})
