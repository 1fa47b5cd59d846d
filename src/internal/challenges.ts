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
import type { ChallengeParts, PaymentMethod } from '../methods/types.js'
import { formatAmount } from '../money.js'
import { mppHeaders, paymentRequiredProblem } from '../mpp.js'
import { x402V2Headers } from '../x402v2.js'
import {
  candidateExpiries,
  expiryText,
  idBytes,
  idText,
  type MacKey,
  mac,
  sameMac,
} from './challengeId.js'
import { createRecent, type Recent } from './recent.js'
import type { PreparedTerms } from './terms.js'

/**
 * What a challenge id binds besides the route's terms: the MPP intent and `request`. Every method of
 * one 402 shares the `charge` binding (the default); a method whose challenge has another intent
 * (a session) binds its own.
 */
export type ChallengeBinding = { readonly intent: string; readonly request: string }

/** The HMAC input of a challenge id (`mppx`'s order; `digest` is unused and empty). */
function idInput(p: PreparedTerms, expires: string, binding?: ChallengeBinding): string {
  const intent = binding?.intent ?? 'charge'
  const request = binding?.request ?? p.request
  return `${p.realm}|sui|${intent}|${request}|${expires}||${p.opaque}`
}

/** The challenge id of `p` with `binding`, expiring at `expires` (RFC 3339), signed with `key`. */
export function boundChallengeId(
  p: PreparedTerms,
  key: MacKey,
  expires: string,
  binding: ChallengeBinding,
): string {
  return idText(mac(key, idInput(p, expires, binding)))
}

/** The text of the 402's `detail`: the price, and how to pay in each method offered. */
function detailOf(p: PreparedTerms, methods: readonly PaymentMethod[]): string {
  const how = new Map<string, string>()
  for (const method of methods) {
    if (!how.has(method.server.label)) how.set(method.server.label, method.server.how)
  }
  return `This resource costs ${formatAmount(p.price)} USDC on ${p.network}. Pay with ${[...how.values()].join(' or ')}.`
}

/** The pieces of a 402 from its parts (the frozen, shared form). */
function piecesOf(
  id: string,
  expiresAt: number,
  expires: string,
  parts: ChallengeParts,
): ChallengePieces {
  const body = parts.body as ChallengeBody
  return Object.freeze({
    id,
    expiresAt,
    expires,
    status: 402,
    body: Object.freeze(body),
    bodyText: JSON.stringify(body),
    wwwAuthenticate: parts.headers[mppHeaders.wwwAuthenticate],
    paymentRequired: parts.headers[x402V2Headers.paymentRequired],
    headers: Object.freeze(parts.headers),
  })
}

/**
 * The plain 402 of `p` expiring at `expiresAt` (Unix seconds), signed with `key`: each method adds
 * its part (body members before the problem document's, headers), all with the one challenge id.
 */
export function assembleChallenge(
  p: PreparedTerms,
  key: MacKey,
  expiresAt: number,
  methods: readonly PaymentMethod[],
): ChallengePieces {
  const expires = expiryText(expiresAt)
  const id = idText(mac(key, idInput(p, expires)))
  let parts: ChallengeParts = {
    body: {},
    headers: { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' },
  }
  const input = {
    terms: p,
    id,
    expires,
    expiresAt,
    idFor: (binding: ChallengeBinding) => boundChallengeId(p, key, expires, binding),
  }
  for (const method of methods) parts = method.server.challenge(parts, input)
  const body = { ...parts.body, ...paymentRequiredProblem(detailOf(p, methods)) }
  return piecesOf(id, expiresAt, expires, { body, headers: parts.headers })
}

/** The same challenge, with each method's part and the body explaining why a payment was refused. */
export function explainChallenge(
  plain: ChallengePieces,
  error: PaymentError,
  methods: readonly PaymentMethod[],
): ChallengePieces {
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
  let parts: ChallengeParts = { body: plain.body, headers: plain.headers }
  for (const method of methods) parts = method.server.explain?.(parts, error) ?? parts
  return piecesOf(plain.id, plain.expiresAt, plain.expires, {
    body: { ...parts.body, ...why },
    headers: parts.headers,
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

/** Per key ring, the ids it verified lately and the input each was verified for. */
const verified = new WeakMap<readonly MacKey[], Recent<string, string>>()

/**
 * How many verified ids a key ring remembers. An input holds the route's terms and its resource
 * (at most 2 048 characters of URL), so a client that makes the seller verify ids for many long
 * URLs makes it keep a few MB at most.
 */
const maxRememberedIds = 2048

/** The ids `keys` verified lately (see {@link checkChallengeId}). */
function verifiedIds(keys: readonly MacKey[]): Recent<string, string> {
  let seen = verified.get(keys)
  if (seen === undefined) {
    seen = createRecent<string, string>({ max: maxRememberedIds })
    verified.set(keys, seen)
  }
  return seen
}

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
  binding?: ChallengeBinding,
): ChallengeVerification {
  const given = idBytes(id)
  if (given === undefined) return invalid()
  const seen = verifiedIds(keys)
  const matches = (text: string) => {
    const input = idInput(p, text, binding)
    // An id this key ring verified for this very input is not verified again (a buyer presents
    // one challenge for many calls): only the same id with the same input is taken so.
    if (seen.get(id) === input) return true
    if (!keys.some((key) => sameMac(mac(key, input), given))) return false
    seen.remember(id, input)
    return true
  }
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
