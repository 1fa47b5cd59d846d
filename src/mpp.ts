/**
 * MPP, the header dialect (HTTP `Payment` authentication, paymentauth.org): the
 * `WWW-Authenticate: Payment …` challenge, its charge `request` (base64url of RFC 8785 JSON), the
 * `Authorization: Payment <base64url JSON>` credential, the `Payment-Receipt` header, the proof a
 * buyer signs, and RFC 9457 problem documents with the paymentauth.org problem types.
 *
 * Wire forms follow `mppx` (parameter order, quoting, base64url without padding) so that challenges,
 * credentials and receipts interoperate both ways. Parsers check the 16 KiB limit first and throw
 * nothing but a {@link PaymentError}.
 *
 * @module
 */
import canonicalize from 'canonicalize'
import { z } from 'zod'
import { PaymentError, problemTypeBase } from './errors.js'
import { authParam, findScheme, parseAuthItems } from './internal/authParams.js'
import { encodeBase64url, isStrictBase64, isStrictBase64url } from './internal/base64.js'
import { createRecent } from './internal/recent.js'
import { checkHeaderSize, decodeJsonHeader, parseWith } from './internal/wire.js'
import { baseUnitsSchema, networkSchema } from './x402.js'

/** The authentication scheme name. */
export const paymentScheme = 'Payment'

/** Header names of the MPP dialect. */
export const mppHeaders = {
  wwwAuthenticate: 'WWW-Authenticate',
  authorization: 'Authorization',
  paymentReceipt: 'Payment-Receipt',
} as const

const text = (max: number) => z.string().max(max)
const nonEmpty = (max: number) => z.string().min(1).max(max)
const tokenSchema = z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/)

/** A `request` parameter as decoded: a JSON object. */
export const requestObjectSchema = z.record(z.string(), z.unknown())

/** The fields of a challenge other than `request`, as they travel (all strings). */
const challengeFields = {
  /** Challenge id: HMAC-bound to the other parameters by the issuing server. */
  id: nonEmpty(256),
  /** Protection space, usually the host name. */
  realm: text(256),
  /** Payment method, lowercase (`sui`). */
  method: z.string().regex(/^[a-z][a-z0-9:_-]{0,63}$/),
  /** Intent (`charge`). */
  intent: tokenSchema,
  /** Expiry, RFC 3339. */
  expires: z.iso.datetime({ offset: true }).optional(),
  /** Human description. */
  description: text(1024).optional(),
  /** Request-body digest (`sha-256=…`). */
  digest: z
    .string()
    .regex(/^sha-256=[A-Za-z0-9+/=_-]{1,128}$/)
    .optional(),
  /** Server correlation data: base64url of JCS JSON of string values. */
  opaque: text(4096).refine(isStrictBase64url, { message: 'not base64url' }).optional(),
  /** Alternate credential header name. */
  header: tokenSchema.optional(),
}

/** A parsed challenge (the `request` decoded to an object). */
export const challengeSchema = z.object({ ...challengeFields, request: requestObjectSchema })

/** A parsed challenge. */
export type Challenge = z.infer<typeof challengeSchema>

/** A challenge as it travels, with `request` still base64url (what the id's HMAC covers). */
export type ChallengeParams = Omit<Challenge, 'request'> & { request: string }

/** The charge `request` of the `sui` method. */
export const suiChargeRequestSchema = z.object({
  /** Amount in base units. */
  amount: baseUnitsSchema,
  /** Coin type (USDC). */
  currency: nonEmpty(256),
  /** Recipient address. */
  recipient: nonEmpty(128),
  /** Method details: the network. */
  methodDetails: z.object({ network: networkSchema }),
})

/** The charge `request` of the `sui` method. */
export type SuiChargeRequest = z.infer<typeof suiChargeRequestSchema>

/**
 * Encodes a `request` (or `opaque`) object: base64url, no padding, of its RFC 8785 (JCS) JSON.
 *
 * @example
 * ```ts
 * encodeRequest({ amount: '20000', currency, recipient, methodDetails: { network: 'sui:mainnet' } })
 * ```
 */
export function encodeRequest(request: Readonly<Record<string, unknown>>): string {
  const json = canonicalize(request)
  if (json === undefined) throw new PaymentError('invalid_config', 'The request is not JSON.')
  return encodeBase64url(json)
}

/**
 * Decodes a `request` (or `opaque`) parameter.
 *
 * @throws {PaymentError} `code` (default `malformed_header`) if it is not base64url JSON of an object.
 */
export function decodeRequest(
  value: string,
  code: 'malformed_header' | 'malformed_credential' = 'malformed_header',
): Record<string, unknown> {
  const json = decodeJsonHeader(value, { header: 'request', encoding: 'base64url', code })
  return parseWith(requestObjectSchema, json, 'request parameter', code)
}

/**
 * Formats one challenge from its wire parameters, in `mppx`'s order: `id`, `realm`, `method`,
 * `intent`, `request`, `description`, `digest`, `expires`, `header`, `opaque`.
 */
export function formatChallenge(params: ChallengeParams): string {
  let out = `${paymentScheme} ${authParam('id', params.id)}, ${authParam('realm', params.realm)}, ${authParam('method', params.method)}, ${authParam('intent', params.intent)}, ${authParam('request', params.request)}`
  if (params.description !== undefined) out += `, ${authParam('description', params.description)}`
  if (params.digest !== undefined) out += `, ${authParam('digest', params.digest)}`
  if (params.expires !== undefined) out += `, ${authParam('expires', params.expires)}`
  if (params.header !== undefined) out += `, ${authParam('header', params.header)}`
  if (params.opaque !== undefined) out += `, ${authParam('opaque', params.opaque)}`
  return out
}

/**
 * Serializes challenges into one `WWW-Authenticate` value (several are joined with `, `).
 *
 * @example
 * ```ts
 * headers.set('WWW-Authenticate', serializeChallenges([challenge]))
 * ```
 */
export function serializeChallenges(challenges: readonly Challenge[]): string {
  return challenges
    .map((c) => formatChallenge({ ...c, request: encodeRequest(c.request) }))
    .join(', ')
}

/**
 * Parses every `Payment` challenge of a `WWW-Authenticate` value (other schemes are skipped).
 *
 * @throws {PaymentError} `header_too_large` above 16 KiB, `malformed_header` for anything not
 *   well-formed (bad quoting, duplicate parameters, missing `request`, bad base64url, bad fields).
 */
export function parseChallenges(value: string): Challenge[] {
  checkHeaderSize(value, mppHeaders.wwwAuthenticate)
  const out: Challenge[] = []
  for (const item of parseAuthItems(value)) {
    if (item.scheme.toLowerCase() !== 'payment') continue
    const { request, ...rest } = item.params
    if (request === undefined) {
      throw new PaymentError('malformed_header', 'A Payment challenge has no request parameter.')
    }
    const challenge = { ...rest, request: decodeRequest(request) }
    out.push(parseWith(challengeSchema, challenge, 'Payment challenge', 'malformed_header'))
  }
  return out
}

/**
 * Parses the first `Payment` challenge of a `WWW-Authenticate` value.
 *
 * @throws {PaymentError} as {@link parseChallenges}, and `malformed_header` when there is none.
 */
export function parseChallenge(value: string): Challenge {
  const [first] = parseChallenges(value)
  if (first === undefined) throw new PaymentError('malformed_header', 'No Payment challenge.')
  return first
}

/** A credential: the echoed challenge, the method's payload, and an optional payer id. */
export type Credential = {
  challenge: Challenge
  payload: Record<string, unknown>
  source?: string
}

const credentialWireSchema = z.object({
  challenge: z.object({
    ...challengeFields,
    request: nonEmpty(16 * 1024),
    // Older mppx clients echo `opaque` expanded to an object of strings.
    opaque: z
      .union([challengeFields.opaque, z.record(z.string(), z.string().max(1024))])
      .optional(),
  }),
  payload: z.record(z.string(), z.unknown()),
  source: text(512).optional(),
})

/**
 * Serializes a credential to an `Authorization` value: `Payment <base64url(JSON)>`.
 *
 * @example
 * ```ts
 * headers.set('Authorization', serializeCredential({ challenge, payload: { digest, signature } }))
 * ```
 */
export function serializeCredential(credential: Credential): string {
  return prepareCredentials(credential.challenge)(credential.payload, credential.source)
}

/**
 * Prepares the credentials of one challenge: its echo (the challenge's JSON, its `request`
 * encoded) is written once, and each call writes only its payload into it — what a buyer paying
 * many calls against one challenge (a session's vouchers) needs. Each value is what
 * {@link serializeCredential} gives for the same challenge, payload and source.
 *
 * @example
 * ```ts
 * const credentialOf = prepareCredentials(challenge)
 * headers.set('Authorization', credentialOf({ action: 'voucher', cumulativeAmount, signature }))
 * ```
 */
export function prepareCredentials(
  challenge: Challenge,
): (payload: Record<string, unknown>, source?: string) => string {
  const { request, ...rest } = challenge
  const head = `{"challenge":${JSON.stringify({ ...rest, request: encodeRequest(request) })},"payload":`
  return (payload, source) => {
    const tail = source === undefined ? '}' : `,"source":${JSON.stringify(source)}}`
    return `${paymentScheme} ${encodeBase64url(`${head}${JSON.stringify(payload)}${tail}`)}`
  }
}

/**
 * The `request`s of credentials parsed lately, decoded (a buyer echoes one for many calls). Any
 * client can send any request, so at most 256 of at most 4 KiB are kept (a seller's own are far
 * shorter); a longer one is decoded each time.
 */
const echoedRequests = createRecent<string, Readonly<Record<string, unknown>>>({
  max: 256,
  maxKeyLength: 4096,
})

/** A credential's echoed `request`, decoded once per distinct value (frozen: it is shared). */
function echoedRequest(value: string): Readonly<Record<string, unknown>> {
  return (
    echoedRequests.get(value) ??
    echoedRequests.remember(value, frozen(decodeRequest(value, 'malformed_credential')))
  )
}

/** A JSON value frozen to its leaves. */
function frozen<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) frozen(inner)
    Object.freeze(value)
  }
  return value
}

/**
 * Parses an `Authorization` value that carries a `Payment` credential, alone or among other
 * schemes (`Bearer …, Payment …`).
 *
 * @throws {PaymentError} `header_too_large`; `malformed_credential` for anything else wrong.
 */
export function parseCredential(value: string): Credential {
  checkHeaderSize(value, mppHeaders.authorization)
  const piece = findScheme(value, paymentScheme)
  if (piece === undefined) {
    throw new PaymentError('malformed_credential', 'No Payment credential in the header.')
  }
  const token = piece.slice(paymentScheme.length).trim()
  const json = decodeJsonHeader(token, {
    header: mppHeaders.authorization,
    encoding: 'base64url',
    code: 'malformed_credential',
  })
  const wire = parseWith(credentialWireSchema, json, 'Payment credential', 'malformed_credential')
  const { request, opaque, ...rest } = wire.challenge
  const challenge: Challenge = {
    ...rest,
    request: echoedRequest(request),
    ...(opaque === undefined
      ? {}
      : { opaque: typeof opaque === 'string' ? opaque : encodeRequest(opaque) }),
  }
  return {
    challenge,
    payload: wire.payload,
    ...(wire.source === undefined ? {} : { source: wire.source }),
  }
}

/** The payload of a `sui` charge credential: the transaction digest and the proof signature. */
export const suiChargePayloadSchema = z.object({
  /** Base58 transaction digest (32 bytes). */
  digest: z.string().regex(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/),
  /** Base64 serialized Sui personal-message signature over {@link proofMessage}. */
  signature: z
    .string()
    .min(4)
    .max(8192)
    .refine(isStrictBase64, { message: 'not canonical base64' }),
})

/** The payload of a `sui` charge credential. */
export type SuiChargePayload = z.infer<typeof suiChargePayloadSchema>

/**
 * Reads the `sui` charge payload of a credential.
 *
 * @throws {PaymentError} `method_unsupported` (HTTP 400) for a method other than `sui`,
 *   `malformed_credential` for a payload that does not match.
 */
export function suiChargePayload(credential: Credential): SuiChargePayload {
  if (credential.challenge.method !== 'sui') {
    throw new PaymentError('method_unsupported', 'Only the sui payment method is accepted.', {
      details: { method: credential.challenge.method },
    })
  }
  return parseWith(
    suiChargePayloadSchema,
    credential.payload,
    'sui payload',
    'malformed_credential',
  )
}

/** What the buyer signs (as a personal message) to prove it sent the transaction. */
export type ProofInput = {
  realm: string
  challengeId: string
  amount: string
  currency: string
  recipient: string
  digest: string
}

/**
 * The proof message of a `sui` charge: the JCS JSON
 * `{ domain, version: 1, method: "sui", intent: "charge", challengeId, amount, currency, recipient, digest }`.
 */
export function proofMessage(input: ProofInput): string {
  return canonicalize({
    domain: input.realm,
    version: 1,
    method: 'sui',
    intent: 'charge',
    challengeId: input.challengeId,
    amount: input.amount,
    currency: input.currency,
    recipient: input.recipient,
    digest: input.digest,
  }) as string
}

/** The `Payment-Receipt` header (success only). */
export const receiptSchema = z.looseObject({
  status: z.literal('success'),
  method: nonEmpty(64),
  timestamp: z.iso.datetime({ offset: true }),
  reference: nonEmpty(256),
  externalId: text(256).optional(),
})

/** A payment receipt. */
export type Receipt = z.infer<typeof receiptSchema>

/**
 * Encodes a `Payment-Receipt` value: base64url (no padding) of its JSON.
 *
 * @example
 * ```ts
 * encodeReceipt({ status: 'success', method: 'sui', timestamp: new Date().toISOString(), reference: digest })
 * ```
 */
export function encodeReceipt(receipt: Receipt): string {
  const checked = parseWith(receiptSchema, receipt, 'receipt', 'invalid_payload')
  return encodeBase64url(JSON.stringify(checked))
}

/**
 * Decodes a `Payment-Receipt` value.
 *
 * @throws {PaymentError} `header_too_large`, `invalid_encoding`, `invalid_json`, `invalid_payload`.
 */
export function decodeReceipt(value: string): Receipt {
  const json = decodeJsonHeader(value, { header: mppHeaders.paymentReceipt, encoding: 'base64url' })
  return parseWith(receiptSchema, json, 'receipt', 'invalid_payload')
}

/** An RFC 9457 problem document. */
export const problemSchema = z.looseObject({
  type: text(256),
  title: text(256),
  status: z.number().int(),
  detail: text(1024).optional(),
})

/** The problem document of an unpaid request: type `payment-required`, status 402. */
export function paymentRequiredProblem(detail: string): {
  type: string
  title: string
  status: number
  detail: string
} {
  return {
    type: `${problemTypeBase}payment-required`,
    title: 'Payment Required',
    status: 402,
    detail,
  }
}
