/**
 * Dialect negotiation: which payment dialect a request speaks, and which dialects a 402 offers.
 *
 * @module
 */

import type { HeaderLookup } from './engine/requestView.js'
import { findScheme } from './internal/authParams.js'
import { paymentScheme } from './mpp.js'

/**
 * The payment dialects. `x402`: body challenge + `X-PAYMENT` (version 1) or the `PAYMENT-REQUIRED`
 * / `PAYMENT-SIGNATURE` headers (version 2); `mpp`: `WWW-Authenticate: Payment`.
 */
export type Dialect = 'x402' | 'mpp'

/** What a 402 offers: both dialects (the default), or only one. */
export type Offer = 'both' | Dialect

/** How a request presents payment (tagged union on `dialect`). */
export type Classification =
  /**
   * `X-PAYMENT` (x402 version 1) or `PAYMENT-SIGNATURE` (`version: 2`) is present; `header` is its
   * raw (undecoded, untrusted) value.
   */
  | { dialect: 'x402'; header: string; version?: 2 | undefined }
  /** `Authorization` carries a `Payment` credential; `header` is that credential (`Payment …`). */
  | { dialect: 'mpp'; header: string }
  /** No payment at all. */
  | { dialect: 'none' }

/** Anything with Web-standard headers: a `Request`, an adapter's view, or `{ headers }`. */
export type HasHeaders = { readonly headers: HeaderLookup }

/**
 * Classifies a request by the payment it carries. `Authorization` may list several schemes
 * (`Bearer abc, Payment eyJ…`): the `Payment` one is found. A present but empty `X-PAYMENT` still
 * classifies as x402, so that decoding rejects it loudly instead of treating it as unpaid.
 *
 * When a request carries both, MPP wins: an MPP buyer has already submitted its transaction (its
 * money has moved), while an x402 payment that is not settled costs its buyer nothing. Of the two
 * x402 versions, `X-PAYMENT` (version 1) is read before `PAYMENT-SIGNATURE` (version 2); either
 * way one digest is served at most once.
 *
 * @example
 * ```ts
 * const c = classifyRequest(request)
 * if (c.dialect === 'x402') decodeXPayment(c.header)
 * ```
 */
export function classifyRequest(request: HasHeaders): Classification {
  const authorization = request.headers.get('authorization')
  if (authorization !== null) {
    const credential = findScheme(authorization, paymentScheme)
    if (credential !== undefined) return { dialect: 'mpp', header: credential }
  }
  // Lower-case, as Node keys its parsed headers (a Web `Headers` matches any case).
  const payment = request.headers.get('x-payment')
  if (payment !== null) return { dialect: 'x402', header: payment }
  const signature = request.headers.get('payment-signature')
  if (signature !== null) return { dialect: 'x402', header: signature, version: 2 }
  return { dialect: 'none' }
}

/** Which dialects a 402 carries. */
export type Offered = { readonly x402: boolean; readonly mpp: boolean }

const offerTable: Readonly<Record<Offer, Offered>> = {
  both: { x402: true, mpp: true },
  x402: { x402: true, mpp: false },
  mpp: { x402: false, mpp: true },
}

/**
 * The dialects to offer in a 402.
 *
 * @param offer - The seller's choice; default `'both'` (x402 body and MPP header in one response).
 * @example
 * ```ts
 * offered('x402') // { x402: true, mpp: false }
 * ```
 */
export function offered(offer: Offer = 'both'): Offered {
  return offerTable[offer]
}

/**
 * Whether a request's dialect is one the seller offers (`none` always is: it gets the 402).
 *
 * @example
 * ```ts
 * if (!accepts(classifyRequest(request), 'x402')) // MPP credential at an x402-only route
 * ```
 */
export function accepts(classification: Classification, offer: Offer = 'both'): boolean {
  return classification.dialect === 'none' || offered(offer)[classification.dialect]
}
