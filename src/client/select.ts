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
import { type Challenge, parseChallenges, suiChargeRequestSchema } from '../mpp.js'
import type { Dialect } from '../negotiate.js'
import { challengeIdSchema, type PaymentRequirement, parsePaymentRequired } from '../x402.js'
import {
  decodePaymentRequiredV2,
  type PaymentRequiredV2,
  type PaymentRequirementV2,
  type ResourceInfo,
} from '../x402v2.js'

/** The largest 402 body read as a buyer (64 KiB); a larger one is not parsed as an x402 envelope. */
export const maxChallengeBodyBytes = 64 * 1024

/** What the x402 offers of both versions share. */
export type X402OfferFields = {
  dialect: 'x402'
  /** The requirement in version 1's shape (a version 2 one translated: `amount` → `maxAmountRequired`). */
  requirement: PaymentRequirement
  scheme: string
  network: string
  asset: string
  amount: bigint
  payTo: string
  /** `extra.challengeId`, echoed in the payment (an offer without one cannot be answered). */
  challengeId: string | undefined
  /** Escrow terms when the route is escrow-only (`extra.escrow`). */
  escrow: boolean
}

/** One offer of a 402, in the dialect (and x402 version) it came in. Amounts are base units of `asset`. */
export type PaymentOffer =
  /** x402 version 1: from the body's `accepts[]`; paid with `X-PAYMENT`. */
  | (X402OfferFields & { version: 1 })
  /** x402 version 2: from the `PAYMENT-REQUIRED` header; paid with `PAYMENT-SIGNATURE`. */
  | (X402OfferFields & {
      version: 2
      /** The requirement as offered (echoed as `accepted`). */
      accepted: PaymentRequirementV2
      /** The resource of the PaymentRequired. */
      resource: ResourceInfo
    })
  | {
      dialect: 'mpp'
      challenge: Challenge
      scheme: string
      network: string
      asset: string
      amount: bigint
      payTo: string
      challengeId: string
      escrow: boolean
    }

/** An offer this wallet can pay: scheme exact, our network, USDC, no escrow. */
export type PayableOffer = PaymentOffer & { escrow: false }

/** What a 402 offers, as read by {@link readOffers}. */
export type Offers = {
  offers: PaymentOffer[]
  /** Offers that could not be read (malformed body or header), with the reason. */
  unreadable: { dialect: Dialect; reason: string }[]
}

/**
 * Reads every offer of a 402: the x402 version 2 `PAYMENT-REQUIRED` header (when given), the x402
 * envelope of `bodyText` (when it is one) and every `Payment` challenge of `wwwAuthenticate`.
 * Never throws: what cannot be read is listed in `unreadable`.
 *
 * @param input.bodyText - The 402 body (untrusted; ignored above {@link maxChallengeBodyBytes}).
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
  const result: Offers = { offers: [], unreadable: [] }
  if (input.paymentRequired !== undefined && input.paymentRequired !== null) {
    try {
      const required = decodePaymentRequiredV2(input.paymentRequired)
      for (const accepted of required.accepts) result.offers.push(x402V2Offer(accepted, required))
    } catch (error) {
      result.unreadable.push({ dialect: 'x402', reason: reasonOf(error) })
    }
  }
  const body = input.bodyText
  if (body.length > 0 && body.length <= maxChallengeBodyBytes) {
    try {
      const json = JSON.parse(body) as unknown
      const hasAccepts = typeof json === 'object' && json !== null && 'accepts' in json
      if (hasAccepts) {
        for (const requirement of parsePaymentRequired(json).accepts) {
          result.offers.push(x402Offer(requirement))
        }
      }
    } catch (error) {
      result.unreadable.push({ dialect: 'x402', reason: reasonOf(error) })
    }
  }
  if (input.wwwAuthenticate !== null) {
    try {
      const challenges = parseChallenges(input.wwwAuthenticate)
      const escrowIds = new Set(
        result.offers.filter((o) => o.escrow).map((o) => o.challengeId ?? ''),
      )
      for (const challenge of challenges) {
        const offer = mppOffer(challenge, escrowIds)
        if (offer) result.offers.push(offer)
        else
          result.unreadable.push({ dialect: 'mpp', reason: 'a sui charge request that is invalid' })
      }
    } catch (error) {
      result.unreadable.push({ dialect: 'mpp', reason: reasonOf(error) })
    }
  }
  return result
}

function x402V2Offer(accepted: PaymentRequirementV2, required: PaymentRequiredV2): PaymentOffer {
  const requirement: PaymentRequirement = {
    scheme: accepted.scheme,
    network: accepted.network,
    maxAmountRequired: accepted.amount,
    resource: required.resource.url,
    description: required.resource.description ?? '',
    ...(required.resource.mimeType === undefined ? {} : { mimeType: required.resource.mimeType }),
    payTo: accepted.payTo,
    maxTimeoutSeconds: accepted.maxTimeoutSeconds,
    asset: accepted.asset,
    ...(accepted.extra === undefined ? {} : { extra: accepted.extra }),
  }
  return { ...x402Offer(requirement), version: 2, accepted, resource: required.resource }
}

function x402Offer(requirement: PaymentRequirement): X402OfferFields & { version: 1 } {
  const id = challengeIdSchema.safeParse(requirement.extra?.challengeId)
  const escrow = requirement.extra?.escrow
  return {
    dialect: 'x402',
    version: 1,
    requirement,
    scheme: requirement.scheme,
    network: requirement.network,
    asset: requirement.asset,
    amount: BigInt(requirement.maxAmountRequired),
    payTo: requirement.payTo,
    challengeId: id.success ? id.data : undefined,
    escrow: escrow !== undefined && escrow !== null && escrow !== false,
  }
}

function mppOffer(challenge: Challenge, escrowIds: ReadonlySet<string>): PaymentOffer | undefined {
  if (challenge.method !== 'sui') {
    return {
      dialect: 'mpp',
      challenge,
      scheme: `${challenge.method}/${challenge.intent}`,
      network: '',
      asset: '',
      amount: 0n,
      payTo: '',
      challengeId: challenge.id,
      escrow: false,
    }
  }
  const request = suiChargeRequestSchema.safeParse(challenge.request)
  if (!request.success) return undefined
  const details = challenge.request.methodDetails as Record<string, unknown> | undefined
  const escrow =
    challenge.intent === 'escrow' ||
    (details?.escrow !== undefined && details.escrow !== null) ||
    escrowIds.has(challenge.id)
  return {
    dialect: 'mpp',
    challenge,
    scheme: challenge.intent === 'charge' ? 'exact' : challenge.intent,
    network: request.data.methodDetails.network,
    asset: request.data.currency,
    amount: BigInt(request.data.amount),
    payTo: request.data.recipient,
    challengeId: challenge.id,
    escrow,
  }
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
}

/** The result of {@link selectOffer}: the offer to pay, or the refusal. */
export type Selection =
  | { status: 'selected'; offer: PayableOffer }
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

/** Why an offer is not payable by us, or undefined when it is (ignoring escrow and dialect). */
function unpayableReason(offer: PaymentOffer, network: string, usdc: string): string | undefined {
  if (offer.scheme !== 'exact') return `scheme ${offer.scheme} is not exact`
  if (offer.network !== network) return `network ${offer.network} is not ${network}`
  if (!sameType(offer.asset, usdc)) return `asset ${offer.asset} is not the USDC of ${network}`
  if (offer.amount <= 0n) return 'amount is zero'
  if (!validAddress(offer.payTo)) return 'payTo is not a Sui address'
  if (offer.dialect === 'x402' && offer.challengeId === undefined) return 'no challengeId'
  return undefined
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
export function selectOffer(offers: readonly PaymentOffer[], options: SelectOptions): Selection {
  const usdc = usdcTypeOf(options.network)
  const reasons: string[] = []
  const payable: PaymentOffer[] = []
  for (const offer of offers) {
    const reason =
      usdc === undefined
        ? `no USDC known on ${options.network}`
        : unpayableReason(offer, options.network, usdc)
    if (reason === undefined) payable.push(offer)
    else
      reasons.push(
        `${offer.dialect === 'x402' && offer.version === 2 ? 'x402 v2' : offer.dialect}: ${reason}`,
      )
  }
  const instant = payable.filter((o) => !o.escrow) as PayableOffer[]
  if (instant.length === 0 && payable.length > 0) {
    const terms = payable
      .filter((o) => o.escrow)
      .map(escrowTermsOf)
      .find((t) => t !== undefined && t !== null && typeof t === 'object')
    return refuse(
      'ESCROW_REQUIRED',
      'The seller demands escrow for this call; it is never paid instantly (fund a job instead).',
      { reasons, escrow: terms },
    )
  }
  const usable = instant.filter((o) => options.canSubmit || o.dialect === 'x402')
  if (usable.length === 0 && instant.length > 0) {
    return refuse(
      'DIALECT_UNSUPPORTED',
      'The seller offers only the header dialect (MPP), where the buyer submits the transaction; this signer cannot submit.',
      { offered: instant.map((o) => o.dialect) },
    )
  }
  const prefer = options.prefer ?? 'x402'
  const rank = (o: PaymentOffer) =>
    (o.dialect === prefer ? 0 : 2) + (o.dialect === 'x402' && o.version === 1 ? 1 : 0)
  let chosen: PayableOffer | undefined
  for (const offer of usable) if (chosen === undefined || rank(offer) < rank(chosen)) chosen = offer
  if (chosen === undefined) {
    return refuse(
      'NO_PAYABLE_REQUIREMENT',
      offers.length === 0
        ? 'The 402 carries no payment offer this client can read.'
        : `No offer is payable in USDC on ${options.network} with scheme exact. ${reasons.length > 0 ? `Offers: ${reasons.join('; ')}.` : `Offered: ${[...new Set(offers.map((o) => o.dialect))].join(', ')}.`}`,
      { reasons },
    )
  }
  return { status: 'selected', offer: chosen }
}

/**
 * The raw escrow terms of an offer (`extra.escrow` of an x402 requirement, `methodDetails.escrow` of
 * an MPP challenge), unvalidated: parse them with `EscrowTermsSchema` before use.
 */
export function escrowTermsOf(offer: PaymentOffer): unknown {
  if (offer.dialect === 'x402') return offer.requirement.extra?.escrow
  return (offer.challenge.request.methodDetails as Record<string, unknown> | undefined)?.escrow
}

function refuse(
  code: 'ESCROW_REQUIRED' | 'DIALECT_UNSUPPORTED' | 'NO_PAYABLE_REQUIREMENT',
  message: string,
  details: Record<string, unknown>,
): Selection {
  return { status: 'refused', error: new PaymentError(code, message, { details }) }
}

function reasonOf(error: unknown): string {
  return error instanceof PaymentError ? error.code : 'unreadable'
}
