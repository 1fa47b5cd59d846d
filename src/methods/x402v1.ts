/**
 * x402 version 1 as a payment method: the 402's body is the envelope (`x402Version`, `error`,
 * `accepts[]`, the challenge id in `extra.challengeId`); the buyer signs a USDC transfer and sends
 * the signed bytes in `X-PAYMENT`; the seller settles it and answers with `X-PAYMENT-RESPONSE` on
 * every served response.
 *
 * @module
 */
import { toBase64 } from '@mysten/sui/utils'
import { PaymentError } from '../errors.js'
import { settleX402 } from '../settle.js'
import {
  challengeIdSchema,
  decodeXPayment,
  decodeXPaymentResponse,
  encodeXPayment,
  encodeXPaymentResponse,
  type PaymentRequirement,
  parsePaymentRequired,
  x402Headers,
  x402Version,
} from '../x402.js'
import type { MethodOffer, MethodServer, PaymentMethod } from './types.js'

/** What the x402 offers of both versions share. */
export type X402OfferFields = MethodOffer & {
  dialect: 'x402'
  /** The requirement in version 1's shape (a version 2 one translated: `amount` → `maxAmountRequired`). */
  requirement: PaymentRequirement
  scheme: string
  network: string
  asset: string
  amount: bigint
  payTo: string
  /** `extra.challengeId`, echoed in the payment (an offer without one cannot be answered). */
  challengeId: string | undefined
  /** Escrow terms when the route is escrow-only (`extra.escrow`). */
  escrow: boolean
}

/** An x402 version 1 offer: from the body's `accepts[]`; paid with `X-PAYMENT`. */
export type X402V1Offer = X402OfferFields & { method: 'x402v1'; version: 1 }

/** The offer of a version 1 requirement (also the base of a version 2 one). */
export function x402Offer(requirement: PaymentRequirement): Omit<X402V1Offer, 'method'> {
  const id = challengeIdSchema.safeParse(requirement.extra?.challengeId)
  const escrow = requirement.extra?.escrow
  return {
    dialect: 'x402',
    version: 1,
    requirement,
    scheme: requirement.scheme,
    network: requirement.network,
    asset: requirement.asset,
    amount: BigInt(requirement.maxAmountRequired),
    payTo: requirement.payTo,
    challengeId: id.success ? id.data : undefined,
    escrow: escrow !== undefined && escrow !== null && escrow !== false,
  }
}

/** The largest 402 body read as a buyer (64 KiB); a larger one is not parsed as an x402 envelope. */
export const maxChallengeBodyBytes = 64 * 1024

/** Why a value could not be read: its error code. */
export function reasonOf(error: unknown): string {
  return error instanceof PaymentError ? error.code : 'unreadable'
}

/**
 * The success headers of an x402 method: the settlement response (`success`, the digest, the
 * network, the payer) in `header`, on every served answer.
 */
export function x402SuccessHeaders(header: string): MethodServer['successHeaders'] {
  return ({ digest, payer, network }) => {
    const headers = {
      [header]: encodeXPaymentResponse({ success: true, transaction: digest, network, payer }),
    }
    return () => headers
  }
}

/** x402 version 1: `X-PAYMENT`, the body envelope, `X-PAYMENT-RESPONSE`. */
export const x402v1: PaymentMethod = {
  name: 'x402v1',
  dialect: 'x402',
  buyerSubmits: false,
  server: {
    label: 'x402',
    how: 'X-PAYMENT (x402)',
    unsupportedCode: 'unsupported_scheme',
    // Lower-case, as Node keys its parsed headers (a Web `Headers` matches any case).
    classify: (headers) => headers.get('x-payment') ?? undefined,
    challenge(parts, { terms, id }) {
      const extra = {
        challengeId: id,
        ...(terms.escrow === undefined ? {} : { escrow: terms.escrow }),
      }
      return {
        ...parts,
        body: {
          ...parts.body,
          x402Version,
          error: 'Payment required',
          accepts: Object.freeze([
            Object.freeze({ ...terms.requirement, extra: Object.freeze(extra) }),
          ]),
        },
      }
    },
    explain(parts, error) {
      if (!('x402Version' in parts.body)) return parts
      return { ...parts, body: { ...parts.body, error: error.shortMessage } }
    },
    settle(credential, { terms, settlement, checkChallenge, context }) {
      const payment = decodeXPayment(credential)
      if (payment.network !== terms.network) {
        return {
          status: 'rejected',
          error: new PaymentError('unsupported_network', `This route is paid on ${terms.network}.`),
        }
      }
      const verdict = checkChallenge(payment.payload.challengeId)
      if (verdict.status !== 'valid') return { status: 'rejected', error: verdict.error }
      return settleX402(payment.payload, settlement, context)
    },
    successHeaders: x402SuccessHeaders(x402Headers.paymentResponse),
  },
  client: {
    label: 'x402',
    rank: 1,
    read({ bodyText }) {
      if (bodyText.length === 0 || bodyText.length > maxChallengeBodyBytes) {
        return { offers: [], unreadable: [] }
      }
      try {
        const json = JSON.parse(bodyText) as unknown
        if (typeof json !== 'object' || json === null || !('accepts' in json)) {
          return { offers: [], unreadable: [] }
        }
        const offers = parsePaymentRequired(json).accepts.map(
          (requirement): X402V1Offer => ({ ...x402Offer(requirement), method: 'x402v1' }),
        )
        return { offers, unreadable: [] }
      } catch (error) {
        return { offers: [], unreadable: [reasonOf(error)] }
      }
    },
    unanswerable: (offer) => (offer.challengeId === undefined ? 'no challengeId' : undefined),
    escrowTerms: (offer) => (offer as X402V1Offer).requirement.extra?.escrow,
    async pay(offer, { bytes, signature }) {
      const header = encodeXPayment({
        network: offer.network,
        payload: {
          challengeId: offer.challengeId as string,
          transaction: toBase64(bytes),
          signature,
        },
      })
      return { status: 'ready', headers: { [x402Headers.payment]: header } }
    },
    receipt(response) {
      const value = response.headers.get(x402Headers.paymentResponse)
      return value === null ? undefined : decodeXPaymentResponse(value)
    },
  },
}
