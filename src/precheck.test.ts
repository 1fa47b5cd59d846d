import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Transaction } from '@mysten/sui/transactions'
import { toBase64 } from '@mysten/sui/utils'
import { describe, expect, it } from 'vitest'
import { normalizeTerms, precheckPayment } from './precheck.js'

const usdc = '0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC'
const wusdc = '0x5d4b302506645c37ff133b98c4b50a5ae14841659738d6d733d59d0d217a93bf::coin::COIN'
const payTo = `0x${'33'.repeat(32)}`
const ref = '4btiuiMPvEENsttpZC7CZ53DruC3MAgfznDbASZ7DR6S'
const buyer = new Ed25519Keypair()
const target = normalizeTerms({ payTo, asset: usdc, amount: 20_000n })

function coinTx(amount: bigint, options: { to?: string; gasOwner?: string } = {}): Transaction {
  const tx = new Transaction()
  tx.setSender(buyer.toSuiAddress())
  tx.setGasPrice(1000)
  tx.setGasBudget(5_000_000)
  if (options.gasOwner) tx.setGasOwner(options.gasOwner)
  tx.setGasPayment([{ objectId: `0x${'11'.repeat(32)}`, version: '5', digest: ref }])
  const [c] = tx.splitCoins(
    tx.objectRef({ objectId: `0x${'22'.repeat(32)}`, version: '7', digest: ref }),
    [amount],
  )
  tx.transferObjects([c!], options.to ?? payTo)
  return tx
}

function gaslessTx(amount: bigint, type = usdc): Transaction {
  const tx = new Transaction()
  tx.setSender(buyer.toSuiAddress())
  tx.setGasPrice(0)
  tx.setGasBudget(0)
  tx.setGasPayment([])
  tx.setExpiration({
    ValidDuring: {
      minEpoch: '1',
      maxEpoch: '2',
      minTimestamp: null,
      maxTimestamp: null,
      chain: ref,
      nonce: 1,
    },
  })
  tx.moveCall({
    target: '0x2::balance::send_funds',
    typeArguments: [type],
    arguments: [tx.balance({ type, balance: amount }), tx.pure.address(payTo)],
  })
  return tx
}

async function signed(tx: Transaction, signer = buyer) {
  const bytes = await tx.build({ assumeSufficientAddressBalances: true } as never)
  const { signature } = await signer.signTransaction(bytes)
  return { transaction: toBase64(bytes), signature, bytes }
}

async function codeOf(
  tx: Transaction,
  signer = buyer,
  forms?: ('coin' | 'gasless' | 'sponsored')[],
) {
  const { transaction, signature } = await signed(tx, signer)
  const result = await precheckPayment(
    transaction,
    signature,
    target,
    forms ? { allowedForms: forms } : {},
  )
  return result.status === 'rejected' ? result.error.code : result.form
}

describe('precheckPayment', () => {
  it('accepts a coin-form payment and computes the digest from the bytes', async () => {
    const tx = coinTx(20_000n)
    const { transaction, signature } = await signed(tx)
    const result = await precheckPayment(transaction, signature, target)
    expect(result).toMatchObject({ status: 'ok', form: 'coin', sender: buyer.toSuiAddress() })
    if (result.status === 'ok') expect(result.digest).toBe(await tx.getDigest())
  })

  it('accepts a gasless payment with the amount proven from the bytes', async () => {
    const { transaction, signature } = await signed(gaslessTx(25_000n))
    const result = await precheckPayment(transaction, signature, target)
    expect(result).toMatchObject({ status: 'ok', form: 'gasless', provenAmount: 25_000n })
  })

  it.each([
    ['underpaid', () => coinTx(19_999n), 'insufficient_amount'],
    [
      'paid to someone else',
      () => coinTx(20_000n, { to: `0x${'44'.repeat(32)}` }),
      'wrong_recipient',
    ],
    ['paid in wUSDC', () => gaslessTx(20_000n, wusdc), 'wrong_asset'],
    [
      'sponsored without a sponsor',
      () => coinTx(20_000n, { gasOwner: `0x${'55'.repeat(32)}` }),
      'transaction_form_not_allowed',
    ],
  ])('rejects a payment %s', async (_name, make, code) => {
    expect(await codeOf(make())).toBe(code)
  })

  it('rejects a signature by someone other than the sender', async () => {
    expect(await codeOf(coinTx(20_000n), new Ed25519Keypair())).toBe('signer_mismatch')
  })

  it('rejects a tampered signature and undecodable bytes', async () => {
    const { transaction, signature } = await signed(coinTx(20_000n))
    const sig = Buffer.from(signature, 'base64')
    sig[10] = (sig[10] ?? 0) ^ 0xff
    const bad = await precheckPayment(transaction, sig.toString('base64'), target)
    expect(bad.status === 'rejected' && bad.error.code).toBe('invalid_signature')
    const junk = await precheckPayment('AAAA', signature, target)
    expect(junk.status === 'rejected' && junk.error.code).toBe('invalid_transaction')
  })

  it('rejects a form the seller does not allow', async () => {
    expect(await codeOf(gaslessTx(20_000n), buyer, ['coin'])).toBe('transaction_form_not_allowed')
  })
})
