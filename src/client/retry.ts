/**
 * Retrying transient answers (429, 500, 502, 503, 504): exponential backoff with full jitter,
 * `Retry-After` honoured (seconds or an HTTP date), everything bounded. The loop and the backoff are
 * the core's ({@link withRetries}, {@link backoffDelay}); this module holds the paying fetch's policy.
 *
 * @module
 */
import { backoffDelay, retryAfterMs } from '../backoff.js'

export { retryAfterMs }

/** Retry policy of the paying fetch. */
export type RetryOptions = {
  /** Extra attempts after the first; default 2. `0` turns retrying off. */
  retries?: number | undefined
  /** First backoff step in ms; default 250 (doubling each attempt, full jitter). */
  baseDelayMs?: number | undefined
  /** Longest wait in ms; default 10 000. A `Retry-After` above it is not waited for. */
  maxDelayMs?: number | undefined
}

/** Statuses worth retrying: the server asked to slow down, or was briefly unable to answer. */
export const transientStatuses: ReadonlySet<number> = new Set([429, 500, 502, 503, 504])

/**
 * The wait before retry number `attempt` (0-based): `Retry-After` when the server gave one, else a
 * random value in `[0, min(maxDelayMs, baseDelayMs * 2^attempt))`. Undefined means do not retry
 * (the server asked for a longer wait than `maxDelayMs`).
 */
export function retryDelay(
  attempt: number,
  response: Response,
  options: RetryOptions & { random?: () => number; now?: number } = {},
): number | undefined {
  const asked = retryAfterMs(response.headers.get('retry-after'), options.now)
  if (asked !== undefined) return asked <= (options.maxDelayMs ?? 10_000) ? asked : undefined
  return backoffDelay(attempt, options)
}
