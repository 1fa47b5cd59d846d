/**
 * The library's one assertion: a state that cannot happen unless the library itself (or a
 * dependency breaking its own contract) is wrong. Everything a caller, a buyer or a setting can
 * cause is a `PaymentError` with a stable code instead; this plain `Error` is deliberately outside
 * that family, because no caller should ever branch on it.
 *
 * @module
 */

/**
 * Throws `Error('internal: <message>')` when `condition` is false.
 *
 * @example
 * ```ts
 * invariant(tx !== undefined, 'transaction result without a transaction')
 * ```
 */
export function invariant(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`internal: ${message}`)
}
