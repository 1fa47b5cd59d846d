/**
 * What a seller offers in its unpaid 402: the Sui entries of the x402 envelope and the MPP charges,
 * with their terms, and the comparisons the checks judge them by (same address, same coin, a price).
 *
 * @module
 */
import { normalizeStructTag, normalizeSuiAddress } from '@mysten/sui/utils'
import { Challenge, Mpp, X402 } from 'tollgate'
import { type CheckContext, skip } from './check.js'
import { chargeOf, type LenientRequirement, type X402Reading } from './observe.js'
import type { ProbeResponse } from './probe.js'

/** The Sui entries of an x402 envelope (entries for other chains are not judged). */
export function suiEntries(reading: X402Reading): LenientRequirement[] {
  return reading.status === 'ok' ? reading.accepts.filter((a) => a.network.startsWith('sui:')) : []
}

/** What an x402 envelope offers, in words: `network (asset)` per entry; empty when unreadable. */
export function offeredText(reading: X402Reading): string {
  if (reading.status !== 'ok') return ''
  return reading.accepts.map((a) => `${a.network} (asset ${a.asset})`).join(', ')
}

/**
 * What the MPP challenges of a 402 offer besides Sui, in words: `MPP method="tempo" (charge)` per
 * challenge; empty when there are none or `WWW-Authenticate` does not parse.
 */
export function offeredMppText(response: ProbeResponse): string {
  const header = response.headers['www-authenticate']
  if (header === undefined) return ''
  try {
    return Mpp.parseChallenges(header)
      .filter((c) => c.method !== 'sui')
      .map((c) => `MPP method="${c.method}" (${c.intent})`)
      .join(', ')
  } catch {
    return ''
  }
}

/** What an x402 envelope offers, as report details: its networks and assets. */
export function offeredDetails(reading: X402Reading): Record<string, unknown> {
  return reading.status === 'ok'
    ? {
        networks: reading.accepts.map((a) => a.network),
        assets: reading.accepts.map((a) => a.asset),
      }
    : {}
}

/** Whether two Sui addresses are the same (false when either is not an address). */
export function sameAddress(a: string, b: string): boolean {
  try {
    return normalizeSuiAddress(a) === normalizeSuiAddress(b)
  } catch {
    return false
  }
}

/** Whether two coin types are the same (false when either is not a coin type). */
export function sameCoin(a: string, b: string): boolean {
  try {
    return normalizeStructTag(a) === normalizeStructTag(b)
  } catch {
    return false
  }
}

/** Whether the unpaid probe produced a usable challenge (else dependent checks skip). */
export function challenged(
  context: CheckContext,
): context is CheckContext & { first: NonNullable<CheckContext['first']> } {
  const first = context.first
  return (
    first?.observation.response?.status === 402 &&
    (suiEntries(first.x402).length > 0 || first.mpp.status === 'ok')
  )
}

/** The verdict of a check that needs the challenge gate (b) did not get. */
export const noChallenge = () => skip('no well-formed 402 to judge (see gate b)')

/** A price readable from an x402 amount string, or undefined. */
export function priceOf(amount: string): bigint | undefined {
  return X402.baseUnitsSchema.safeParse(amount).success ? BigInt(amount) : undefined
}

/** The terms of one offered challenge. */
export type OfferedTerms = {
  dialect: 'x402' | 'mpp'
  network: string
  payTo: string
  asset: string
  amount: string
}

/** Every offered Sui challenge: x402 entries and MPP charges, with their terms. */
export function offers(context: CheckContext): OfferedTerms[] {
  if (context.first === undefined) return []
  const out: OfferedTerms[] = suiEntries(context.first.x402).map((e) => ({
    dialect: 'x402' as const,
    network: e.network,
    payTo: e.payTo,
    asset: e.asset,
    amount: e.maxAmountRequired,
  }))
  if (context.first.mpp.status === 'ok') {
    for (const c of context.first.mpp.challenges) {
      const r = chargeOf(c)
      out.push({
        dialect: 'mpp' as const,
        network: r.methodDetails.network,
        payTo: r.recipient,
        asset: r.currency,
        amount: r.amount,
      })
    }
  }
  return out
}

/** The charge request of an MPP challenge, or undefined when it is not a `sui` charge. */
export function chargeOfSafe(challenge: Mpp.Challenge): ReturnType<typeof chargeOf> | undefined {
  try {
    return chargeOf(challenge)
  } catch {
    return undefined
  }
}

/** The USDC coin type of a network, if known. */
export function usdcOf(network: string): string | undefined {
  return Challenge.usdcCoinTypes[network]
}
