/**
 * x402 version 1, the body dialect: the 402 envelope with its `accepts[]` payment requirements, the
 * `X-PAYMENT` request header (the buyer's signed, unsubmitted Sui transaction) and the
 * `X-PAYMENT-RESPONSE` header (the settlement digest).
 *
 * Every decoder checks the header size (16 KiB) before decoding, accepts only canonical padded
 * base64, strict UTF-8 JSON and values that pass a zod schema with length limits, and throws
 * nothing but a {@link PaymentError} with a stable code.
 *
 * @module
 */
import { normalizeSuiAddress } from '@mysten/sui/utils'
import { z } from 'zod'
import { PaymentError } from './errors.js'
import { encodeBase64, isStrictBase64 } from './internal/base64.js'
import { decodeJsonHeader, parseWith } from './internal/wire.js'

/** The x402 protocol version this module speaks. */
export const x402Version = 1

/** Header names of the x402 dialect. */
export const x402Headers = {
  /** Request header carrying the payment. */
  payment: 'X-PAYMENT',
  /** Response header carrying the settlement. */
  paymentResponse: 'X-PAYMENT-RESPONSE',
} as const

const text = (max: number) => z.string().max(max)
const nonEmpty = (max: number) => z.string().min(1).max(max)
const base64 = (max: number) =>
  z.string().min(4).max(max).refine(isStrictBase64, { message: 'not canonical base64' })

/** A Sui address (`0x` + up to 64 hex digits), normalised to 64 lowercase hex digits. */
export const suiAddressSchema = z
  .string()
  .regex(/^0x[0-9a-fA-F]{1,64}$/)
  .transform((value) => normalizeSuiAddress(value))

/** A network id: CAIP-2 (`sui:mainnet`) or an x402 v1 name (`base-sepolia`). */
export const networkSchema = z.string().regex(/^[-a-z0-9]{1,32}(?::[-_a-zA-Z0-9]{1,64})?$/)

/** An amount in base units as it travels: digits, no sign, no leading zeros. */
export const baseUnitsSchema = z.string().regex(/^(0|[1-9][0-9]{0,38})$/)

/** A challenge id as this library issues it (base64url, at most 128 characters). */
export const challengeIdSchema = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/)

/** One entry of `accepts[]`: what a buyer must pay, where, for what. */
export const paymentRequirementSchema = z.object({
  /** Payment scheme; this library offers `exact`. */
  scheme: nonEmpty(32),
  /** Network, e.g. `sui:mainnet`. */
  network: networkSchema,
  /** Price in base units (USDC: 6 decimals, so `"20000"` is 0.02 USDC). */
  maxAmountRequired: baseUnitsSchema,
  /** URL of the paid resource. */
  resource: nonEmpty(2048),
  /** Human description of what is being paid for. */
  description: text(1024),
  /** MIME type of the paid response. */
  mimeType: text(256).optional(),
  /** JSON Schema of the paid response, if published. */
  outputSchema: z.record(z.string(), z.unknown()).nullable().optional(),
  /** Recipient address. */
  payTo: nonEmpty(128),
  /** Seconds the requirement stays valid. */
  maxTimeoutSeconds: z.number().int().positive().max(86_400),
  /** Asset: the USDC coin type on Sui. */
  asset: nonEmpty(256),
  /** Scheme-specific extras; this library puts `challengeId` (and `escrow`) here. */
  extra: z.record(z.string(), z.unknown()).nullable().optional(),
})

/** One entry of `accepts[]`. */
export type PaymentRequirement = z.infer<typeof paymentRequirementSchema>

/**
 * The 402 body: the x402 v1 envelope. This library's envelope is also an RFC 9457 problem document,
 * so the optional `type`, `title`, `status`, `detail` members are part of the schema.
 */
export const paymentRequiredSchema = z.object({
  x402Version: z.literal(1),
  error: text(1024).optional(),
  accepts: z.array(paymentRequirementSchema).min(1).max(32),
  type: text(256).optional(),
  title: text(256).optional(),
  status: z.number().int().optional(),
  detail: text(1024).optional(),
})

/** The 402 body (x402 v1 envelope). */
export type PaymentRequired = z.infer<typeof paymentRequiredSchema>

const paymentPayloadInput = z.object({
  challengeId: challengeIdSchema,
  transaction: base64(12 * 1024).optional(),
  txBytes: base64(12 * 1024).optional(),
  signature: base64(8 * 1024).optional(),
  senderSignature: base64(8 * 1024).optional(),
  senderAddress: suiAddressSchema.optional(),
})

/** Picks one of two alias fields; both present and different is an error. */
function alias(
  ctx: z.RefinementCtx,
  name: string,
  primary: string | undefined,
  other: string | undefined,
  otherName: string,
): string {
  if (primary !== undefined && other !== undefined && primary !== other) {
    ctx.addIssue({ code: 'custom', path: [otherName], message: `conflicts with ${name}` })
  }
  const value = primary ?? other
  if (value === undefined) ctx.addIssue({ code: 'custom', path: [name], message: 'required' })
  return value ?? ''
}

/**
 * The Sui payment payload of `X-PAYMENT`. Accepts the aliases `txBytes` (for `transaction`) and
 * `senderSignature` (for `signature`), and normalises to one shape.
 */
export const suiPaymentPayloadSchema = paymentPayloadInput.transform((raw, ctx) => {
  const transaction = alias(ctx, 'transaction', raw.transaction, raw.txBytes, 'txBytes')
  const signature = alias(ctx, 'signature', raw.signature, raw.senderSignature, 'senderSignature')
  return {
    challengeId: raw.challengeId,
    transaction,
    signature,
    ...(raw.senderAddress === undefined ? {} : { senderAddress: raw.senderAddress }),
  }
})

/** The normalised Sui payment payload: base64 BCS transaction bytes and base64 serialized signature. */
export type SuiPaymentPayload = z.output<typeof suiPaymentPayloadSchema>

/** The decoded `X-PAYMENT` header. */
export const xPaymentSchema = z.object({
  x402Version: z.literal(1),
  scheme: z.literal('exact'),
  network: networkSchema,
  payload: suiPaymentPayloadSchema,
})

/** The decoded, normalised `X-PAYMENT` header. */
export type XPayment = z.output<typeof xPaymentSchema>

/** The decoded `X-PAYMENT-RESPONSE` header. */
export const xPaymentResponseSchema = z.object({
  success: z.boolean(),
  transaction: text(128),
  network: networkSchema,
  payer: text(128).optional(),
  errorReason: text(256).optional(),
})

/** The decoded `X-PAYMENT-RESPONSE` header. */
export type XPaymentResponse = z.infer<typeof xPaymentResponseSchema>

const paymentCodes = {
  x402Version: 'unsupported_version',
  scheme: 'unsupported_scheme',
} as const

/**
 * Decodes an `X-PAYMENT` header value.
 *
 * @param value - The raw header value (untrusted). Rejected with `header_too_large` above 16 KiB
 *   before anything else happens.
 * @returns The payment, with the payload normalised to `{ challengeId, transaction, signature,
 *   senderAddress? }` (aliases `txBytes`/`senderSignature` accepted; addresses normalised).
 * @throws {PaymentError} `header_too_large`, `invalid_encoding`, `invalid_json`,
 *   `unsupported_version`, `unsupported_scheme` or `invalid_payload` — and nothing else.
 *
 * @example
 * ```ts
 * const payment = decodeXPayment(request.headers.get('x-payment') ?? '')
 * payment.payload.challengeId
 * ```
 */
export function decodeXPayment(value: string): XPayment {
  const json = decodeJsonHeader(value, { header: x402Headers.payment, encoding: 'base64' })
  return parseWith(xPaymentSchema, json, 'X-PAYMENT payload', 'invalid_payload', paymentCodes)
}

/** The input of {@link encodeXPayment}: network and the normalised payload. */
export type XPaymentInput = {
  /** Network; default `sui:mainnet`. */
  network?: string
  /** The payment payload. */
  payload: SuiPaymentPayload
}

/**
 * Encodes an `X-PAYMENT` header value (standard base64 of JSON). Validates its input with the same
 * schema the decoder uses, so a value this function returns always decodes.
 *
 * @throws {PaymentError} `invalid_payload` when the input does not match the schema.
 * @example
 * ```ts
 * headers.set('X-PAYMENT', encodeXPayment({ payload: { challengeId, transaction, signature } }))
 * ```
 */
export function encodeXPayment(input: XPaymentInput): string {
  const wire = {
    x402Version,
    scheme: 'exact',
    network: input.network ?? 'sui:mainnet',
    payload: input.payload,
  }
  const checked = parseWith(xPaymentSchema, wire, 'X-PAYMENT payload', 'invalid_payload')
  return encodeBase64(JSON.stringify(checked))
}

/**
 * Decodes an `X-PAYMENT-RESPONSE` header value.
 *
 * @throws {PaymentError} `header_too_large`, `invalid_encoding`, `invalid_json`, `invalid_payload`.
 */
export function decodeXPaymentResponse(value: string): XPaymentResponse {
  const json = decodeJsonHeader(value, { header: x402Headers.paymentResponse, encoding: 'base64' })
  return parseWith(xPaymentResponseSchema, json, 'X-PAYMENT-RESPONSE', 'invalid_payload')
}

/**
 * Encodes an `X-PAYMENT-RESPONSE` header value: base64 of
 * `{ success, transaction: <digest>, network, payer }`.
 *
 * @example
 * ```ts
 * encodeXPaymentResponse({ success: true, transaction: digest, network: 'sui:mainnet', payer })
 * ```
 */
export function encodeXPaymentResponse(response: XPaymentResponse): string {
  const checked = parseWith(
    xPaymentResponseSchema,
    response,
    'X-PAYMENT-RESPONSE',
    'invalid_payload',
  )
  return encodeBase64(JSON.stringify(checked))
}

/**
 * Validates a parsed 402 body (for buyers reading a seller's answer).
 *
 * @param body - The parsed JSON body (untrusted).
 * @throws {PaymentError} `unsupported_version` or `invalid_payload`.
 */
export function parsePaymentRequired(body: unknown): PaymentRequired {
  return parseWith(paymentRequiredSchema, body, '402 body', 'invalid_payload', {
    x402Version: 'unsupported_version',
  })
}

/** Whether a value is an x402 v1 envelope (without throwing). */
export function isPaymentRequired(body: unknown): body is PaymentRequired {
  return paymentRequiredSchema.safeParse(body).success
}

/**
 * Finds the requirement a v1 payment answers: v1 matches by `scheme` + `network`.
 *
 * @throws {PaymentError} `unsupported_network` when no requirement has the payment's network.
 */
export function matchRequirement(
  accepts: readonly PaymentRequirement[],
  payment: Pick<XPayment, 'scheme' | 'network'>,
): PaymentRequirement {
  const found = accepts.find((r) => r.scheme === payment.scheme && r.network === payment.network)
  if (found === undefined) {
    throw new PaymentError(
      'unsupported_network',
      `No requirement for network ${payment.network}.`,
      {
        details: { network: payment.network },
      },
    )
  }
  return found
}
