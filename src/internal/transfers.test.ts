import { bcs } from '@mysten/sui/bcs'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import type { Transaction } from '@mysten/sui/transactions'
import { normalizeStructTag } from '@mysten/sui/utils'
import { describe, expect, it } from 'vitest'
import { coinPayment, gaslessPayment, someDigest, usdcType, wusdcType } from '../testHelpers.js'
import { analyseTransfers, paymentTo } from './transfers.js'

const usdc = normalizeStructTag(usdcType)
const wusdc = normalizeStructTag(wusdcType)
const payTo = `0x${'33'.repeat(32)}`
const other = `0x${'44'.repeat(32)}`
const digest = someDigest
const sender = new Ed25519Keypair().toSuiAddress()

const coinForm = (amount: bigint, to = payTo) => coinPayment({ sender, to, amount })
const gaslessForm = (amount: bigint, type = usdc, to = payTo) =>
  gaslessPayment({ sender, to, amount, type })

async function analyse(tx: Transaction) {
  const bytes = await tx.build({ assumeSufficientAddressBalances: true } as never)
  const result = analyseTransfers(bcs.TransactionData.parse(bytes).V1)
  if (result.status !== 'ok') throw new Error(result.reason)
  return result
}

describe('analyseTransfers', () => {
  it('finds a split-and-transfer of an owned coin (type known only to the ledger)', async () => {
    const { transfers } = await analyse(coinForm(20_000n))
    expect(transfers).toEqual([{ to: payTo, type: undefined, amount: 20_000n, via: 'object' }])
    expect(paymentTo(transfers, payTo, usdc)).toMatchObject({
      possibleAmount: 20_000n,
      provenAmount: 0n,
      unbounded: false,
    })
  })

  it('finds a gasless address-balance send with its stated type', async () => {
    const { transfers, calls } = await analyse(gaslessForm(20_000n))
    expect(transfers).toEqual([{ to: payTo, type: usdc, amount: 20_000n, via: 'funds' }])
    expect(calls).toEqual([])
    expect(paymentTo(transfers, payTo, usdc).provenAmount).toBe(20_000n)
  })

  it('sees a payment in another asset', async () => {
    const { transfers } = await analyse(gaslessForm(20_000n, wusdc))
    expect(paymentTo(transfers, payTo, usdc)).toMatchObject({
      hasOtherAsset: true,
      possibleAmount: 0n,
      reachesRecipient: true,
    })
  })

  it('sees a payment to someone else', async () => {
    const { transfers } = await analyse(coinForm(20_000n, other))
    expect(paymentTo(transfers, payTo, usdc).reachesRecipient).toBe(false)
  })

  it('marks a whole-coin transfer as unbounded and lists unknown calls', async () => {
    const tx = coinForm(1n)
    tx.transferObjects(
      [tx.objectRef({ objectId: `0x${'55'.repeat(32)}`, version: '1', digest })],
      payTo,
    )
    tx.moveCall({ target: '0x2::coin::destroy_zero', typeArguments: [usdc], arguments: [] })
    const { transfers, calls } = await analyse(tx)
    expect(paymentTo(transfers, payTo, usdc).unbounded).toBe(true)
    expect(calls).toEqual([`0x${'0'.repeat(63)}2::coin::destroy_zero`])
  })
})
