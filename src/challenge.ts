/**
 * The 402 challenge of a priced route, in both dialects at once: the body is the x402 v1 envelope
 * and also an RFC 9457 problem document; `WWW-Authenticate` carries the MPP `Payment` challenge;
 * `accepts[0].extra.challengeId` is the MPP `id`.
 *
 * Challenge ids are stateless: `id = base64url(HMAC-SHA256(secret, realm|method|intent|request|expires|digest|opaque))`
 * exactly as `mppx` computes it, where `request` binds amount, currency, recipient and network, and
 * `opaque` (base64url of JCS `{"resource": url}`) binds the route. An x402 buyer echoes only the id,
 * so expiries are aligned down to fixed boundaries, never later than `maxTimeoutSeconds` after the
 * 402 (see {@link verifyChallenge}), and the verifier tries
 * the few candidates inside the window. Secrets rotate as a list: the first signs, all verify.
 *
 * @module
 */

import type { HeaderLookup } from './engine/requestView.js'
import { PaymentError } from './errors.js'
import {
  alignedExpiry,
  type ChallengeSecret,
  keyRing,
  type MacKey,
} from './internal/challengeId.js'
import { assembleChallenge, checkChallengeId, explainChallenge } from './internal/challenges.js'
import { type PreparedTerms, prepareTerms, type RouteTerms } from './internal/terms.js'
import { methodsFor } from './methods/index.js'
import type { PaymentMethod } from './methods/types.js'
import type { Offer } from './negotiate.js'
import type { PaymentRequirement } from './x402.js'

export type { ChallengeSecret } from './internal/challengeId.js'
export {
  type PreparedTerms,
  prepareTerms,
  type RouteTerms,
  usdcCoinTypes,
} from './internal/terms.js'

/** Options of {@link buildChallenge} and {@link paymentRequiredResponse}. */
export type ChallengeOptions = {
  /** HMAC secrets, each ≥ 32 bytes. The first signs; keep old ones listed while they may verify. */
  secrets: readonly ChallengeSecret[]
  /** MPP realm; default the host name of `resource` (without the port, as mppx expects). */
  realm?: string | undefined
  /** Clock; default `Date.now()`. */
  now?: Date | number | undefined
  /** Dialects to offer; default `'both'`. A shorthand for `methods` (ignored when they are given). */
  offer?: Offer | undefined
  /** The payment methods offered, in this order; default those of `offer`. */
  methods?: readonly PaymentMethod[] | undefined
  /** Why an earlier payment was rejected: sets the problem type/detail, the x402 `error`, and `code`. */
  error?: PaymentError | undefined
}

/** The 402 body: x402 envelope + problem document (or only the problem when x402 is not offered). */
export type ChallengeBody = {
  x402Version?: 1
  error?: string
  accepts?: readonly Readonly<PaymentRequirement>[]
  type: string
  title: string
  status: number
  detail: string
  code?: string
  /** On a `replay` of a payment whose paid call failed: `{ status: 'owed' | 'refunded', refundDigest? }`. */
  refund?: unknown
}

/** Everything a 402 is made of, for adapters and the engine. */
export type ChallengePieces = {
  /** The challenge id (x402 `extra.challengeId` = MPP `id`). */
  readonly id: string
  /** Expiry as Unix seconds. */
  readonly expiresAt: number
  /** Expiry as RFC 3339 (the MPP `expires` parameter). */
  readonly expires: string
  /** HTTP status: 402. */
  readonly status: 402
  /** The body as an object (frozen: shared between calls). */
  readonly body: Readonly<ChallengeBody>
  /** The body as JSON text. */
  readonly bodyText: string
  /** The `WWW-Authenticate` value, when MPP is offered. */
  readonly wwwAuthenticate: string | undefined
  /**
   * The x402 version 2 `PAYMENT-REQUIRED` value (base64 JSON, the same terms and challenge id as
   * the body's `accepts`), when x402 is offered.
   */
  readonly paymentRequired: string | undefined
  /**
   * Response headers: `Content-Type`, `Cache-Control: no-store`, `WWW-Authenticate` (MPP) and
   * `PAYMENT-REQUIRED` (x402 version 2).
   */
  readonly headers: Readonly<Record<string, string>>
}

function nowMs(now: Date | number | undefined): number {
  const ms = now === undefined ? Date.now() : typeof now === 'number' ? now : now.getTime()
  if (!Number.isFinite(ms))
    throw new PaymentError('invalid_config', 'The clock is not a valid time.')
  return ms
}

/**
 * Builds the pieces of the 402 for a route: id, expiry, body (object and text), headers. Nothing is
 * kept between calls (the engine of `createPaywall` keeps its own, per instance).
 *
 * @throws {PaymentError} `invalid_config` for bad terms, `invalid_secret` for bad secrets.
 * @example
 * ```ts
 * const pieces = buildChallenge({ price: 20000n, payTo, resource: 'https://api.example.com/v1/x' }, { secrets })
 * pieces.headers['WWW-Authenticate']
 * ```
 */
export function buildChallenge(
  terms: RouteTerms | PreparedTerms,
  options: ChallengeOptions,
): ChallengePieces {
  const p = prepareTerms(terms, { realm: options.realm })
  const key = keyRing(options.secrets)[0] as MacKey
  const expiresAt = alignedExpiry(nowMs(options.now), p.maxTimeoutSeconds)
  const methods = options.methods ?? methodsFor(options.offer)
  const plain = assembleChallenge(p, key, expiresAt, methods)
  return options.error === undefined ? plain : explainChallenge(plain, options.error, methods)
}

/**
 * The 402 `Response` of a route (Web standard), in both dialects unless `options.offer` says one.
 * `Content-Type: application/json` (not `application/problem+json`: x402 clients read the envelope
 * only from a JSON content type), `Cache-Control: no-store`.
 *
 * @example
 * ```ts
 * if (!request.headers.has('x-payment') && !request.headers.has('authorization')) {
 *   return paymentRequiredResponse({ price: 20000n, payTo, resource: resourceUrl(request) }, { secrets })
 * }
 * ```
 */
export function paymentRequiredResponse(
  terms: RouteTerms | PreparedTerms,
  options: ChallengeOptions,
): Response {
  const pieces = buildChallenge(terms, options)
  return new Response(pieces.bodyText, { status: 402, headers: pieces.headers })
}

/** Input of {@link verifyChallenge}. */
export type VerifyChallengeInput = {
  /** The id the buyer presented (x402 `challengeId` or MPP `id`). Untrusted. */
  id: string
  /** The terms of the route the request is for (not the terms the buyer claims). */
  terms: RouteTerms | PreparedTerms
  /** All secrets that may have signed (current first). */
  secrets: readonly ChallengeSecret[]
  /** Clock; default `Date.now()`. */
  now?: Date | number | undefined
  /** The echoed `expires` (MPP). Without it (x402) the aligned candidates are tried. */
  expires?: string | undefined
  /** MPP realm, as given to {@link buildChallenge}. */
  realm?: string | undefined
}

/** Result of {@link verifyChallenge}. */
export type ChallengeVerification =
  | { status: 'valid'; expires: Date }
  | { status: 'invalid'; error: PaymentError }
  | { status: 'expired'; error: PaymentError }

/**
 * Verifies a challenge id statelessly against the route's terms, in constant time per comparison.
 *
 * With `expires` (MPP echoes it) one MAC per secret is computed and the expiry compared with `now`.
 * Without it (x402 echoes only the id) the candidates are the aligned expiries that can still be
 * live — boundaries of the bucket `B = max(1, ceil(T / 4))` seconds in `(now, floor((now+T)/B)*B + B]`,
 * about 5 for `T = 60`, tried most likely first (the expiry a challenge issued now would get), so a
 * prompt buyer costs one MAC; the last extra bucket absorbs clock skew between servers. Then, to
 * report `expired` rather than `invalid`, those that passed within the last `T + B` seconds.
 *
 * @throws {PaymentError} only for configuration errors (`invalid_config`, `invalid_secret`); a bad id
 *   is a result, never an exception.
 * @example
 * ```ts
 * const v = verifyChallenge({ id: payment.payload.challengeId, terms, secrets })
 * if (v.status !== 'valid') throw v.error
 * ```
 */
export function verifyChallenge(input: VerifyChallengeInput): ChallengeVerification {
  const p = prepareTerms(input.terms, { realm: input.realm })
  return checkChallengeId(p, keyRing(input.secrets), input.id, nowMs(input.now), input.expires)
}

/** Options of {@link resourceUrl}. */
export type ResourceUrlOptions = {
  /** The public base URL (`https://api.example.com` or with a path prefix). Wins over everything. */
  publicBaseUrl?: string | undefined
  /**
   * Whether to believe `X-Forwarded-Proto` / `X-Forwarded-Host`. Default `false`. Turn on only
   * behind a proxy that sets them: otherwise any client chooses the URL bound into the challenge.
   */
  trustProxy?: boolean | undefined
}

const hostPattern =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}\.?)*|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?$/

function firstValue(value: string | null): string | undefined {
  const first = value?.split(',')[0]?.trim()
  return first === '' ? undefined : first
}

/**
 * The URL of the paid resource as buyers see it (origin + path, no query): from `publicBaseUrl`
 * when configured, else from `X-Forwarded-Proto`/`X-Forwarded-Host` when `trustProxy` is on (and
 * they are well-formed), else the request URL.
 *
 * @example
 * ```ts
 * resourceUrl(request, { publicBaseUrl: 'https://api.example.com' })
 * ```
 */
export function resourceUrl(
  request: { readonly url: string; readonly headers: HeaderLookup },
  options: ResourceUrlOptions = {},
): string {
  const url = new URL(request.url)
  if (options.publicBaseUrl !== undefined) {
    const base = new URL(options.publicBaseUrl)
    return base.origin + base.pathname.replace(/\/+$/, '') + url.pathname
  }
  if (options.trustProxy === true) {
    const proto = firstValue(request.headers.get('x-forwarded-proto'))?.toLowerCase()
    const host = firstValue(request.headers.get('x-forwarded-host'))
    const scheme = proto === 'http' || proto === 'https' ? `${proto}:` : url.protocol
    const authority = host !== undefined && hostPattern.test(host) ? host : url.host
    return `${scheme}//${authority}${url.pathname}`
  }
  return url.origin + url.pathname
}
