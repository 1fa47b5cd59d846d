import { bcs } from '@mysten/sui/bcs'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Transaction } from '@mysten/sui/transactions'
import { normalizeStructTag } from '@mysten/sui/utils'
import { describe, expect, it } from 'vitest'
import { analyseTransfers, paymentTo } from './transfers.js'

const usdc = normalizeStructTag(
  '0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC',
)
const wusdc = normalizeStructTag(
  '0x5d4b302506645c37ff133b98c4b50a5ae14841659738d6d733d59d0d217a93bf::coin::COIN',
)
const payTo = `0x${'33'.repeat(32)}`
const other = `0x${'44'.repeat(32)}`
const digest = '4btiuiMPvEENsttpZC7CZ53DruC3MAgfznDbASZ7DR6S'
const sender = new Ed25519Keypair().toSuiAddress()

function coinForm(amount: bigint, to = payTo): Transaction {
  const tx = new Transaction()
  tx.setSender(sender)
  tx.setGasPrice(1000)
  tx.setGasBudget(5_000_000)
  tx.setGasPayment([{ objectId: `0x${'11'.repeat(32)}`, version: '5', digest }])
  const coin = tx.objectRef({ objectId: `0x${'22'.repeat(32)}`, version: '7', digest })
  const [c] = tx.splitCoins(coin, [amount])
  tx.transferObjects([c!], to)
  return tx
}

function gaslessForm(amount: bigint, type = usdc, to = payTo): Transaction {
  const tx = new Transaction()
  tx.setSender(sender)
  tx.setGasPrice(0)
  tx.setGasBudget(0)
  tx.setGasPayment([])
  tx.setExpiration({
    ValidDuring: {
      minEpoch: '1',
      maxEpoch: '2',
      minTimestamp: null,
      maxTimestamp: null,
      chain: digest,
      nonce: 7,
    },
  })
  tx.moveCall({
    target: '0x2::balance::send_funds',
    typeArguments: [type],
    arguments: [tx.balance({ type, balance: amount }), tx.pure.address(to)],
  })
  return tx
}

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
