/**
 * The engine's own answers — those given instead of the seller's handler: the 402 challenge (plain,
 * or explaining why a payment was refused), and the problem documents of a body over the limit or
 * not valid, a refused payment that is not a 402, and a paid call that failed. Every problem
 * document is a {@link PaymentError}'s `toProblem()`.
 *
 * @module
 * @internal
 */
import type { ChallengePieces } from '../challenge.js'
import { PaymentError } from '../errors.js'
import { explainChallenge } from '../internal/challenges.js'
import type { PaymentMethod } from '../methods/types.js'
import type { PlainResponse } from './types.js'

/**
 * An engine answer as a decision (`status: 'respond'`). Immutable, so the same 402 can be handed to
 * every unpaid request until its expiry moves on; `response` is a new `Response` each time it is
 * read (a body is read only once).
 */
export type Answer = {
  readonly status: 'respond'
  readonly plain: PlainResponse
  /** The answer as a Web `Response` (a new one on each read). */
  readonly response: Response
}

/** The answer of `plain`; see {@link Answer}. */
function answer(plain: PlainResponse): Answer {
  return {
    status: 'respond',
    plain,
    get response() {
      return new Response(plain.body, { status: plain.status, headers: plain.headers })
    },
  }
}

const problemHeaders = Object.freeze({
  'Content-Type': 'application/problem+json',
  'Cache-Control': 'no-store',
})

/** `error` as a problem document answer, with `extensions` members and extra headers first. */
export function problemAnswer(
  error: PaymentError,
  extensions?: Readonly<Record<string, unknown>>,
  extraHeaders?: Readonly<Record<string, string>>,
): Answer {
  return answer({
    status: error.status,
    headers: extraHeaders === undefined ? problemHeaders : { ...extraHeaders, ...problemHeaders },
    body: JSON.stringify(error.toProblem(extensions)),
  })
}

/** 413: the body is over the route's limit (declared, or read). */
export function tooLarge(limit: number): Answer {
  return problemAnswer(
    new PaymentError('request_body_too_large', `The request body is over ${limit} bytes.`),
  )
}

/** 400: the body does not pass the route's validator (`field`: the first failing one, if known). */
export function invalidBody(message: string, field: string | null): Answer {
  return problemAnswer(new PaymentError('invalid_request_body', message), { field })
}

/** The plain 402 of a challenge as an answer (frozen: it is shared until the expiry moves on). */
export function challengeAnswer(pieces: ChallengePieces): Answer {
  return answer(Object.freeze({ status: 402, headers: pieces.headers, body: pieces.bodyText }))
}

/**
 * The answer to a refused payment: the 402 of `plain` explaining `error`, or, for an error that is
 * not a 402 (a ledger that cannot be reached is a 503), its problem document.
 */
export function refusedAnswer(
  plain: ChallengePieces,
  methods: readonly PaymentMethod[],
  error: PaymentError,
  extraHeaders?: Readonly<Record<string, string>>,
): Answer {
  if (error.status !== 402) return problemAnswer(error, undefined, extraHeaders)
  const pieces = explainChallenge(plain, error, methods)
  return answer({
    status: 402,
    headers: extraHeaders === undefined ? pieces.headers : { ...pieces.headers, ...extraHeaders },
    body: pieces.bodyText,
  })
}

/** A management action's answer (a session's top-up or close: 204 and its receipt, no body). */
export function managementAnswer(given: {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
}): Answer {
  return answer({ status: given.status, headers: given.headers, body: '' })
}

/** The problem document of a paid call whose handler threw (500; the payment is refunded). */
export function failedCallResponse(): Response {
  const error = new PaymentError(
    'call_failed',
    'The paid call failed; the payment will be refunded.',
  )
  return new Response(JSON.stringify(error.toProblem()), {
    status: 500,
    headers: { 'Content-Type': 'application/problem+json' },
  })
}
