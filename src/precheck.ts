/**
 * The seller's local pre-check of an x402 payment: everything that can be decided from the signed
 * bytes alone, with no ledger round trip. A payment that fails here is rejected before it costs the
 * seller a ledger call or a store write; one that passes still has to settle, and its effects are
 * checked after execution (the authority).
 *
 * @module
 */
import { normalizeStructTag, normalizeSuiAddress } from '@mysten/sui/utils'
import { PaymentError, type PaymentErrorCode } from './errors.js'
import { decodeBase64 } from './internal/base64.js'
import {
  type ImportedKeys,
  importedKeys,
  verifyTransactionSigner,
} from './internal/suiSignature.js'
import { parseTransactionData, transactionDigest } from './internal/transactionData.js'
import { analyseTransfers, paymentTo, type RawTransactionData } from './internal/transfers.js'

/**
 * How a payment transaction pays for its gas.
 * - `coin`: the buyer pays gas from its own SUI coins.
 * - `gasless`: gas price 0, budget 0, no gas payment (stable-coin transfer from address balances).
 * - `sponsored`: someone other than the sender owns the gas.
 */
export type TransactionForm = 'coin' | 'gasless' | 'sponsored'

/** What a payment must pay, normalised by {@link normalizeTerms}. */
export type PaymentTarget = {
  /** Recipient address. */
  payTo: string
  /** Coin type of the asset (USDC). */
  asset: string
  /** Minimum amount in base units. */
  amount: bigint
}

/** Options of {@link precheckPayment}. */
export type PrecheckOptions = {
  /**
   * Transaction forms accepted. Default `['coin', 'gasless']`. `sponsored` needs the seller to
   * co-sign gas, which this engine does not do: listing it here without a sponsor is an error.
   */
  allowedForms?: readonly TransactionForm[] | undefined
  /** Largest transaction accepted, in bytes. Default 16 384. */
  maxTransactionBytes?: number | undefined
}

/**
 * Imported signature keys, remembered per options object: an engine passes the same one to every
 * check it makes, so its payers' keys are imported once (bounded); a call without options keeps none.
 */
const keysByOptions = new WeakMap<PrecheckOptions, ImportedKeys>()

function keysOf(options: PrecheckOptions): ImportedKeys {
  let keys = keysByOptions.get(options)
  if (keys === undefined) {
    keys = importedKeys()
    keysByOptions.set(options, keys)
  }
  return keys
}

/** A payment that passed the pre-check. */
export type PrecheckedPayment = {
  status: 'ok'
  /** The digest computed from the bytes: the replay key. Never one the client supplied. */
  digest: string
  /** Normalised sender address (the payer). */
  sender: string
  form: TransactionForm
  /** The exact bytes to submit. */
  txBytes: Uint8Array
  /** Amount the bytes prove is sent to `payTo` in the asset (0 when only the ledger can tell). */
  provenAmount: bigint
}

/** The result of {@link precheckPayment}. */
export type PrecheckResult = PrecheckedPayment | { status: 'rejected'; error: PaymentError }

/** Normalises a recipient address and asset type so that comparisons are exact. */
export function normalizeTerms(target: PaymentTarget): PaymentTarget {
  return {
    payTo: normalizeSuiAddress(target.payTo),
    asset: normalizeStructTag(target.asset),
    amount: target.amount,
  }
}

const defaultForms: readonly TransactionForm[] = ['coin', 'gasless']

/**
 * Checks a signed payment transaction against what it must pay, offline:
 * the signature is valid and by the sender; the digest is computed from the bytes; the form
 * (coin / gasless / sponsored) is allowed; and the commands can send at least `amount` of `asset`
 * to `payTo` (obvious underpayment, wrong recipient and wrong asset are rejected here).
 *
 * Never throws for bad input.
 *
 * @param transaction - base64 BCS `TransactionData` as sent by the buyer.
 * @param signature - base64 serialized Sui signature of the sender.
 * @param target - the route's terms, normalised with {@link normalizeTerms}.
 * @example
 * const checked = await precheckPayment(payload.transaction, payload.signature, normalizeTerms(terms))
 * if (checked.status === 'rejected') return reject(checked.error)
 */
export async function precheckPayment(
  transaction: string,
  signature: string,
  target: PaymentTarget,
  options: PrecheckOptions = {},
): Promise<PrecheckResult> {
  try {
    return await precheck(transaction, signature, target, options)
  } catch {
    // Whatever the checks cannot read is not a payment they can vouch for: a 402, never a 500.
    return reject('invalid_transaction', 'The transaction cannot be read as a payment.')
  }
}

async function precheck(
  transaction: string,
  signature: string,
  target: PaymentTarget,
  options: PrecheckOptions,
): Promise<PrecheckResult> {
  const maxBytes = options.maxTransactionBytes ?? 16_384
  let txBytes: Uint8Array
  let data: RawTransactionData
  try {
    txBytes = decodeBase64(transaction) ?? new Uint8Array()
    if (txBytes.length === 0 || txBytes.length > maxBytes) {
      return reject('invalid_transaction', 'The transaction is empty or too large.')
    }
    data = parseTransactionData(txBytes).V1
  } catch {
    return reject('invalid_transaction', 'The transaction bytes do not decode.')
  }
  const sender = normalizeSuiAddress(data.sender)
  const signer = await verifyTransactionSigner(txBytes, signature, keysOf(options))
  if (signer.status === 'invalid') {
    return reject('invalid_signature', 'The transaction signature is not valid.', {
      reason: signer.reason,
    })
  }
  if (signer.address !== sender) {
    return reject('signer_mismatch', 'The transaction is not signed by its sender.')
  }

  const form = formOf(data, sender)
  if (!(options.allowedForms ?? defaultForms).includes(form)) {
    return reject('transaction_form_not_allowed', `A ${form} transaction is not accepted here.`, {
      form,
    })
  }

  const analysis = analyseTransfers(data)
  if (analysis.status === 'unsupported') {
    return reject('invalid_transaction', 'The transaction is not a plain transfer.', {
      reason: analysis.reason,
    })
  }
  const paid = paymentTo(analysis.transfers, target.payTo, target.asset)
  if (!paid.reachesRecipient) {
    return reject('wrong_recipient', 'The transaction pays nothing to the recipient.')
  }
  if (!paid.unbounded && paid.possibleAmount === 0n && paid.hasOtherAsset) {
    return reject('wrong_asset', 'The transaction pays the recipient in another asset.')
  }
  if (!paid.unbounded && paid.possibleAmount < target.amount) {
    return reject('insufficient_amount', 'The transaction pays less than the price.', {
      required: target.amount.toString(),
      offered: paid.possibleAmount.toString(),
    })
  }
  return {
    status: 'ok',
    digest: transactionDigest(txBytes),
    sender,
    form,
    txBytes,
    provenAmount: paid.provenAmount,
  }
}

function formOf(data: RawTransactionData, sender: string): TransactionForm {
  const gas = data.gasData
  if (normalizeSuiAddress(gas.owner) !== sender) return 'sponsored'
  if (BigInt(gas.price) === 0n && BigInt(gas.budget) === 0n && gas.payment.length === 0) {
    return 'gasless'
  }
  return 'coin'
}

function reject(
  code: PaymentErrorCode,
  message: string,
  details?: Record<string, unknown>,
): { status: 'rejected'; error: PaymentError } {
  return { status: 'rejected', error: new PaymentError(code, message, { details }) }
}
