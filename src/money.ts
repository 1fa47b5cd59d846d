/**
 * USDC amounts. Inside the library an amount is a `bigint` of base units (USDC has 6 decimals, so
 * `20000n` is 0.02 USDC); at the edges it is a decimal string. No floating-point arithmetic anywhere.
 *
 * @module
 */
import { PaymentError } from './errors.js'

/** Decimals of USDC on Sui. */
export const usdcDecimals = 6

/** Base units in one USDC. */
export const baseUnitsPerUsdc = 1_000_000n

/**
 * The largest amount {@link parseAmount} accepts by default: 1 000 000 USDC. Anything larger is
 * almost certainly a unit mistake (base units written as a decimal price).
 */
export const defaultMaxAmount = 1_000_000n * baseUnitsPerUsdc

/** A price as a user may write it: `"0.02"`, `"$0.02"`, `"0.020000"`, or base units as a bigint. */
export type PriceInput = string | bigint

/** Options of {@link parseAmount}. */
export type ParseAmountOptions = {
  /** Upper bound in base units, inclusive. Default {@link defaultMaxAmount}. */
  max?: bigint | undefined
  /** Whether zero is acceptable. Default `false` (a free route is not a priced route). */
  allowZero?: boolean | undefined
}

const decimalPattern = /^(0|[1-9][0-9]*)(?:\.([0-9]+))?$/

/**
 * Parses a user-facing price into base units. Accepts decimal strings (optionally prefixed with `$`)
 * with at most 6 fractional digits, and bigints (already base units).
 *
 * Rejects, with code `invalid_amount`: negatives, more than 6 fractional digits, exponent notation,
 * `NaN`/`Infinity`, leading zeros, whitespace, numbers (pass a string: a float cannot hold a price),
 * zero unless `allowZero`, and amounts above `max`.
 *
 * @example
 * ```ts
 * parseAmount('1.005') // 1005000n
 * parseAmount('$0.02') // 20000n
 * ```
 */
export function parseAmount(input: PriceInput, options: ParseAmountOptions = {}): bigint {
  const max = options.max ?? defaultMaxAmount
  let units: bigint
  if (typeof input === 'bigint') {
    units = input
  } else if (typeof input === 'string') {
    const text = input.startsWith('$') ? input.slice(1) : input
    const match = decimalPattern.exec(text)
    if (!match) throw invalid(input, 'is not a plain decimal number')
    const whole = match[1] as string
    const fraction = match[2] ?? ''
    if (fraction.length > usdcDecimals) {
      throw invalid(input, `has more than ${usdcDecimals} fractional digits`)
    }
    units = BigInt(whole) * baseUnitsPerUsdc + BigInt(fraction.padEnd(usdcDecimals, '0') || '0')
  } else {
    throw invalid(String(input), 'must be a decimal string or a bigint of base units')
  }
  if (units < 0n) throw invalid(String(input), 'is negative')
  if (units === 0n && !options.allowZero) throw invalid(String(input), 'is zero')
  if (units > max) throw invalid(String(input), `is above the cap of ${formatAmount(max)} USDC`)
  return units
}

/**
 * Parses an amount of base units as it travels on the wire (`"20000"`): digits only, no sign, no
 * leading zeros.
 */
export function parseBaseUnits(input: string, options: ParseAmountOptions = {}): bigint {
  if (!/^(0|[1-9][0-9]{0,38})$/.test(input)) {
    throw invalid(input, 'is not a whole number of base units')
  }
  return parseAmount(BigInt(input), options)
}

/**
 * Formats base units as a decimal string with exactly 6 fractional digits (`20000n` → `"0.020000"`).
 */
export function formatAmount(units: bigint): string {
  const negative = units < 0n
  const abs = negative ? -units : units
  const whole = abs / baseUnitsPerUsdc
  const fraction = (abs % baseUnitsPerUsdc).toString().padStart(usdcDecimals, '0')
  return `${negative ? '-' : ''}${whole}.${fraction}`
}

function invalid(input: string, reason: string): PaymentError {
  const shown = input.length > 40 ? `${input.slice(0, 40)}…` : input
  return new PaymentError('invalid_amount', `Amount "${shown}" ${reason}.`, {
    details: { reason },
  })
}
