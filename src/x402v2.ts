/**
 * x402 version 2, the header dialect of x402: the `PAYMENT-REQUIRED` response header (base64 JSON
 * PaymentRequired with `resource` and `accepts[].amount`), the `PAYMENT-SIGNATURE` request header
 * (base64 JSON PaymentPayload whose `accepted` is a copy of the chosen requirement, and whose
 * `payload` is the Sui "exact" payload `{ transaction, signature }`), and the `PAYMENT-RESPONSE`
 * header (the settlement, the same shape as version 1's `X-PAYMENT-RESPONSE`).
 *
 * A route offers version 2 beside version 1: the same terms, the same challenge id (in
 * `accepts[].extra.challengeId`), the same settlement. Decoders share version 1's pipeline (16 KiB
 * limit, canonical padded base64, strict UTF-8 JSON, zod schemas with length limits) and throw
 * nothing but a {@link PaymentError} with a stable code.
 *
 * @module
 */
import { z } from 'zod'
import { PaymentError } from './errors.js'
import { encodeBase64, isStrictBase64 } from './internal/base64.js'
import { decodeJsonHeader, parseWith } from './internal/wire.js'
import {
  baseUnitsSchema,
  challengeIdSchema,
  networkSchema,
  suiAddressSchema,
  type XPaymentResponse,
  xPaymentResponseSchema,
} from './x402.js'

/** The x402 protocol version of this module. */
export const x402Version2 = 2

/** Header names of x402 version 2. */
export const x402V2Headers = {
  /** Response header of a 402: base64 JSON {@link PaymentRequiredV2}. */
  paymentRequired: 'PAYMENT-REQUIRED',
  /** Request header carrying the payment: base64 JSON {@link PaymentSignature}. */
  paymentSignature: 'PAYMENT-SIGNATURE',
  /** Response header carrying the settlement: base64 JSON {@link XPaymentResponse}. */
  paymentResponse: 'PAYMENT-RESPONSE',
} as const

const text = (max: number) => z.string().max(max)
const nonEmpty = (max: number) => z.string().min(1).max(max)
const base64 = (max: number) =>
  z.string().min(4).max(max).refine(isStrictBase64, { message: 'not canonical base64' })

/** What is being paid for (version 2 moves it out of the requirement). */
export const resourceInfoSchema = z.object({
  /** URL of the paid resource. */
  url: nonEmpty(2048),
  /** Human description. */
  description: text(1024).optional(),
  /** MIME type of the paid response. */
  mimeType: text(256).optional(),
})

/** The resource of a version 2 PaymentRequired. */
export type ResourceInfo = z.infer<typeof resourceInfoSchema>

/** One entry of a version 2 `accepts[]` (and the `accepted` of a payment). */
export const paymentRequirementV2Schema = z.object({
  /** Payment scheme; this library offers `exact`. */
  scheme: nonEmpty(32),
  /** CAIP-2 network, e.g. `sui:mainnet`. */
  network: networkSchema,
  /** Price in base units of `asset`. */
  amount: baseUnitsSchema,
  /** The USDC coin type. */
  asset: nonEmpty(256),
  /** Recipient address. */
  payTo: nonEmpty(128),
  /** Seconds the requirement stays valid. */
  maxTimeoutSeconds: z.number().int().positive().max(86_400),
  /** Scheme extras: this library puts `challengeId` (and `escrow`) here. */
  extra: z.record(z.string(), z.unknown()).nullable().optional(),
})

/** One entry of a version 2 `accepts[]`. */
export type PaymentRequirementV2 = z.infer<typeof paymentRequirementV2Schema>

/** The decoded `PAYMENT-REQUIRED` header. */
export const paymentRequiredV2Schema = z.object({
  x402Version: z.literal(2),
  error: text(1024).optional(),
  resource: resourceInfoSchema,
  accepts: z.array(paymentRequirementV2Schema).min(1).max(32),
  extensions: z.record(z.string(), z.unknown()).nullable().optional(),
})

/** The decoded `PAYMENT-REQUIRED` header. */
export type PaymentRequiredV2 = z.infer<typeof paymentRequiredV2Schema>

/** The Sui "exact" payload of version 2: the signed, unsubmitted transaction. */
export const suiExactPayloadSchema = z.object({
  /** Base64 BCS transaction bytes. */
  transaction: base64(12 * 1024),
  /** Base64 serialized Sui signature of the sender. */
  signature: base64(8 * 1024),
})

/** The decoded `PAYMENT-SIGNATURE` header. */
export const paymentSignatureSchema = z.object({
  x402Version: z.literal(2),
  resource: resourceInfoSchema.optional(),
  accepted: paymentRequirementV2Schema,
  payload: suiExactPayloadSchema,
  extensions: z.record(z.string(), z.unknown()).nullable().optional(),
})

/** The decoded `PAYMENT-SIGNATURE` header. */
export type PaymentSignature = z.infer<typeof paymentSignatureSchema>

const signatureCodes = { x402Version: 'unsupported_version' } as const

/**
 * Decodes a `PAYMENT-SIGNATURE` header value.
 *
 * @param value - The raw header value (untrusted). Rejected with `header_too_large` above 16 KiB
 *   before anything else happens.
 * @throws {PaymentError} `header_too_large`, `invalid_encoding`, `invalid_json`,
 *   `unsupported_version` or `invalid_payload` — and nothing else.
 * @example
 * ```ts
 * const payment = decodePaymentSignature(request.headers.get('payment-signature') ?? '')
 * payment.accepted.extra?.challengeId
 * ```
 */
export function decodePaymentSignature(value: string): PaymentSignature {
  const json = decodeJsonHeader(value, {
    header: x402V2Headers.paymentSignature,
    encoding: 'base64',
  })
  return parseWith(
    paymentSignatureSchema,
    json,
    'PAYMENT-SIGNATURE payload',
    'invalid_payload',
    signatureCodes,
  )
}

/**
 * Encodes a `PAYMENT-SIGNATURE` header value (standard base64 of JSON), validated with the schema
 * the decoder uses.
 *
 * @throws {PaymentError} `invalid_payload` when the input does not match the schema.
 * @example
 * ```ts
 * headers.set('PAYMENT-SIGNATURE', encodePaymentSignature({ x402Version: 2, accepted, payload: { transaction, signature } }))
 * ```
 */
export function encodePaymentSignature(payment: PaymentSignature): string {
  const checked = parseWith(
    paymentSignatureSchema,
    payment,
    'PAYMENT-SIGNATURE payload',
    'invalid_payload',
  )
  return encodeBase64(JSON.stringify(checked))
}

/**
 * Decodes a `PAYMENT-REQUIRED` header value (for buyers reading a seller's 402).
 *
 * @throws {PaymentError} `header_too_large`, `invalid_encoding`, `invalid_json`,
 *   `unsupported_version` or `invalid_payload`.
 */
export function decodePaymentRequiredV2(value: string): PaymentRequiredV2 {
  const json = decodeJsonHeader(value, {
    header: x402V2Headers.paymentRequired,
    encoding: 'base64',
  })
  return parseWith(paymentRequiredV2Schema, json, 'PAYMENT-REQUIRED', 'invalid_payload', {
    x402Version: 'unsupported_version',
  })
}

/**
 * Encodes a `PAYMENT-REQUIRED` header value. The engine calls it once per route, resource and
 * challenge expiry (the value is kept with the 402 it belongs to), never per request.
 *
 * @example
 * ```ts
 * encodePaymentRequiredV2({ x402Version: 2, resource: { url }, accepts: [requirement] })
 * ```
 */
export function encodePaymentRequiredV2(required: PaymentRequiredV2): string {
  return encodeBase64(JSON.stringify(required))
}

/**
 * Decodes a `PAYMENT-RESPONSE` header value (the same JSON as `X-PAYMENT-RESPONSE`).
 *
 * @throws {PaymentError} `header_too_large`, `invalid_encoding`, `invalid_json`, `invalid_payload`.
 */
export function decodePaymentResponseV2(value: string): XPaymentResponse {
  const json = decodeJsonHeader(value, {
    header: x402V2Headers.paymentResponse,
    encoding: 'base64',
  })
  return parseWith(xPaymentResponseSchema, json, 'PAYMENT-RESPONSE', 'invalid_payload')
}

/** The terms a version 2 `accepted` must repeat (normalised, as the engine prepares them). */
export type AcceptedTerms = {
  readonly network: string
  readonly amount: string
  readonly asset: string
  readonly payTo: string
}

/** The outcome of {@link checkAccepted}: the challenge id to verify, or why `accepted` is refused. */
export type AcceptedCheck =
  | { status: 'matched'; challengeId: string }
  | { status: 'mismatch'; error: PaymentError }

function sameAddress(given: string, expected: string): boolean {
  const parsed = suiAddressSchema.safeParse(given)
  return parsed.success && parsed.data === expected
}

function sameType(given: string, expected: string): boolean {
  // The asset is a Move type: compared after normalising the address part of its package.
  const match = /^(0x[0-9a-fA-F]{1,64})(::.+)$/.exec(given)
  if (match === null) return false
  const pkg = suiAddressSchema.safeParse(match[1])
  return pkg.success && `${pkg.data}${match[2]}` === expected
}

/**
 * Checks that a payment's `accepted` is one of the route's requirements: scheme `exact`, the route's
 * network, amount, asset and recipient, and a challenge id in `extra.challengeId` (whose HMAC the
 * caller then verifies: it binds the resource and the expiry).
 *
 * @returns `matched` with the challenge id, or `mismatch` with `unsupported_scheme`,
 *   `unsupported_network`, `requirements_mismatch` (`details.field` names the first field that
 *   differs) or `invalid_challenge` (no challenge id).
 */
export function checkAccepted(accepted: PaymentRequirementV2, terms: AcceptedTerms): AcceptedCheck {
  const mismatch = (error: PaymentError): AcceptedCheck => ({ status: 'mismatch', error })
  if (accepted.scheme !== 'exact') {
    return mismatch(new PaymentError('unsupported_scheme', 'This route is paid with scheme exact.'))
  }
  if (accepted.network !== terms.network) {
    return mismatch(
      new PaymentError('unsupported_network', `This route is paid on ${terms.network}.`),
    )
  }
  const field =
    accepted.amount !== terms.amount
      ? 'amount'
      : !sameType(accepted.asset, terms.asset)
        ? 'asset'
        : !sameAddress(accepted.payTo, terms.payTo)
          ? 'payTo'
          : undefined
  if (field !== undefined) {
    return mismatch(
      new PaymentError(
        'requirements_mismatch',
        `The accepted requirement's ${field} is not this route's.`,
        { details: { field } },
      ),
    )
  }
  const id = challengeIdSchema.safeParse(accepted.extra?.challengeId)
  if (!id.success) {
    return mismatch(
      new PaymentError('invalid_challenge', 'The accepted requirement carries no challenge id.'),
    )
  }
  return { status: 'matched', challengeId: id.data }
}
