/**
 * The payment methods: the built-in ones and the seller's shorthand for them. A method is one module
 * with both halves (see `PaymentMethod`); sellers choose them per paywall or per route
 * (`methods`), buyers per client.
 *
 * @module
 */
import type { Offer } from '../negotiate.js'
import { mppCharge } from './mppCharge.js'
import type { PaymentMethod } from './types.js'
import { x402v1 } from './x402v1.js'
import { x402v2 } from './x402v2.js'

export type { ChallengeBinding } from '../internal/challenges.js'
export { type MppChargeOffer, mppCharge } from './mppCharge.js'
export {
  createSessionMethod,
  type SessionMethod,
  type SessionMethodOptions,
} from './mppSession.js'
export type { MeteredPayment, SessionStreamOptions } from './sessionStream.js'
export type {
  ChallengeInput,
  ChallengeParts,
  ChallengeResponse,
  MethodClient,
  MethodOffer,
  MethodPayContext,
  MethodPayment,
  MethodServer,
  MethodSettleInput,
  PaymentMethod,
  ReadOffers,
  SignedTransfer,
  SuccessInput,
} from './types.js'
export { type X402OfferFields, type X402V1Offer, x402v1 } from './x402v1.js'
export { type X402V2Offer, x402v2 } from './x402v2.js'

/** The built-in methods, in the order a 402 lists them: x402 version 1, version 2, MPP `charge`. */
export const builtInMethods: readonly PaymentMethod[] = Object.freeze([x402v1, x402v2, mppCharge])

/**
 * The methods of the `offer` shorthand: `'both'` (default) every built-in method, `'x402'` both x402
 * versions, `'mpp'` MPP `charge`.
 *
 * @example
 * ```ts
 * methodsFor('x402').map((m) => m.name) // ['x402v1', 'x402v2']
 * ```
 */
export function methodsFor(offer: Offer = 'both'): readonly PaymentMethod[] {
  return offer === 'both' ? builtInMethods : builtInMethods.filter((m) => m.dialect === offer)
}
