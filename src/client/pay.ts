/**
 * Making one payment for a chosen offer, as the buyer: build and sign the USDC transfer, then the
 * offer's method makes the credential of it. With the built-in methods:
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
import { isPaymentError, PaymentError } from '../errors.js'
import { transactionDigest } from '../internal/suiSignature.js'
import type { Ledger } from '../ledger/index.js'
import { builtInMethods } from '../methods/index.js'
import type { MethodOffer, PaymentMethod, SignedTransfer } from '../methods/types.js'
import { formatAmount } from '../money.js'
import type { PayableOffer, PaymentOffer } from './select.js'
import { walletTurns } from './turns.js'

/** The gasless floor: a gasless transfer takes the whole address balance or leaves ≥ 0.01 USDC. */
export const gaslessMinimum = 10_000n

/** What paying needs. */
export type PayContext = {
  signer: Signer
  ledger: Ledger
  /** The USDC coin type of our network. */
  usdc: string
  /** The methods that may pay; default the built-in ones. */
  methods?: readonly PaymentMethod[] | undefined
}

/** The outcome of {@link makePayment}. */
export type PaymentAttempt =
  /**
   * Ready to send: set `headers` on the retried request. `digest` is the transfer's digest. `done`,
   * when given, must be called once the seller has answered the paid request: a transfer the
   * seller submits from the wallet's coins keeps them spoken for until then.
   */
  | {
      status: 'ready'
      headers: Record<string, string>
      digest: string
      form: 'gasless' | 'coin'
      done?: () => void
    }
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

/** The wallet's balance, checked to cover `offer`, and the form a transfer of it takes. */
async function fundsFor(offer: MethodOffer, context: PayContext) {
  const balance = await context.ledger.getBalance(context.signer.toSuiAddress(), context.usdc)
  if (balance.total < offer.amount) {
    throw new PaymentError(
      'INSUFFICIENT_BALANCE',
      `The wallet holds ${formatAmount(balance.total)} USDC; this call costs ${formatAmount(offer.amount)}.`,
      { details: { balance: balance.total.toString(), amount: offer.amount.toString() } },
    )
  }
  return { balance, form: transferForm(balance.addressBalance, offer.amount) }
}

async function buildSigned(
  offer: MethodOffer,
  context: PayContext,
  { balance, form }: Awaited<ReturnType<typeof fundsFor>>,
): Promise<SignedTransfer & { form: 'gasless' | 'coin' }> {
  const sender = context.signer.toSuiAddress()
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
export async function makePayment<O extends MethodOffer = PaymentOffer>(
  offer: PayableOffer<O>,
  context: PayContext,
): Promise<PaymentAttempt> {
  const method = (context.methods ?? builtInMethods).find((m) => m.name === offer.method)
  if (method === undefined) {
    return {
      status: 'failed',
      error: new PaymentError(
        'NO_PAYABLE_REQUIREMENT',
        `No method of this client pays ${offer.method} offers.`,
      ),
      moneyMayHaveMoved: false,
    }
  }
  let funds: Awaited<ReturnType<typeof fundsFor>>
  try {
    funds = await fundsFor(offer, context)
  } catch (error) {
    return { status: 'failed', error: asPaymentError(error), moneyMayHaveMoved: false }
  }
  const pay = async (): Promise<PaymentAttempt> => {
    let signed: Awaited<ReturnType<typeof buildSigned>>
    try {
      signed = await buildSigned(offer, context, funds)
    } catch (error) {
      return { status: 'failed', error: asPaymentError(error), moneyMayHaveMoved: false }
    }
    const { digest, form } = signed
    const made = await method.client.pay(offer, signed, context)
    return made.status === 'ready'
      ? { status: 'ready', headers: { ...made.headers }, digest, form }
      : made
  }
  // A coin-form transfer spends the wallet's coin objects (and gas coin) at their current
  // versions: two built at once would spend the same versions — the same transaction, when they
  // pay the same offer — and the second would be refused. So the wallet's coin-form payments are
  // built one after another: after the one before has executed when we submit it ourselves, and
  // after the seller has answered it (`done`) when the seller submits it. Gasless transfers (no
  // objects) stay concurrent.
  if (funds.form !== 'coin') return pay()
  if (method.buyerSubmits) return walletTurns(context.signer, pay)
  return new Promise<PaymentAttempt>((resolve) => {
    void walletTurns(context.signer, async () => {
      const attempt = await pay().catch(
        (error: unknown): PaymentAttempt => ({
          status: 'failed',
          error: asPaymentError(error),
          moneyMayHaveMoved: false,
        }),
      )
      if (attempt.status !== 'ready') {
        resolve(attempt)
        return
      }
      await new Promise<void>((done) => resolve({ ...attempt, done: () => done() }))
    })
  })
}

function asPaymentError(error: unknown): PaymentError {
  if (isPaymentError(error)) return error
  return new PaymentError('ledger_unavailable', 'The payment could not be prepared.', {
    cause: error,
  })
}
