/**
 * The payment a paying fetch made for a response: the record it attaches to each paid response
 * ({@link Payment}, read with {@link paymentOf}), with the seller's receipt decoded by the method
 * that paid.
 *
 * @module
 */
import type { PaymentMethod } from '../methods/types.js'
import type { Receipt } from '../mpp.js'
import type { Dialect } from '../negotiate.js'
import type { XPaymentResponse } from '../x402.js'

/** A payment made for a response (see {@link paymentOf}). */
export type Payment = {
  dialect: Dialect
  /** The name of the method that paid (`x402v2`, `x402v1`, `mppCharge`, or one of yours). */
  method: string
  /** Base units paid. */
  amount: bigint
  /** The coin type paid (the network's USDC). */
  asset: string
  payTo: string
  payer: string
  network: string
  /** The URL paid for. */
  url: string
  /** Digest of the payment transaction (computed by us from the signed bytes). */
  digest: string
  /** Which transaction form paid: the gasless address-balance form or the coin form. */
  form: 'gasless' | 'coin'
  /**
   * The seller's `PAYMENT-RESPONSE` / `X-PAYMENT-RESPONSE` or `Payment-Receipt`, decoded; undefined
   * if absent. For a method of your own, `value` is what its client half's `receipt` returns.
   */
  receipt:
    | { dialect: 'x402'; value: XPaymentResponse }
    | { dialect: 'mpp'; value: Receipt }
    | undefined
}

const payments = new WeakMap<Response, Payment>()

/**
 * The payment made for a response returned by a paying fetch, with the seller's receipt decoded;
 * undefined for a response that needed no payment.
 *
 * @example
 * ```ts
 * const res = await pay('https://api.example.com/paid')
 * paymentOf(res)?.receipt // { dialect: 'x402', value: { success: true, transaction: '…' } }
 * ```
 */
export function paymentOf(response: Response): Payment | undefined {
  return payments.get(response)
}

/**
 * The seller's receipt on `response`, decoded by `method`; undefined if absent or unreadable.
 *
 * @internal
 */
export function decodeReceiptOf(response: Response, method: PaymentMethod): Payment['receipt'] {
  try {
    const value = method.client.receipt(response)
    // The built-in methods' receipts are the shapes the type names; another method's is its own.
    return value === undefined
      ? undefined
      : ({ dialect: method.dialect, value } as Payment['receipt'])
  } catch {
    return undefined
  }
}

/**
 * Records `payment` as the one made for `response` (what {@link paymentOf} returns for it).
 *
 * @internal
 */
export function recordPayment(response: Response, payment: Payment): void {
  payments.set(response, payment)
}
