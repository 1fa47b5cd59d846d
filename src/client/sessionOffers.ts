/**
 * The session offers the buyer of MPP sessions reads (docs/protocol.md §7): the session offer of a
 * seller's 402 and the problem document of a refusal (both untrusted: schema-checked), the offers
 * kept by URL until shortly before their challenge expires, and the checks an offer passes before
 * anything is signed (a pinned channel package and registry, `maxPrice`, the caller's own check).
 *
 * @module
 * @internal
 */
import { normalizeSuiAddress } from '@mysten/sui/utils'
import { z } from 'zod'
import { PaymentError } from '../errors.js'
import { formatAmount } from '../money.js'
import { type Challenge, mppHeaders, parseChallenges } from '../mpp.js'
import { sessionRequestSchema } from '../session/wire.js'
import type { SessionCallOptions, SessionFetchOptions } from './sessions.js'

const problemSchema = z.looseObject({
  code: z.string().max(64).optional(),
  requiredCumulative: z
    .string()
    .regex(/^[0-9]{1,20}$/)
    .optional(),
  acceptedCumulative: z
    .string()
    .regex(/^[0-9]{1,20}$/)
    .optional(),
})

/** The problem document of a 402 (untrusted: schema-checked), or `undefined`. */
export async function problemOf(
  response: Response,
): Promise<z.infer<typeof problemSchema> | undefined> {
  if (response.status !== 402) return undefined
  const problem = problemSchema.safeParse(
    await response
      .clone()
      .json()
      .catch(() => ({})),
  )
  return problem.success ? problem.data : undefined
}

/** Whether a refusal says calls are still running on the channel (`settlement_pending`). */
export async function isPending(response: Response): Promise<boolean> {
  return (await problemOf(response))?.code === 'settlement_pending'
}

/** A seller's session offer: its challenge, and its request (schema-checked). */
export type SessionOffer = { challenge: Challenge; request: z.infer<typeof sessionRequestSchema> }

/** The session offer of a 402, if any (untrusted: schema-checked). */
export function sessionOffer(response: Response): SessionOffer | undefined {
  const header = response.headers.get(mppHeaders.wwwAuthenticate)
  if (header === null) return undefined
  try {
    for (const challenge of parseChallenges(header)) {
      if (challenge.method !== 'sui' || challenge.intent !== 'session') continue
      const request = sessionRequestSchema.safeParse(challenge.request)
      if (request.success) return { challenge, request: request.data }
    }
  } catch {
    return undefined
  }
  return undefined
}

/**
 * Creates a buyer's cache of session offers by URL (at most 1,000, the oldest dropped first),
 * each reused until shortly before its challenge expires by the clock `now` (ms).
 */
export function createOfferCache(now: () => number) {
  /** Session offers by URL, reused until shortly before their challenge expires. */
  const offers = new Map<string, SessionOffer>()
  function cachedOffer(url: string): SessionOffer | undefined {
    const offer = offers.get(url)
    const expires = offer?.challenge.expires
    if (offer === undefined || expires === undefined) return undefined
    if (Date.parse(expires) - now() > 5_000) return offer
    offers.delete(url)
    return undefined
  }
  function remember(url: string, offer: SessionOffer): void {
    if (offers.size >= 1_000) offers.delete(offers.keys().next().value as string)
    offers.set(url, offer)
  }
  return { cachedOffer, remember }
}

/**
 * Creates the checks of a buyer's session offers against its `pinned` channel packages and its
 * `maxPrice`.
 */
export function createOfferChecks(options: Pick<SessionFetchOptions, 'pinned' | 'maxPrice'>) {
  /** Whether the offer's channel package and registry are pinned for its network. */
  function isPinned(offer: SessionOffer): boolean {
    const { methodDetails } = offer.request
    return options.pinned.some(
      (p) =>
        p.network === methodDetails.network &&
        normalizeSuiAddress(p.package) === normalizeSuiAddress(methodDetails.package) &&
        normalizeSuiAddress(p.registry) === normalizeSuiAddress(methodDetails.registry),
    )
  }

  function checkOffer(offer: SessionOffer, call: SessionCallOptions): void {
    const { amount } = offer.request
    if (!isPinned(offer)) {
      throw new PaymentError(
        'terms_mismatch',
        'The session offer names a channel package or registry this buyer has not pinned.',
      )
    }
    const price = BigInt(amount)
    if (options.maxPrice !== undefined && price > options.maxPrice) {
      throw new PaymentError(
        'PRICE_ABOVE_MAX',
        `${formatAmount(price)} USDC per call is above the cap of ${formatAmount(options.maxPrice)} USDC.`,
      )
    }
    call.check?.({ amount: price, payTo: normalizeSuiAddress(offer.request.recipient) })
  }

  return { isPinned, checkOffer }
}
