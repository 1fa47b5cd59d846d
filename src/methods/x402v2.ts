/**
 * x402 version 2 as a payment method: the 402 carries the terms in `PAYMENT-REQUIRED` (base64 JSON,
 * the same requirement and challenge id as version 1's body); the buyer echoes the requirement it
 * accepts with the signed bytes in `PAYMENT-SIGNATURE`; the seller checks that `accepted` is the
 * route's, settles, and answers with `PAYMENT-RESPONSE` on every served response.
 *
 * @module
 */
import { toBase64 } from '@mysten/sui/utils'
import { decodeBase64, encodeBase64 } from '../internal/base64.js'
import { settleX402 } from '../settle.js'
import type { PaymentRequirement } from '../x402.js'
import {
  checkAccepted,
  decodePaymentRequiredV2,
  decodePaymentResponseV2,
  decodePaymentSignature,
  encodePaymentSignature,
  type PaymentRequiredV2,
  type PaymentRequirementV2,
  paymentRequiredV2Schema,
  type ResourceInfo,
  x402V2Headers,
} from '../x402v2.js'
import type { PaymentMethod } from './types.js'
import { reasonOf, type X402OfferFields, x402Offer, x402SuccessHeaders } from './x402v1.js'

/** An x402 version 2 offer: from the `PAYMENT-REQUIRED` header; paid with `PAYMENT-SIGNATURE`. */
export type X402V2Offer = X402OfferFields & {
  method: 'x402v2'
  version: 2
  /** The requirement as offered (echoed as `accepted`). */
  accepted: PaymentRequirementV2
  /** The resource of the PaymentRequired. */
  resource: ResourceInfo
}

function v2Offer(accepted: PaymentRequirementV2, required: PaymentRequiredV2): X402V2Offer {
  const requirement: PaymentRequirement = {
    scheme: accepted.scheme,
    network: accepted.network,
    maxAmountRequired: accepted.amount,
    resource: required.resource.url,
    description: required.resource.description ?? '',
    ...(required.resource.mimeType === undefined ? {} : { mimeType: required.resource.mimeType }),
    payTo: accepted.payTo,
    maxTimeoutSeconds: accepted.maxTimeoutSeconds,
    asset: accepted.asset,
    ...(accepted.extra === undefined ? {} : { extra: accepted.extra }),
  }
  return {
    ...x402Offer(requirement),
    method: 'x402v2',
    version: 2,
    accepted,
    resource: required.resource,
  }
}

/** The `PAYMENT-REQUIRED` value `plain` with `error` set to a refusal's code. */
function explainPaymentRequired(plain: string, code: string): string {
  const bytes = decodeBase64(plain) as Uint8Array
  const required = paymentRequiredV2Schema.parse(JSON.parse(new TextDecoder().decode(bytes)))
  return encodeBase64(JSON.stringify({ ...required, error: code }))
}

/** x402 version 2: `PAYMENT-REQUIRED`, `PAYMENT-SIGNATURE`, `PAYMENT-RESPONSE`. */
export const x402v2: PaymentMethod = {
  name: 'x402v2',
  dialect: 'x402',
  buyerSubmits: false,
  server: {
    label: 'x402',
    how: 'PAYMENT-SIGNATURE (x402)',
    unsupportedCode: 'unsupported_scheme',
    paymentInfo: { x402Version: 2 },
    classify: (headers) => headers.get('payment-signature') ?? undefined,
    challenge(parts, { terms, id }) {
      const v2 = terms.paymentRequiredV2
      return {
        ...parts,
        headers: {
          ...parts.headers,
          [x402V2Headers.paymentRequired]: encodeBase64(
            `${v2.head}${JSON.stringify(id)}${v2.tail}`,
          ),
        },
      }
    },
    explain(parts, error) {
      const plain = parts.headers[x402V2Headers.paymentRequired]
      if (plain === undefined) return parts
      return {
        ...parts,
        headers: {
          ...parts.headers,
          [x402V2Headers.paymentRequired]: explainPaymentRequired(plain, error.code),
        },
      }
    },
    settle(credential, { terms, settlement, checkChallenge, context }) {
      const payment = decodePaymentSignature(credential)
      const accepted = checkAccepted(payment.accepted, terms)
      if (accepted.status === 'mismatch') return { status: 'rejected', error: accepted.error }
      const verdict = checkChallenge(accepted.challengeId)
      if (verdict.status !== 'valid') return { status: 'rejected', error: verdict.error }
      return settleX402(payment.payload, settlement, context)
    },
    successHeaders: x402SuccessHeaders(x402V2Headers.paymentResponse),
  },
  client: {
    label: 'x402 v2',
    rank: 0,
    read({ headers }) {
      const value = headers.get(x402V2Headers.paymentRequired)
      if (value === null) return { offers: [], unreadable: [] }
      try {
        const required = decodePaymentRequiredV2(value)
        return { offers: required.accepts.map((a) => v2Offer(a, required)), unreadable: [] }
      } catch (error) {
        return { offers: [], unreadable: [reasonOf(error)] }
      }
    },
    unanswerable: (offer) => (offer.challengeId === undefined ? 'no challengeId' : undefined),
    escrowTerms: (offer) => (offer as X402V2Offer).requirement.extra?.escrow,
    async pay(given, { bytes, signature }) {
      const offer = given as X402V2Offer
      const header = encodePaymentSignature({
        x402Version: 2,
        resource: offer.resource,
        accepted: offer.accepted,
        payload: { transaction: toBase64(bytes), signature },
      })
      return { status: 'ready', headers: { [x402V2Headers.paymentSignature]: header } }
    },
    receipt(response) {
      const value = response.headers.get(x402V2Headers.paymentResponse)
      return value === null ? undefined : decodePaymentResponseV2(value)
    },
  },
}
