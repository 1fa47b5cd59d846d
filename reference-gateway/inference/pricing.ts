/**
 * Token prices of the private inference API (docs/inference.md, "Prices"): each model has a price per
 * million input (prompt) tokens and per million output (completion) tokens, in USDC base units. A
 * call costs `ceil((promptTokens × prompt + completionTokens × completion) / 1 000 000)` base units:
 * rounded up once per call, never per token. Pure functions, no I/O: the keyed route, the
 * reservation and any metered session charge with the same arithmetic.
 *
 * @module
 */

/** A model's token prices: base units (USDC, 6 decimals) per million tokens. */
export type TokenPricing = {
  /** Base units per million input (prompt) tokens. */
  promptPerMillion: bigint
  /** Base units per million output (completion) tokens. */
  completionPerMillion: bigint
}

/** Token counts of a call. */
export type TokenCounts = { promptTokens: number; completionTokens: number }

/** Token prices, or a model that has them (a served model's `tokenPricing`). */
export type Priced = TokenPricing | { tokenPricing: TokenPricing }

function pricingOf(priced: Priced): TokenPricing {
  return 'tokenPricing' in priced ? priced.tokenPricing : priced
}

const million = 1_000_000n

function tokens(count: number, field: string): bigint {
  if (!Number.isSafeInteger(count) || count < 0) {
    throw new RangeError(`${field} must be a whole number of tokens, 0 or more`)
  }
  return BigInt(count)
}

/**
 * What `counts` tokens cost at `priced`'s prices (token prices, or a served model), in base units,
 * rounded up once.
 *
 * @throws {RangeError} when a count is not a safe integer ≥ 0.
 * @example
 * ```ts
 * // 0.60 USDC per million in, 2.40 per million out: 1 000 in and 500 out cost 0.0018 USDC
 * tokenCost({ promptPerMillion: 600_000n, completionPerMillion: 2_400_000n },
 *   { promptTokens: 1_000, completionTokens: 500 }) // 1800n
 * ```
 */
export function tokenCost(priced: Priced, counts: TokenCounts): bigint {
  const pricing = pricingOf(priced)
  const scaled =
    tokens(counts.promptTokens, 'promptTokens') * pricing.promptPerMillion +
    tokens(counts.completionTokens, 'completionTokens') * pricing.completionPerMillion
  return (scaled + million - 1n) / million
}

/**
 * The price of one output token in base units, rounded up (at least 1 when the price is not 0): what
 * a meter that charges token by token as an answer streams takes per token. It never charges less
 * than {@link tokenCost}; a meter that wants the exact per-call amount charges the differences of
 * `tokenCost` over the running count instead (they add up to the call's cost exactly).
 *
 * @example
 * ```ts
 * outputTokenPrice({ promptPerMillion: 600_000n, completionPerMillion: 2_400_000n }) // 3n
 * outputTokenPrice({ promptPerMillion: 0n, completionPerMillion: 15_000_000n }) // 15n
 * outputTokenPrice(api.models[0]) // a served model's
 * ```
 */
export function outputTokenPrice(priced: Priced): bigint {
  return (pricingOf(priced).completionPerMillion + million - 1n) / million
}

/**
 * A price per token as a decimal string of USDC (the per-token convention of `pricing.prompt` and
 * `pricing.completion` in `GET /v1/models`): the per-million price moved 6 places, up to 12
 * decimals, trailing zeros dropped (`600000n` → `"0.0000006"`).
 *
 * @example
 * ```ts
 * perTokenText(2_400_000n) // "0.0000024"
 * ```
 */
export function perTokenText(perMillion: bigint): string {
  const whole = perMillion / 1_000_000_000_000n
  const fraction = (perMillion % 1_000_000_000_000n).toString().padStart(12, '0').replace(/0+$/, '')
  return fraction === '' ? whole.toString() : `${whole}.${fraction}`
}
