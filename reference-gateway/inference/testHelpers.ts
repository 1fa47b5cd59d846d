/**
 * Test-only: what keyed calls cost, read from their answers as a buyer reads them.
 */
import { type TokenPricing, tokenCost } from './pricing.js'

/** The usage an answer reports (buffered, or a stream's final chunk), as the API sends it. */
export type WireUsage = { prompt_tokens: number; completion_tokens: number }

/** What a call whose answer reports `usage` costs at `pricing`. Throws when it reports none. */
export function costOfUsage(pricing: TokenPricing, usage: WireUsage | null | undefined): bigint {
  if (usage == null) throw new Error('the answer reports no usage')
  return tokenCost(pricing, {
    promptTokens: usage.prompt_tokens,
    completionTokens: usage.completion_tokens,
  })
}

/** What the buffered answers cost together, each at its usage (reads their bodies). */
export async function spentBy(
  pricing: TokenPricing,
  answers: readonly Response[],
): Promise<bigint> {
  let spent = 0n
  for (const answer of answers) {
    const { usage } = (await answer.json()) as { usage?: WireUsage }
    spent += costOfUsage(pricing, usage)
  }
  return spent
}
