import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { coinWithBalance, Transaction } from '@mysten/sui/transactions'
import { describe, expect, it } from 'vitest'
import { SUI_TYPE } from './state.js'
import { coinRefs, sumByType } from './testHelpers.js'
import { useCheckedLedger } from './testSetup.js'

const ledger = useCheckedLedger()

async function run(tx: Transaction, signer: Ed25519Keypair) {
  const bytes = await tx.build({ client: ledger.client })
  return ledger.client.core.executeTransaction({
    transaction: bytes,
    signatures: [(await signer.signTransaction(bytes)).signature],
    include: { balanceChanges: true, transaction: true },
  })
}

describe('building with the client (server-side resolution through SimulateTransaction)', () => {
  it('resolves object ids, gas price, gas coins and the budget of a coin-form payment', async () => {
    const buyer = ledger.createTestWallet({ usdc: '1' })
    const seller = Ed25519Keypair.generate().toSuiAddress()
    const [coin] = await coinRefs(ledger.client, buyer.toSuiAddress(), ledger.usdcType)
    const tx = new Transaction()
    tx.setSender(buyer.toSuiAddress())
    const [paid] = tx.splitCoins(tx.object(coin!.objectId), [20_000])
    tx.transferObjects([paid!], seller)
    const result = await run(tx, buyer)
    expect(result.$kind).toBe('Transaction')
    const data = result.Transaction!.transaction
    expect(data.gasData.price).toBe('1000')
    expect(BigInt(data.gasData.budget ?? 0)).toBeGreaterThanOrEqual(1_000_000n)
    expect(data.gasData.payment).toHaveLength(1)
    expect(result.Transaction!.balanceChanges).toContainEqual({
      address: seller,
      coinType: ledger.usdcType,
      amount: '20000',
    })
  })

  it('builds a coinWithBalance payment with the SDK intent resolver', async () => {
    const buyer = ledger.createTestWallet({ usdc: '1' })
    const seller = Ed25519Keypair.generate().toSuiAddress()
    const tx = new Transaction()
    tx.setSender(buyer.toSuiAddress())
    tx.transferObjects([coinWithBalance({ type: ledger.usdcType, balance: 30_000n })], seller)
    const result = await run(tx, buyer)
    expect(result.$kind).toBe('Transaction')
    const sums = sumByType(result.Transaction!.balanceChanges)
    expect(sums.get(ledger.usdcType)).toBe(0n)
    expect(sums.get(SUI_TYPE)! < 0n).toBe(true)
    expect(
      (await ledger.client.core.getBalance({ owner: seller, coinType: ledger.usdcType })).balance
        .balance,
    ).toBe('30000')
  })

  it('surfaces a failing resolution as a simulation error', async () => {
    const buyer = ledger.createTestWallet({ usdc: '0.01' })
    const [coin] = await coinRefs(ledger.client, buyer.toSuiAddress(), ledger.usdcType)
    const tx = new Transaction()
    tx.setSender(buyer.toSuiAddress())
    const [paid] = tx.splitCoins(tx.object(coin!.objectId), [20_000])
    tx.transferObjects([paid!], '0x1')
    await expect(tx.build({ client: ledger.client })).rejects.toThrow(/less than 20000/)
  })
})
