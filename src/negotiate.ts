/**
 * The payment dialects, and the seller's shorthand for the methods it offers.
 *
 * @module
 */

/**
 * The payment dialects: who submits the transaction. `x402`: the buyer signs, the seller submits
 * (`X-PAYMENT`, or the version 2 `PAYMENT-SIGNATURE`); `mpp`: the buyer submits and presents the
 * digest (`Authorization: Payment`).
 */
export type Dialect = 'x402' | 'mpp'

/**
 * What a 402 offers: both dialects (the default), or only one; a shorthand for the payment methods
 * (`methodsFor`).
 */
export type Offer = 'both' | Dialect
