/**
 * One error base for the whole library. Every rejection carries a stable `code` (a wire string that
 * never changes meaning), a short human message, optional structured `details`, the HTTP status it
 * maps to, and `toProblem()` for RFC 9457 problem documents.
 *
 * Guards match by `code` / `name` (see {@link isPaymentError}), not only `instanceof`, so errors that
 * crossed a realm or a bundle boundary are still recognised.
 *
 * Configuration, usage and outbound-request errors (the gateway's settings, the conformance suite's
 * options, a probe that got no answer) are codes of this same base, not of a sibling class: a caller
 * — the `tollgate` command, the gateway's start, an app embedding the library — then needs one guard
 * ({@link isPaymentError} / {@link hasCode}) and one shape (`code`, `shortMessage`, `details`,
 * `cause`, `status`) for everything the library throws, and the family already held configuration
 * codes (`invalid_config`, `invalid_secret`) before. Such codes are never caused by a buyer's
 * payment, so their {@link problemTypeOf | problem type} is the neutral `payment-required`.
 *
 * **Code casing.** Codes are lowercase `snake_case`. The one exception is the buyer client's codes
 * ({@link ClientErrorCode}, `PRICE_ABOVE_MAX` …), which are `UPPER_SNAKE_CASE`: they are on the
 * wire (the MCP server's tool results, the `tollgate pay` output, the buyer docs), and a wire code
 * never changes, so they stay as they are. New codes follow the lowercase rule (`errors.test.ts`
 * checks it).
 *
 * @module
 */

/** Codes for a payment credential or challenge that is not acceptable (HTTP 402 unless noted). */
export type WireErrorCode =
  /** A header is larger than the configured limit (checked before decoding). */
  | 'header_too_large'
  /** A header is not valid (strict) base64 / base64url. */
  | 'invalid_encoding'
  /** A header decodes, but not to JSON. */
  | 'invalid_json'
  /** JSON that does not match the wire schema. */
  | 'invalid_payload'
  /** An `x402Version` we do not speak. */
  | 'unsupported_version'
  /** A scheme other than `exact`. */
  | 'unsupported_scheme'
  /** A network other than the route's. */
  | 'unsupported_network'
  /** An x402 version 2 `accepted` requirement that is not the route's (amount, asset or payTo). */
  | 'requirements_mismatch'
  /** A `WWW-Authenticate` / `Authorization` header that is not well-formed auth-params. */
  | 'malformed_header'
  /** An MPP credential that cannot be parsed. */
  | 'malformed_credential'
  /** A challenge id that this server did not issue (bad HMAC, or terms that differ). */
  | 'invalid_challenge'
  /** A challenge id that was issued, but has expired. */
  | 'challenge_expired'
  /** An MPP method other than `sui` (HTTP 400). */
  | 'method_unsupported'

/** Codes for a payment that decoded fine but is not money we accept (HTTP 402). */
export type SettlementErrorCode =
  | 'invalid_signature'
  | 'signer_mismatch'
  | 'invalid_transaction'
  | 'transaction_form_not_allowed'
  | 'insufficient_amount'
  | 'wrong_recipient'
  | 'wrong_asset'
  | 'replay'
  | 'settlement_failed'
  | 'transaction_failed'
  | 'transaction_not_found'
  | 'settlement_pending'
  | 'ledger_unavailable'

/** Codes raised by the buyer client (see `tollgate/client`). */
export type ClientErrorCode =
  | 'PRICE_ABOVE_MAX'
  | 'LIMIT_PER_TX'
  | 'LIMIT_PER_DAY'
  /** An MCP session's budget (`tollgate mcp --session-budget`) would be exceeded. */
  | 'LIMIT_PER_SESSION'
  /** No wallet to pay with (`tollgate mcp` started without one): create and fund one first. */
  | 'NO_WALLET'
  | 'ESCROW_REQUIRED'
  | 'DIALECT_UNSUPPORTED'
  | 'INSUFFICIENT_BALANCE'
  | 'NO_PAYABLE_REQUIREMENT'
  | 'PAYMENT_REJECTED'
  /** The paid call failed and the seller refunded (or owes back) the payment; nothing was served. */
  | 'PAYMENT_REFUNDED'
  /**
   * A server's terms are not what the buyer asked for or pinned in its own configuration: another
   * escrow package or config object, seller, amount or asset, or a message to sign that the buyer
   * did not build from its request. Refused before anything is signed.
   */
  | 'terms_mismatch'

/** Codes for configuration and programming errors (never caused by a buyer). */
export type ConfigErrorCode =
  | 'invalid_amount'
  /**
   * A setting that does not validate. The reference gateway's configuration errors carry every bad
   * setting in `details.problems` (`PORT (port): must be …`, one string each, never a value).
   */
  | 'invalid_config'
  | 'invalid_secret'
  | 'invalid_request_body'
  | 'store_error'
  /**
   * Options or command-line arguments that cannot describe what was asked (a usage error: the
   * conformance suite's URL, network or mode, a CLI flag), as opposed to a setting (`invalid_config`).
   */
  | 'invalid_options'

/**
 * Codes of an outbound request the library made that got no usable answer (the conformance probe,
 * the `tollgate` command). All but `unexpected_status` are the `SafeFetchFailureCode` strings of
 * `tollgate/node`.
 */
export type FetchErrorCode =
  /**
   * Does not resolve, is an internal address, refuses or drops the connection — one code on
   * purpose, so an answer never maps what is reachable inside a network (HTTP 502).
   */
  | 'unreachable'
  /** A URL that is not http(s), or carries credentials (HTTP 400). */
  | 'bad_url'
  /** No whole answer within the time allowed (HTTP 504). */
  | 'timeout'
  /** An answer larger than the body cap (HTTP 502). */
  | 'too_large'
  /** More redirects than allowed (HTTP 502). */
  | 'too_many_redirects'
  /** The caller's signal aborted the request (HTTP 500). */
  | 'aborted'
  /** An answer with a status the request cannot use, such as a faucet's 4xx or 5xx (HTTP 502). */
  | 'unexpected_status'

/** Codes of answers a paid route gives that are not about the payment itself. */
export type ServiceErrorCode =
  /** The request body is over the route's size limit (HTTP 413), checked before any payment. */
  | 'request_body_too_large'
  /** The paid call failed after settlement; the payment is refunded (HTTP 500). */
  | 'call_failed'

/** Codes of escrowed jobs (see docs/escrow.md). */
export type EscrowErrorCode =
  /** No escrow job with that id on the ledger (HTTP 404). */
  | 'job_not_found'
  /** The job was not funded for this offer: other seller, amount, fee rate or deadlines (HTTP 409). */
  | 'job_terms_mismatch'
  /** The ledger refused or aborted the move (wrong party, state or time; HTTP 409). */
  | 'job_move_failed'
  /** A review the rules refuse: not the buyer, a self-purchase, refunded, not released (HTTP 403). */
  | 'review_refused'

/**
 * Codes of a session (MPP `intent="session"`, docs/protocol.md §7), each with the session problem
 * type of the same name under `paymentauth.org/problems/session/`.
 */
export type SessionErrorCode =
  /** The voucher's signature is not the channel's session key's. */
  | 'voucher_invalid'
  /** The channel's headroom does not cover the call: sign a higher voucher (`details.required`). */
  | 'insufficient_balance'
  /** A voucher above what the channel holds: top up first. */
  | 'amount_exceeds_deposit'
  /** A voucher raised by less than the seller's smallest step. */
  | 'delta_too_small'
  /** No such channel, or not one this seller can be paid through (HTTP 410). */
  | 'channel_not_found'
  /** The channel is closing or closed (HTTP 410). */
  | 'channel_finalized'

/** Codes of the seller marketplace (see docs/marketplace.md). */
export type MarketplaceErrorCode =
  /** A catalog mutation whose signature or nonce does not hold, or by another address (HTTP 401). */
  | 'mutation_refused'
  /** No listing with that id (HTTP 404). */
  | 'listing_not_found'
  /** A submitted endpoint that failed one of the four listing gates (HTTP 422). */
  | 'listing_refused'
  /**
   * Too many requests: from one client address in a window, or more nonces outstanding than the
   * gateway keeps (HTTP 429, with `Retry-After`).
   */
  | 'rate_limited'

/** Every stable error code the library emits. */
export type PaymentErrorCode =
  | WireErrorCode
  | SettlementErrorCode
  | ClientErrorCode
  | ConfigErrorCode
  | FetchErrorCode
  | ServiceErrorCode
  | EscrowErrorCode
  | MarketplaceErrorCode
  | SessionErrorCode

/** Default HTTP status of each code. */
const statusOf: { readonly [K in PaymentErrorCode]: number } = {
  header_too_large: 402,
  invalid_encoding: 402,
  invalid_json: 402,
  invalid_payload: 402,
  unsupported_version: 402,
  unsupported_scheme: 402,
  unsupported_network: 402,
  requirements_mismatch: 402,
  malformed_header: 402,
  malformed_credential: 402,
  invalid_challenge: 402,
  challenge_expired: 402,
  method_unsupported: 400,
  invalid_signature: 402,
  signer_mismatch: 402,
  invalid_transaction: 402,
  transaction_form_not_allowed: 402,
  insufficient_amount: 402,
  wrong_recipient: 402,
  wrong_asset: 402,
  replay: 402,
  settlement_failed: 402,
  transaction_failed: 402,
  transaction_not_found: 402,
  settlement_pending: 402,
  ledger_unavailable: 503,
  PRICE_ABOVE_MAX: 402,
  LIMIT_PER_TX: 402,
  LIMIT_PER_DAY: 402,
  LIMIT_PER_SESSION: 402,
  NO_WALLET: 402,
  ESCROW_REQUIRED: 402,
  DIALECT_UNSUPPORTED: 402,
  INSUFFICIENT_BALANCE: 402,
  NO_PAYABLE_REQUIREMENT: 402,
  PAYMENT_REJECTED: 402,
  PAYMENT_REFUNDED: 502,
  terms_mismatch: 402,
  invalid_amount: 500,
  invalid_config: 500,
  invalid_secret: 500,
  invalid_request_body: 400,
  store_error: 500,
  invalid_options: 400,
  unreachable: 502,
  bad_url: 400,
  timeout: 504,
  too_large: 502,
  too_many_redirects: 502,
  aborted: 500,
  unexpected_status: 502,
  request_body_too_large: 413,
  call_failed: 500,
  job_not_found: 404,
  job_terms_mismatch: 409,
  job_move_failed: 409,
  review_refused: 403,
  mutation_refused: 401,
  listing_not_found: 404,
  listing_refused: 422,
  rate_limited: 429,
  voucher_invalid: 402,
  insufficient_balance: 402,
  amount_exceeds_deposit: 402,
  delta_too_small: 402,
  channel_not_found: 410,
  channel_finalized: 410,
}

/** The MPP problem types (`https://paymentauth.org/problems/<type>`). */
export type ProblemType =
  | 'payment-required'
  | 'payment-insufficient'
  | 'payment-expired'
  | 'verification-failed'
  | 'malformed-credential'
  | 'invalid-challenge'
  | 'method-unsupported'
  | 'session/invalid-signature'
  | 'session/insufficient-balance'
  | 'session/amount-exceeds-deposit'
  | 'session/delta-too-small'
  | 'session/channel-not-found'
  | 'session/channel-finalized'

/** Base URI of the MPP problem types. */
export const problemTypeBase = 'https://paymentauth.org/problems/'

/** Which MPP problem type a code maps to. */
export function problemTypeOf(code: PaymentErrorCode): ProblemType {
  switch (code) {
    case 'insufficient_amount':
      return 'payment-insufficient'
    case 'challenge_expired':
      return 'payment-expired'
    case 'invalid_challenge':
      return 'invalid-challenge'
    case 'method_unsupported':
      return 'method-unsupported'
    case 'header_too_large':
    case 'invalid_encoding':
    case 'invalid_json':
    case 'invalid_payload':
    case 'malformed_header':
    case 'malformed_credential':
    case 'unsupported_version':
      return 'malformed-credential'
    case 'invalid_signature':
    case 'signer_mismatch':
    case 'invalid_transaction':
    case 'transaction_form_not_allowed':
    case 'wrong_recipient':
    case 'wrong_asset':
    case 'replay':
    case 'settlement_failed':
    case 'transaction_failed':
    case 'transaction_not_found':
    case 'unsupported_scheme':
    case 'unsupported_network':
    case 'requirements_mismatch':
      return 'verification-failed'
    case 'voucher_invalid':
      return 'session/invalid-signature'
    case 'insufficient_balance':
      return 'session/insufficient-balance'
    case 'amount_exceeds_deposit':
      return 'session/amount-exceeds-deposit'
    case 'delta_too_small':
      return 'session/delta-too-small'
    case 'channel_not_found':
      return 'session/channel-not-found'
    case 'channel_finalized':
      return 'session/channel-finalized'
    default:
      return 'payment-required'
  }
}

/** An RFC 9457 problem document. */
export type Problem = {
  type: string
  title: string
  status: number
  detail: string
  code: PaymentErrorCode
  [extension: string]: unknown
}

/** Options of {@link PaymentError}. */
export type PaymentErrorOptions = {
  /** Structured, non-secret facts about the failure (never a key, a token or a full header). */
  details?: Readonly<Record<string, unknown>> | undefined
  /** The underlying error. Not serialised by {@link PaymentError.toProblem}. */
  cause?: unknown
  /** Overrides the code's default HTTP status. */
  status?: number | undefined
}

/**
 * The one error class of the library.
 *
 * @example
 * ```ts
 * throw new PaymentError('replay', 'This payment was already used.', { details: { digest } })
 * ```
 */
export class PaymentError extends Error {
  override readonly name = 'PaymentError'
  /** Stable wire code. */
  readonly code: PaymentErrorCode
  /** The message without details, suitable for an HTTP reason. */
  readonly shortMessage: string
  /** Structured, non-secret facts. */
  readonly details: Readonly<Record<string, unknown>>
  /** The HTTP status this error maps to. */
  readonly status: number

  constructor(code: PaymentErrorCode, shortMessage: string, options: PaymentErrorOptions = {}) {
    super(shortMessage, options.cause === undefined ? undefined : { cause: options.cause })
    this.code = code
    this.shortMessage = shortMessage
    this.details = options.details ?? {}
    this.status = options.status ?? statusOf[code]
  }

  /**
   * This error as an RFC 9457 problem document: with the MPP problem type, or `about:blank` and the
   * HTTP status's title for the codes that are not about a payment (a body over the limit or not
   * valid, a paid call that failed). `extensions` are added as members (`{ field }` of an invalid
   * body); they never override the standard members.
   */
  toProblem(extensions?: Readonly<Record<string, unknown>>): Problem {
    const plain = plainStatusTitles[this.code]
    const type = problemTypeOf(this.code)
    const problem: Problem = {
      type: plain === undefined ? problemTypeBase + type : 'about:blank',
      title: plain ?? titleOf(type),
      status: this.status,
      detail: this.shortMessage,
      code: this.code,
    }
    return extensions === undefined ? problem : { ...problem, ...extensions, ...problem }
  }
}

/**
 * The codes whose problem documents are `about:blank` (RFC 9457 §4.2.1: the title is the status's
 * reason phrase), because they are not about a payment.
 */
const plainStatusTitles: { readonly [K in PaymentErrorCode]?: string } = {
  invalid_request_body: 'Bad Request',
  request_body_too_large: 'Payload Too Large',
  call_failed: 'Internal Server Error',
  rate_limited: 'Too Many Requests',
}

function titleOf(type: ProblemType): string {
  switch (type) {
    case 'payment-required':
      return 'Payment Required'
    case 'payment-insufficient':
      return 'Payment Insufficient'
    case 'payment-expired':
      return 'Payment Expired'
    case 'verification-failed':
      return 'Verification Failed'
    case 'malformed-credential':
      return 'Malformed Credential'
    case 'invalid-challenge':
      return 'Invalid Challenge'
    case 'method-unsupported':
      return 'Method Unsupported'
    case 'session/invalid-signature':
      return 'Invalid Signature'
    case 'session/insufficient-balance':
      return 'Insufficient Balance'
    case 'session/amount-exceeds-deposit':
      return 'Amount Exceeds Deposit'
    case 'session/delta-too-small':
      return 'Delta Too Small'
    case 'session/channel-not-found':
      return 'Channel Not Found'
    case 'session/channel-finalized':
      return 'Channel Finalized'
  }
}

/** Whether `value` is a {@link PaymentError} (by name and code, so it works across realms). */
export function isPaymentError(value: unknown): value is PaymentError {
  return (
    value instanceof PaymentError ||
    (typeof value === 'object' &&
      value !== null &&
      (value as { name?: unknown }).name === 'PaymentError' &&
      typeof (value as { code?: unknown }).code === 'string' &&
      (value as { code: string }).code in statusOf)
  )
}

/** Whether `value` is a {@link PaymentError} with the given code. */
export function hasCode<C extends PaymentErrorCode>(
  value: unknown,
  code: C,
): value is PaymentError & { code: C } {
  return isPaymentError(value) && value.code === code
}

/** Every code the library can emit, for documentation and exhaustive tests. */
export const paymentErrorCodes = Object.keys(statusOf) as readonly PaymentErrorCode[]
