/**
 * Making one payment for a chosen offer, as the buyer:
 * - x402: build the USDC transfer (gasless address-balance form when the balance rules allow it,
 *   else the coin form), sign it, and hand the seller the signed bytes in `PAYMENT-SIGNATURE`
 *   (version 2, with the offer as `accepted`) or `X-PAYMENT` (version 1). Nothing is submitted by
 *   us: the seller settles it.
 * - MPP: build, sign and SUBMIT the transfer ourselves, wait for its effects, then sign the proof
 *   (realm, challenge id, amount, currency, recipient, digest) and send `Authorization: Payment`.
 *
 * @module
 */
import type { Signer } from '@mysten/sui/cryptography'
import { toBase64 } from '@mysten/sui/utils'
import { isPaymentError, PaymentError } from '../errors.js'
import { transactionDigest } from '../internal/suiSignature.js'
import type { Ledger } from '../ledger/index.js'
import { formatAmount } from '../money.js'
import { serializeCredential } from '../mpp.js'
import { signProof } from '../proof.js'
import { encodeXPayment, x402Headers } from '../x402.js'
import { encodePaymentSignature, x402V2Headers } from '../x402v2.js'
import type { PayableOffer } from './select.js'

/** The gasless floor: a gasless transfer takes the whole address balance or leaves ≥ 0.01 USDC. */
export const gaslessMinimum = 10_000n

/** What paying needs. */
export type PayContext = {
  signer: Signer
  ledger: Ledger
  /** The USDC coin type of our network. */
  usdc: string
}

/** The outcome of {@link makePayment}. */
export type PaymentAttempt =
  /** Ready to send: set `headers` on the retried request. `digest` is the transfer's digest. */
  | { status: 'ready'; headers: Record<string, string>; digest: string; form: 'gasless' | 'coin' }
  /**
   * Not paid. `moneyMayHaveMoved` is false only when it is certain nothing moved (nothing was
   * signed, or the ledger refused or failed the transaction).
   */
  | { status: 'failed'; error: PaymentError; moneyMayHaveMoved: boolean }

/** Which form the ledger will build, by the gasless rules (for messages and for callers). */
export function transferForm(addressBalance: bigint, amount: bigint): 'gasless' | 'coin' {
  const remainder = addressBalance - amount
  return amount >= gaslessMinimum &&
    remainder >= 0n &&
    (remainder === 0n || remainder >= gaslessMinimum)
    ? 'gasless'
    : 'coin'
}

async function buildSigned(offer: PayableOffer, context: PayContext) {
  const sender = context.signer.toSuiAddress()
  const balance = await context.ledger.getBalance(sender, context.usdc)
  const form = transferForm(balance.addressBalance, offer.amount)
  if (balance.total < offer.amount) {
    throw new PaymentError(
      'INSUFFICIENT_BALANCE',
      `The wallet holds ${formatAmount(balance.total)} USDC; this call costs ${formatAmount(offer.amount)}.`,
      { details: { balance: balance.total.toString(), amount: offer.amount.toString() } },
    )
  }
  let bytes: Uint8Array
  try {
    bytes = await context.ledger.buildTransfer({
      sender,
      to: offer.payTo,
      amount: offer.amount,
      coinType: context.usdc,
    })
  } catch (error) {
    if (isPaymentError(error) && error.code === 'INSUFFICIENT_BALANCE' && form === 'coin') {
      const why =
        balance.addressBalance >= offer.amount
          ? `A gasless transfer must take the whole balance or leave at least 0.01 USDC, and paying ${formatAmount(offer.amount)} from ${formatAmount(balance.addressBalance)} would leave ${formatAmount(balance.addressBalance - offer.amount)}; the coin form needs USDC coins and SUI for gas: ${error.shortMessage}`
          : error.shortMessage
      throw new PaymentError('INSUFFICIENT_BALANCE', why, {
        details: {
          addressBalance: balance.addressBalance.toString(),
          coinBalance: balance.coinBalance.toString(),
          amount: offer.amount.toString(),
        },
        cause: error,
      })
    }
    throw error
  }
  const { signature } = await context.signer.signTransaction(bytes)
  return { bytes, signature, digest: transactionDigest(bytes), form }
}

/**
 * Pays `offer` once. Never submits an x402 payment; always submits an MPP one.
 *
 * @example
 * ```ts
 * const attempt = await makePayment(offer, { signer, ledger, usdc })
 * if (attempt.status === 'ready') await fetch(url, { headers: attempt.headers })
 * ```
 */
export async function makePayment(
  offer: PayableOffer,
  context: PayContext,
): Promise<PaymentAttempt> {
  let signed: Awaited<ReturnType<typeof buildSigned>>
  try {
    signed = await buildSigned(offer, context)
  } catch (error) {
    return { status: 'failed', error: asPaymentError(error), moneyMayHaveMoved: false }
  }
  const { bytes, signature, digest, form } = signed
  if (offer.dialect === 'x402' && offer.version === 2) {
    const header = encodePaymentSignature({
      x402Version: 2,
      resource: offer.resource,
      accepted: offer.accepted,
      payload: { transaction: toBase64(bytes), signature },
    })
    return { status: 'ready', headers: { [x402V2Headers.paymentSignature]: header }, digest, form }
  }
  if (offer.dialect === 'x402') {
    const header = encodeXPayment({
      network: offer.network,
      payload: {
        challengeId: offer.challengeId as string,
        transaction: toBase64(bytes),
        signature,
      },
    })
    return { status: 'ready', headers: { [x402Headers.payment]: header }, digest, form }
  }

  const outcome = await context.ledger.execute(bytes, [signature])
  if (outcome.status === 'rejected') {
    return {
      status: 'failed',
      error: new PaymentError('settlement_failed', 'The ledger refused the payment.', {
        details: { digest, reason: outcome.reason.slice(0, 200) },
      }),
      moneyMayHaveMoved: false,
    }
  }
  const found = outcome.status === 'executed' ? outcome : await context.ledger.waitFor(digest)
  if (found.status !== 'executed' && found.status !== 'found') {
    return {
      status: 'failed',
      error: new PaymentError(
        'settlement_pending',
        'The payment was submitted but its outcome is not known yet; look the digest up before paying again.',
        { details: { digest } },
      ),
      moneyMayHaveMoved: true,
    }
  }
  if (!found.transaction.success) {
    return {
      status: 'failed',
      error: new PaymentError('transaction_failed', 'The payment transaction failed on chain.', {
        details: { digest, reason: (found.transaction.error ?? '').slice(0, 200) },
      }),
      moneyMayHaveMoved: false,
    }
  }
  const request = offer.challenge.request as { amount: string; currency: string; recipient: string }
  const proof = await signProof(context.signer, {
    realm: offer.challenge.realm,
    challengeId: offer.challenge.id,
    amount: request.amount,
    currency: request.currency,
    recipient: request.recipient,
    digest,
  })
  const credential = serializeCredential({
    challenge: offer.challenge,
    payload: { digest, signature: proof },
  })
  return { status: 'ready', headers: { authorization: credential }, digest, form }
}

function asPaymentError(error: unknown): PaymentError {
  if (isPaymentError(error)) return error
  return new PaymentError('ledger_unavailable', 'The payment could not be prepared.', {
    cause: error,
  })
}
