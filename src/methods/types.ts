/**
 * A payment method: one way to pay, both halves in one module. The server half finds its credential
 * in a request, writes its part of the 402, settles, and writes its success headers; the client half
 * reads its offers from a 402, says what a buyer needs to use them, and pays one. The engine, the
 * buyer client and the MCP helpers loop over the methods they were given and never ask which one it
 * is: adding a method is adding a module (see CONTRIBUTING.md, "Adding a payment method").
 *
 * Every method of one 402 shares the route's terms and its one challenge id (an HMAC over the terms
 * and the expiry, see `Challenge`), so a buyer may answer in any method offered.
 *
 * @module
 */
import type { Signer } from '@mysten/sui/cryptography'
import type { ChallengeVerification, PreparedTerms } from '../challenge.js'
import type { HeaderLookup } from '../engine/requestView.js'
import type { PaymentError, PaymentErrorCode } from '../errors.js'
import type { ChallengeBinding } from '../internal/challenges.js'
import type { Ledger } from '../ledger/index.js'
import type { SettleContext, SettlementResult, SettlementTerms } from '../settle.js'
import type { PaymentDialect } from '../stores/types.js'

/** The 402 being assembled: the body's members and the response headers, each method adding its own. */
export type ChallengeParts = {
  /** Body members placed before the problem document's (`type`, `title`, `status`, `detail`). */
  readonly body: Readonly<Record<string, unknown>>
  /** Response headers (names as written on the wire). */
  readonly headers: Readonly<Record<string, string>>
}

/** What a method's part of the 402 is made from. */
export type ChallengeInput = {
  /** The route's terms at this resource. */
  readonly terms: PreparedTerms
  /** The challenge id every method of this 402 carries. */
  readonly id: string
  /** Its expiry, RFC 3339 (and `expiresAt`, Unix seconds). */
  readonly expires: string
  readonly expiresAt: number
  /**
   * The id of a challenge of this 402 that binds another MPP intent and `request` than the shared
   * `charge` one (a session's challenge): same terms, same expiry.
   */
  idFor(binding: ChallengeBinding): string
}

/** What settling a credential needs, given by the engine. */
export type MethodSettleInput = {
  /** The route's terms at the resource requested (never what the buyer claims). */
  readonly terms: PreparedTerms
  /** The same terms as settlement checks them against the ledger's effects. */
  readonly settlement: SettlementTerms
  /**
   * Checks a presented challenge id (with the echoed expiry when the method carries one; with the
   * intent and `request` it binds when not the shared `charge` ones: see {@link ChallengeInput.idFor}).
   */
  checkChallenge(
    id: string,
    expires?: string | undefined,
    binding?: ChallengeBinding | undefined,
  ): ChallengeVerification
  /**
   * Whether the request is a bare one (`HEAD`, or a `POST` with neither body nor query): a method
   * that answers management actions ({@link MethodServer.answersBare}) answers it without the handler.
   */
  readonly bare: boolean
  /**
   * Whether the engine's caller holds the handler's answer until the payment is durable: the method
   * may then settle with its last write still under way (`PaymentBooks.durable`).
   */
  readonly holdsAnswer: boolean
  /** The ledger, the store and the engine's settlement options. */
  readonly context: SettleContext
}

/** What a method's success headers are made from. */
export type SuccessInput = {
  /** The settlement digest. */
  readonly digest: string
  /** Who paid. */
  readonly payer: string
  /** The network the route is paid on. */
  readonly network: string
  /** When the payment was accepted, in ms. */
  readonly at: number
}

/** The server half of a payment method. */
export type MethodServer = {
  /** The name buyers know the method by, in the 402's `detail` and in refusals: `x402`, `MPP`. */
  readonly label: string
  /** How the 402 tells a buyer to pay this way (`X-PAYMENT (x402)`); the first of each label is shown. */
  readonly how: string
  /** The refusal's code when a route that does not take this method is presented with it. */
  readonly unsupportedCode: PaymentErrorCode
  /**
   * True when the method answers bare requests itself (management actions, such as a session's
   * top-up: see {@link MethodSettleInput.bare}): the route's body validator does not run for them.
   */
  readonly answersBare?: boolean | undefined
  /** Extra facts recorded on the payment (`x402Version: 2`). */
  readonly paymentInfo?: { readonly x402Version?: 2 | undefined } | undefined
  /**
   * The raw credential of this method in a request (untrusted, undecoded), or undefined when the
   * request carries none. A present but empty credential is returned, to be refused loudly.
   */
  classify(headers: HeaderLookup): string | undefined
  /** Adds this method's part to the 402 (body members, headers). */
  challenge(parts: ChallengeParts, input: ChallengeInput): ChallengeParts
  /** The 402 that refuses a payment, with this method's part telling why (`error`). */
  explain?(parts: ChallengeParts, error: PaymentError): ChallengeParts
  /**
   * Decodes the credential, checks it against the route's terms and settles it. Bad input is a
   * `rejected` result or a thrown {@link PaymentError}, never anything else.
   */
  settle(credential: string, input: MethodSettleInput): SettlementResult | Promise<SettlementResult>
  /** The headers of the paid answer with status `status` (the receipt). */
  successHeaders(input: SuccessInput): (status: number) => Readonly<Record<string, string>>
}

/** What every offer read from a 402 says, whatever its method. Amounts are base units of `asset`. */
export type MethodOffer = {
  /** The name of the method that read it (and will pay it). */
  readonly method: string
  /** Whose transaction it is: `x402` (the seller submits) or `mpp` (the buyer does). */
  readonly dialect: PaymentDialect
  readonly scheme: string
  readonly network: string
  readonly asset: string
  readonly amount: bigint
  readonly payTo: string
  /** The challenge id to echo, when the offer carries one. */
  readonly challengeId: string | undefined
  /** Whether the route is escrow-only (never paid instantly). */
  readonly escrow: boolean
}

/** The parts of a 402 a buyer reads (untrusted). */
export type ChallengeResponse = {
  /** The body, as text. */
  readonly bodyText: string
  /** The headers. */
  readonly headers: HeaderLookup
}

/** Offers a method read from a 402, and what it could not read (with the reason). */
export type ReadOffers = {
  readonly offers: readonly MethodOffer[]
  readonly unreadable: readonly string[]
}

/** A signed USDC transfer for an offer, as the client half pays it. */
export type SignedTransfer = {
  /** The transaction bytes. */
  readonly bytes: Uint8Array
  /** The sender's signature, base64. */
  readonly signature: string
  /** The transaction digest. */
  readonly digest: string
}

/** What a method needs to pay an offer. */
export type MethodPayContext = {
  readonly signer: Signer
  readonly ledger: Ledger
}

/** What a method made of a signed transfer. */
export type MethodPayment =
  /** Send `headers` on the retried request. */
  | { readonly status: 'ready'; readonly headers: Readonly<Record<string, string>> }
  /** Not paid; `moneyMayHaveMoved` is false only when nothing can have moved. */
  | { readonly status: 'failed'; readonly error: PaymentError; readonly moneyMayHaveMoved: boolean }

/**
 * The client half of a payment method. It is given only the offers it read itself (the client
 * finds an offer's method by `offer.method`), so it may narrow them to its own offer type.
 */
export type MethodClient = {
  /** Reads this method's offers from a 402; never throws. */
  read(response: ChallengeResponse): ReadOffers
  /** The name of an offer in messages (`x402 v2`). */
  readonly label: string
  /** Among offers of one dialect, lower is chosen first (x402 version 2 before version 1). */
  readonly rank: number
  /** Why an offer of this method cannot be answered, beyond the common checks; undefined when it can. */
  unanswerable?(offer: MethodOffer): string | undefined
  /** The offer's raw escrow terms (validate before use), when it demands escrow. */
  escrowTerms(offer: MethodOffer): unknown
  /** Turns the signed transfer into what the retried request carries (submitting it, if it must). */
  pay(
    offer: MethodOffer,
    transfer: SignedTransfer,
    context: MethodPayContext,
  ): Promise<MethodPayment>
  /** The seller's receipt in a paid answer, decoded; undefined when absent or unreadable. */
  receipt(response: Response): unknown
}

/**
 * A payment method: a name, its dialect (which side submits the transaction, recorded with the
 * payment), and both halves. The built-in ones: `Methods.x402v1`, `Methods.x402v2`, `Methods.mppCharge`.
 */
export type PaymentMethod = {
  /** Unique among the methods of a seller or client, e.g. `x402v1`. */
  readonly name: string
  /** `x402`: the seller submits the buyer's signed transaction; `mpp`: the buyer submitted it. */
  readonly dialect: PaymentDialect
  /**
   * True when the buyer submits the transaction itself (its signer must be able to), before it
   * presents the credential: such a credential is read before any other in the same request, since
   * ignoring it would keep money the buyer already spent, while a credential the seller settles
   * costs its buyer nothing until then.
   */
  readonly buyerSubmits: boolean
  readonly server: MethodServer
  readonly client: MethodClient
}
