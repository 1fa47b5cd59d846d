/**
 * Reading a 402 as a buyer: every offer it makes in both dialects (the x402 body's `accepts[]`, the
 * x402 version 2 `PAYMENT-REQUIRED` header's `accepts[]` and the `WWW-Authenticate: Payment`
 * challenges), and the choice of the one offer this wallet may pay: scheme `exact` / intent
 * `charge`, our network, the network's native USDC (never wUSDC), no escrow, and a dialect the
 * signer can use.
 *
 * Preference among payable offers: the dialect of `prefer` (default x402) first; within x402,
 * version 2 before version 1 (a version 2 payment names the exact requirement it accepts, so the
 * seller matches it without guessing); then the other dialect.
 *
 * @module
 */
import { normalizeStructTag, normalizeSuiAddress } from '@mysten/sui/utils'
import { PaymentError } from '../errors.js'
import { usdcCoinTypes } from '../internal/terms.js'
import { builtInMethods } from '../methods/index.js'
import type { MppChargeOffer } from '../methods/mppCharge.js'
import type { ChallengeResponse, MethodOffer, PaymentMethod } from '../methods/types.js'
import type { X402V1Offer } from '../methods/x402v1.js'
import type { X402V2Offer } from '../methods/x402v2.js'
import { mppHeaders } from '../mpp.js'
import type { Dialect } from '../negotiate.js'
import { x402V2Headers } from '../x402v2.js'

export { maxChallengeBodyBytes, type X402OfferFields } from '../methods/x402v1.js'

/**
 * One offer of a 402 read by a built-in method, in the dialect (and x402 version) it came in:
 * x402 version 1 from the body's `accepts[]` (paid with `X-PAYMENT`), version 2 from the
 * `PAYMENT-REQUIRED` header (paid with `PAYMENT-SIGNATURE`), or an MPP `Payment` challenge.
 * Amounts are base units of `asset`.
 */
export type PaymentOffer = X402V1Offer | X402V2Offer | MppChargeOffer

/** An offer this wallet can pay: scheme exact, our network, USDC, no escrow. */
export type PayableOffer<O extends MethodOffer = PaymentOffer> = O & { escrow: false }

/** What a 402 offers, as read by {@link readOffers}. */
export type Offers<O extends MethodOffer = PaymentOffer> = {
  offers: O[]
  /** Offers that could not be read (malformed body or header), with the reason. */
  unreadable: { dialect: Dialect; reason: string }[]
}

/**
 * Reads every offer of a 402 with the built-in methods: the x402 version 2 `PAYMENT-REQUIRED`
 * header (when given), the x402 envelope of `bodyText` (when it is one) and every `Payment`
 * challenge of `wwwAuthenticate`. Never throws: what cannot be read is listed in `unreadable`.
 *
 * @param input.bodyText - The 402 body (untrusted; ignored above 64 KiB).
 * @param input.wwwAuthenticate - The `WWW-Authenticate` value, if any (untrusted).
 * @param input.paymentRequired - The `PAYMENT-REQUIRED` value, if any (untrusted; 16 KiB at most).
 * @example
 * ```ts
 * const { offers } = readOffers({ bodyText: await res.text(), wwwAuthenticate: res.headers.get('www-authenticate') })
 * ```
 */
export function readOffers(input: {
  bodyText: string
  wwwAuthenticate: string | null
  paymentRequired?: string | null | undefined
}): Offers {
  const headers = new Headers()
  if (input.wwwAuthenticate !== null) headers.set(mppHeaders.wwwAuthenticate, input.wwwAuthenticate)
  if (typeof input.paymentRequired === 'string') {
    headers.set(x402V2Headers.paymentRequired, input.paymentRequired)
  }
  return readMethodOffers({ bodyText: input.bodyText, headers }, builtInMethods) as Offers
}

/**
 * Reads every offer of a 402 with each of `methods`. Offers are grouped by dialect (in the order
 * the methods are given), the method a buyer prefers within a dialect first (x402 version 2 before
 * version 1). Offers that share a challenge id are one set of terms: if one demands escrow, all do.
 * Never throws.
 *
 * @example
 * ```ts
 * const { offers } = readMethodOffers({ bodyText: await res.text(), headers: res.headers }, methods)
 * ```
 */
export function readMethodOffers(
  response: ChallengeResponse,
  methods: readonly PaymentMethod[],
): Offers<MethodOffer> {
  const read: { offer: MethodOffer; rank: number }[] = []
  const unreadable: { dialect: Dialect; reason: string }[] = []
  for (const method of methods) {
    const found = method.client.read(response)
    for (const offer of found.offers) read.push({ offer, rank: method.client.rank })
    for (const reason of found.unreadable) unreadable.push({ dialect: method.dialect, reason })
  }
  const escrowIds = new Set(
    read
      .filter((r) => r.offer.escrow && r.offer.challengeId !== undefined)
      .map((r) => r.offer.challengeId),
  )
  const dialects = [...new Set(read.map((r) => r.offer.dialect))]
  const offers = read
    .map((r, index) => ({ ...r, index }))
    .sort(
      (a, b) =>
        dialects.indexOf(a.offer.dialect) - dialects.indexOf(b.offer.dialect) ||
        a.rank - b.rank ||
        a.index - b.index,
    )
    .map(({ offer }) =>
      offer.escrow || offer.challengeId === undefined || !escrowIds.has(offer.challengeId)
        ? offer
        : { ...offer, escrow: true },
    )
  return { offers, unreadable }
}

/** How to choose among the offers. */
export type SelectOptions = {
  /** Our network, e.g. `sui:mainnet`. */
  network: string
  /** Whether the signer can submit transactions itself (MPP needs it). */
  canSubmit: boolean
  /**
   * The dialect to use when the 402 offers both; default `x402` (and within x402, version 2 before
   * version 1).
   */
  prefer?: Dialect | undefined
  /** The methods that may pay (their client halves judge their own offers); default the built-in ones. */
  methods?: readonly PaymentMethod[] | undefined
}

/** The result of {@link selectOffer}: the offer to pay, or the refusal. */
export type Selection<O extends MethodOffer = PaymentOffer> =
  | { status: 'selected'; offer: PayableOffer<O> }
  | { status: 'refused'; error: PaymentError }

/** The USDC coin type of a network (Circle native USDC), or undefined for an unknown network. */
export function usdcTypeOf(network: string): string | undefined {
  return usdcCoinTypes[network]
}

function sameType(a: string, b: string): boolean {
  try {
    return normalizeStructTag(a) === normalizeStructTag(b)
  } catch {
    return false
  }
}

function validAddress(address: string): boolean {
  try {
    return /^0x[0-9a-f]{64}$/.test(normalizeSuiAddress(address))
  } catch {
    return false
  }
}

/** The method of `offer` among `methods`. */
function methodOf(
  offer: MethodOffer,
  methods: readonly PaymentMethod[],
): PaymentMethod | undefined {
  return methods.find((m) => m.name === offer.method)
}

/** Why an offer is not payable by us, or undefined when it is (ignoring escrow and dialect). */
function unpayableReason(
  offer: MethodOffer,
  method: PaymentMethod,
  network: string,
  usdc: string,
): string | undefined {
  if (offer.scheme !== 'exact') return `scheme ${offer.scheme} is not exact`
  if (offer.network !== network) return `network ${offer.network} is not ${network}`
  if (!sameType(offer.asset, usdc)) return `asset ${offer.asset} is not the USDC of ${network}`
  if (offer.amount <= 0n) return 'amount is zero'
  if (!validAddress(offer.payTo)) return 'payTo is not a Sui address'
  return method.client.unanswerable?.(offer)
}

/**
 * Chooses the offer to pay. Refusals, in this order:
 * - `ESCROW_REQUIRED`: every offer we could otherwise pay demands escrow (never instant-paid);
 * - `DIALECT_UNSUPPORTED`: the signer cannot submit and the only payable offers are MPP;
 * - `NO_PAYABLE_REQUIREMENT`: nothing is scheme exact + our network + USDC (`details.reasons`).
 *
 * @example
 * ```ts
 * const choice = selectOffer(readOffers(…).offers, { network: 'sui:mainnet', canSubmit: true })
 * if (choice.status === 'refused') throw choice.error
 * ```
 */
export function selectOffer<O extends MethodOffer = PaymentOffer>(
  offers: readonly O[],
  options: SelectOptions,
): Selection<O> {
  const methods = options.methods ?? builtInMethods
  const usdc = usdcTypeOf(options.network)
  const reasons: string[] = []
  const payable: { offer: O; method: PaymentMethod }[] = []
  for (const offer of offers) {
    const method = methodOf(offer, methods)
    const reason =
      method === undefined
        ? 'no method of this client pays it'
        : usdc === undefined
          ? `no USDC known on ${options.network}`
          : unpayableReason(offer, method, options.network, usdc)
    if (reason === undefined && method !== undefined) payable.push({ offer, method })
    else reasons.push(`${method?.client.label ?? offer.method}: ${reason}`)
  }
  const instant = payable.filter((p) => !p.offer.escrow)
  if (instant.length === 0 && payable.length > 0) {
    const terms = payable
      .filter((p) => p.offer.escrow)
      .map((p) => p.method.client.escrowTerms(p.offer))
      .find((t) => t !== undefined && t !== null && typeof t === 'object')
    return refuse(
      'ESCROW_REQUIRED',
      'The seller demands escrow for this call; it is never paid instantly (fund a job instead).',
      { reasons, escrow: terms },
    )
  }
  const usable = instant.filter((p) => options.canSubmit || !p.method.buyerSubmits)
  if (usable.length === 0 && instant.length > 0) {
    return refuse(
      'DIALECT_UNSUPPORTED',
      'The seller offers only the header dialect (MPP), where the buyer submits the transaction; this signer cannot submit.',
      { offered: instant.map((p) => p.offer.dialect) },
    )
  }
  const prefer = options.prefer ?? 'x402'
  const rank = (p: { offer: O; method: PaymentMethod }) =>
    (p.offer.dialect === prefer ? 0 : 1_000) + p.method.client.rank
  let chosen: { offer: O; method: PaymentMethod } | undefined
  for (const p of usable) if (chosen === undefined || rank(p) < rank(chosen)) chosen = p
  if (chosen === undefined) {
    return refuse(
      'NO_PAYABLE_REQUIREMENT',
      offers.length === 0
        ? 'The 402 carries no payment offer this client can read.'
        : `No offer is payable in USDC on ${options.network} with scheme exact. ${reasons.length > 0 ? `Offers: ${reasons.join('; ')}.` : `Offered: ${[...new Set(offers.map((o) => o.dialect))].join(', ')}.`}`,
      { reasons },
    )
  }
  return { status: 'selected', offer: chosen.offer as PayableOffer<O> }
}

function refuse<O extends MethodOffer>(
  code: 'ESCROW_REQUIRED' | 'DIALECT_UNSUPPORTED' | 'NO_PAYABLE_REQUIREMENT',
  message: string,
  details: Record<string, unknown>,
): Selection<O> {
  return { status: 'refused', error: new PaymentError(code, message, { details }) }
}
