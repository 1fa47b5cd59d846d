/**
 * Sui's rules for the gas coin and for values passed to Move calls, where a seller's safety depends
 * on them: the gas coin is taken by value only by TransferObjects (a Move call that takes it by
 * value fails, so it can neither pay someone out of the gas coin nor be joined to itself); one value
 * is never passed twice; a transferred gas coin really changes hands. The supply invariant of
 * `useTestLedger` checks after every transaction that no SUI was minted.
 */
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Transaction } from '@mysten/sui/transactions'
import { describe, expect, it } from 'vitest'
import { addressBalanceOf, coinsOf, SUI_TYPE } from './state.js'
import { coinRefs } from './testHelpers.js'
import { useCheckedLedger } from './testSetup.js'

const ledger = useCheckedLedger()

const include = { balanceChanges: true, effects: true } as const
const gasBudget = 10_000_000n

/** A payer with two SUI coins (one pays gas, one is an ordinary input) and a recipient. */
function parties() {
  const payer = ledger.createTestWallet({
    usdc: '0',
    sui: '1',
    extra: { coinType: SUI_TYPE, amount: 500_000_000n },
  })
  return { payer, to: Ed25519Keypair.generate().toSuiAddress() }
}

/** Builds a coin-gas transaction with `build`, signs and executes it. */
async function run(payer: Ed25519Keypair, build: (tx: Transaction, other: object) => void) {
  const sender = payer.toSuiAddress()
  const [gas, other] = await coinRefs(ledger.client, sender, SUI_TYPE)
  const tx = new Transaction()
  tx.setSender(sender)
  tx.setGasPrice(1000)
  tx.setGasBudget(gasBudget)
  tx.setGasPayment([{ objectId: gas!.objectId, version: gas!.version, digest: gas!.digest }])
  build(
    tx,
    tx.objectRef({ objectId: other!.objectId, version: other!.version, digest: other!.digest }),
  )
  const bytes = await tx.build()
  const { signature } = await payer.signTransaction(bytes)
  const result = await ledger.client.core.executeTransaction({
    transaction: bytes,
    signatures: [signature],
    include,
  })
  return { result, gas: gas!, other: other! }
}

const suiHeldBy = (address: string) =>
  coinsOf(ledger.engine.state, address, SUI_TYPE).reduce(
    (sum, c) => sum + (c.coin?.balance ?? 0n),
    0n,
  ) + addressBalanceOf(ledger.engine.state, address, SUI_TYPE)

describe('the gas coin', () => {
  it.each([
    [
      'coin::send_funds<SUI>(GasCoin, to) — pays out the gas coin',
      (tx: Transaction, to: string) =>
        tx.moveCall({
          target: '0x2::coin::send_funds',
          typeArguments: [SUI_TYPE],
          arguments: [tx.gas, tx.pure.address(to)],
        }),
    ],
    [
      'coin::join<SUI>(GasCoin, GasCoin) — doubles the gas coin',
      (tx: Transaction) =>
        tx.moveCall({
          target: '0x2::coin::join',
          typeArguments: [SUI_TYPE],
          arguments: [tx.gas, tx.gas],
        }),
    ],
    [
      'coin::into_balance<SUI>(GasCoin) then balance::send_funds',
      (tx: Transaction, to: string) => {
        const [balance] = tx.moveCall({
          target: '0x2::coin::into_balance',
          typeArguments: [SUI_TYPE],
          arguments: [tx.gas],
        })
        tx.moveCall({
          target: '0x2::balance::send_funds',
          typeArguments: [SUI_TYPE],
          arguments: [balance!, tx.pure.address(to)],
        })
      },
    ],
    [
      'transfer::public_transfer(GasCoin, to)',
      (tx: Transaction, to: string) =>
        tx.moveCall({
          target: '0x2::transfer::public_transfer',
          typeArguments: [`0x2::coin::Coin<${SUI_TYPE}>`],
          arguments: [tx.gas, tx.pure.address(to)],
        }),
    ],
  ])(
    'may not be taken by value by a Move call: %s fails, only gas is charged',
    async (_name, call) => {
      const { payer, to } = parties()
      const before = suiHeldBy(payer.toSuiAddress())
      const { result } = await run(payer, (tx) => {
        call(tx, to)
      })
      expect(result.$kind).toBe('FailedTransaction')
      const failed = result.FailedTransaction!
      expect(failed.status.error?.message).toMatch(/InvalidGasCoinUsage|passed twice/)
      expect(suiHeldBy(to)).toBe(0n)
      const gas = failed.effects!.gasUsed
      const charged =
        BigInt(gas.computationCost) + BigInt(gas.storageCost) - BigInt(gas.storageRebate)
      expect(suiHeldBy(payer.toSuiAddress())).toBe(before - charged)
    },
  )

  it('may be used by reference: coin::join(GasCoin, coin) and SplitCoins(GasCoin) succeed', async () => {
    const { payer, to } = parties()
    const { result, gas, other } = await run(payer, (tx, coin) => {
      tx.moveCall({
        target: '0x2::coin::join',
        typeArguments: [SUI_TYPE],
        arguments: [tx.gas, coin as never],
      })
      const [part] = tx.splitCoins(tx.gas, [tx.pure.u64(1_000n)])
      tx.transferObjects([part!], tx.pure.address(to))
    })
    expect(result.$kind).toBe('Transaction')
    expect(suiHeldBy(to)).toBe(1_000n)
    const merged = ledger.engine.state.objects.get(gas.objectId)
    const gasUsed = result.Transaction!.effects!.gasUsed
    const charged =
      BigInt(gasUsed.computationCost) + BigInt(gasUsed.storageCost) - BigInt(gasUsed.storageRebate)
    expect(merged?.coin?.balance).toBe(gas.balance + other.balance - 1_000n - charged)
    expect(ledger.engine.state.objects.has(other.objectId)).toBe(false)
  })

  it('moves to the recipient when TransferObjects takes it, net of the gas charged', async () => {
    const { payer, to } = parties()
    const { result, gas } = await run(payer, (tx) => {
      tx.transferObjects([tx.gas], tx.pure.address(to))
    })
    expect(result.$kind).toBe('Transaction')
    const moved = ledger.engine.state.objects.get(gas.objectId)
    expect(moved?.owner).toEqual({ kind: 'address', address: to })
    const gasUsed = result.Transaction!.effects!.gasUsed
    const charged =
      BigInt(gasUsed.computationCost) + BigInt(gasUsed.storageCost) - BigInt(gasUsed.storageRebate)
    expect(moved?.coin?.balance).toBe(gas.balance - charged)
    const toRecipient = result.Transaction!.balanceChanges.filter((c) => c.address === to)
    expect(toRecipient).toEqual([
      { address: to, coinType: SUI_TYPE, amount: String(gas.balance - charged) },
    ])
  })
})

describe('values passed to a Move call', () => {
  it('one coin may not be passed twice: coin::join(c, c) fails', async () => {
    const { payer } = parties()
    const { result, other } = await run(payer, (tx, coin) => {
      tx.moveCall({
        target: '0x2::coin::join',
        typeArguments: [SUI_TYPE],
        arguments: [coin as never, coin as never],
      })
    })
    expect(result.$kind).toBe('FailedTransaction')
    expect(result.FailedTransaction!.status.error?.message).toMatch(/passed twice/)
    expect(ledger.engine.state.objects.get(other.objectId)?.coin?.balance).toBe(other.balance)
  })

  it('a coin of another type may not be joined: coin::join<SUI>(gas, USDC coin) fails', async () => {
    const payer = ledger.createTestWallet({ usdc: '1', sui: '1' })
    const sender = payer.toSuiAddress()
    const [gas] = await coinRefs(ledger.client, sender, SUI_TYPE)
    const [usdc] = await coinRefs(ledger.client, sender, ledger.usdcType)
    const tx = new Transaction()
    tx.setSender(sender)
    tx.setGasPrice(1000)
    tx.setGasBudget(gasBudget)
    tx.setGasPayment([{ objectId: gas!.objectId, version: gas!.version, digest: gas!.digest }])
    tx.moveCall({
      target: '0x2::coin::join',
      typeArguments: [SUI_TYPE],
      arguments: [tx.gas, tx.objectRef(usdc!)],
    })
    const bytes = await tx.build()
    const result = await ledger.client.core.executeTransaction({
      transaction: bytes,
      signatures: [(await payer.signTransaction(bytes)).signature],
      include,
    })
    expect(result.$kind).toBe('FailedTransaction')
    expect(ledger.engine.state.objects.get(usdc!.objectId)?.coin?.balance).toBe(usdc!.balance)
  })
})
