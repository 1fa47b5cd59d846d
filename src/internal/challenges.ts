/**
 * The pieces of a 402 challenge and the check of a presented id, given prepared terms and keys:
 * what `buildChallenge` / `verifyChallenge` do after preparing their inputs, and what the engine
 * calls with the terms and keys it prepared once.
 *
 * @module
 * @internal
 */
import type { ChallengeBody, ChallengePieces, ChallengeVerification } from '../challenge.js'
import { PaymentError } from '../errors.js'
import { formatAmount } from '../money.js'
import { formatChallenge, paymentRequiredProblem } from '../mpp.js'
import { type Offer, offered } from '../negotiate.js'
import { x402Version } from '../x402.js'
import { type PaymentRequiredV2, x402V2Headers } from '../x402v2.js'
import { decodeBase64, encodeBase64 } from './base64.js'
import {
  candidateExpiries,
  expiryText,
  idBytes,
  idText,
  type MacKey,
  mac,
  sameMac,
} from './challengeId.js'
import type { PreparedTerms } from './terms.js'

/** The HMAC input of a challenge id (`mppx`'s order; `digest` is unused and empty). */
function idInput(p: PreparedTerms, expires: string): string {
  return `${p.realm}|sui|charge|${p.request}|${expires}||${p.opaque}`
}

/** The plain 402 of `p` expiring at `expiresAt` (Unix seconds), signed with `key`. */
export function assembleChallenge(
  p: PreparedTerms,
  key: MacKey,
  expiresAt: number,
  offer: Offer,
): ChallengePieces {
  const expires = expiryText(expiresAt)
  const id = idText(mac(key, idInput(p, expires)))
  const dialects = offered(offer)
  const how =
    dialects.x402 && dialects.mpp
      ? 'X-PAYMENT (x402) or Authorization: Payment (MPP)'
      : dialects.x402
        ? 'X-PAYMENT (x402)'
        : 'Authorization: Payment (MPP)'
  const detail = `This resource costs ${formatAmount(p.price)} USDC on ${p.network}. Pay with ${how}.`
  const base = paymentRequiredProblem(detail)
  const extra = { challengeId: id, ...(p.escrow === undefined ? {} : { escrow: p.escrow }) }
  const body: ChallengeBody = dialects.x402
    ? {
        x402Version,
        error: 'Payment required',
        accepts: Object.freeze([Object.freeze({ ...p.requirement, extra: Object.freeze(extra) })]),
        ...base,
      }
    : base
  const wwwAuthenticate = dialects.mpp
    ? formatChallenge({
        id,
        realm: p.realm,
        method: 'sui',
        intent: 'charge',
        request: p.request,
        ...(p.description === '' ? {} : { description: p.description }),
        expires,
        opaque: p.opaque,
      })
    : undefined
  const v2 = p.paymentRequiredV2
  const paymentRequired = dialects.x402
    ? encodeBase64(`${v2.head}${JSON.stringify(id)}${v2.tail}`)
    : undefined
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    'Cache-Control': 'no-store',
  }
  if (wwwAuthenticate !== undefined) headers['WWW-Authenticate'] = wwwAuthenticate
  if (paymentRequired !== undefined) headers[x402V2Headers.paymentRequired] = paymentRequired
  return Object.freeze({
    id,
    expiresAt,
    expires,
    status: 402,
    body: Object.freeze(body),
    bodyText: JSON.stringify(body),
    wwwAuthenticate,
    paymentRequired,
    headers: Object.freeze(headers),
  })
}

/** The `PAYMENT-REQUIRED` value of `plain` with `error` set to a refusal's code. */
function explainPaymentRequired(plain: string, code: string): string {
  const bytes = decodeBase64(plain) as Uint8Array
  const required = JSON.parse(new TextDecoder().decode(bytes)) as PaymentRequiredV2
  return encodeBase64(JSON.stringify({ ...required, error: code }))
}

/** The same challenge, with the body explaining why an earlier payment was rejected. */
export function explainChallenge(plain: ChallengePieces, error: PaymentError): ChallengePieces {
  const problem = error.toProblem()
  const refund = error.details.refund
  const why = {
    type: problem.type,
    title: problem.title,
    status: 402,
    detail: problem.detail,
    code: problem.code,
    // A payment presented again after its paid call failed: whether it is refunded.
    ...(refund === undefined ? {} : { refund }),
  }
  const body: ChallengeBody =
    plain.body.x402Version === undefined
      ? why
      : { ...plain.body, error: error.shortMessage, ...why }
  if (plain.paymentRequired === undefined) {
    return Object.freeze({ ...plain, body: Object.freeze(body), bodyText: JSON.stringify(body) })
  }
  const paymentRequired = explainPaymentRequired(plain.paymentRequired, problem.code)
  return Object.freeze({
    ...plain,
    body: Object.freeze(body),
    bodyText: JSON.stringify(body),
    paymentRequired,
    headers: Object.freeze({ ...plain.headers, [x402V2Headers.paymentRequired]: paymentRequired }),
  })
}

const invalid = (): ChallengeVerification => ({
  status: 'invalid',
  error: new PaymentError('invalid_challenge', 'This challenge was not issued for this resource.'),
})

const expired = (at: number): ChallengeVerification => ({
  status: 'expired',
  error: new PaymentError('challenge_expired', 'This challenge has expired.', {
    details: { expires: expiryText(at) },
  }),
})

/**
 * Checks a presented challenge id against prepared terms and keys (see `verifyChallenge`): a bad
 * id is a result, never an exception.
 */
export function checkChallengeId(
  p: PreparedTerms,
  keys: readonly MacKey[],
  id: string,
  now: number,
  expires: string | undefined,
): ChallengeVerification {
  const given = idBytes(id)
  if (given === undefined) return invalid()
  const matches = (text: string) => keys.some((key) => sameMac(mac(key, idInput(p, text)), given))
  if (expires !== undefined) {
    const at = Date.parse(expires)
    if (expires.length > 64 || Number.isNaN(at) || !matches(expires)) return invalid()
    return at > now ? { status: 'valid', expires: new Date(at) } : expired(at / 1000)
  }
  const { live, expired: past } = candidateExpiries(now, p.maxTimeoutSeconds)
  for (const at of live) {
    if (matches(expiryText(at))) return { status: 'valid', expires: new Date(at * 1000) }
  }
  for (const at of past) if (matches(expiryText(at))) return expired(at)
  return invalid()
}
