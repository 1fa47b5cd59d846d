/**
 * The message of anything thrown: an `Error`'s message, or the value as text.
 *
 * @module
 * @internal
 */

/** The message of a thrown value (`Error` or not). */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
