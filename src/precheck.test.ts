import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import type { Transaction } from '@mysten/sui/transactions'
import { describe, expect, it } from 'vitest'
import { normalizeTerms, precheckPayment } from './precheck.js'
import {
  coinPayment,
  gaslessPayment,
  signOffline,
  usdcType as usdc,
  wusdcType as wusdc,
} from './testHelpers.js'

const payTo = `0x${'33'.repeat(32)}`
const buyer = new Ed25519Keypair()
const target = normalizeTerms({ payTo, asset: usdc, amount: 20_000n })

const coinTx = (amount: bigint, options: { to?: string; gasOwner?: string } = {}) =>
  coinPayment({
    sender: buyer.toSuiAddress(),
    to: options.to ?? payTo,
    amount,
    gasOwner: options.gasOwner,
  })
const gaslessTx = (amount: bigint, type = usdc) =>
  gaslessPayment({ sender: buyer.toSuiAddress(), to: payTo, amount, type })
const signed = (tx: Transaction, signer = buyer) => signOffline(tx, signer)

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
