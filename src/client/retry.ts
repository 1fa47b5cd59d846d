/**
 * Retrying transient answers (429, 500, 502, 503, 504): exponential backoff with full jitter,
 * `Retry-After` honoured (seconds or an HTTP date), everything bounded.
 *
 * @module
 */

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
 * Reads `Retry-After`: delay-seconds or an HTTP date, as ms from `now`. Undefined when absent or
 * unreadable; never negative.
 *
 * @example
 * ```ts
 * retryAfterMs('2') // 2000
 * ```
 */
export function retryAfterMs(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null) return undefined
  const text = value.trim()
  if (/^[0-9]{1,9}$/.test(text)) return Number(text) * 1000
  // An HTTP date names its day and month (`Sun, 06 Nov 1994 08:49:37 GMT`).
  if (text.length > 64 || !/^[A-Za-z]{3}/.test(text)) return undefined
  const at = Date.parse(text)
  return Number.isNaN(at) ? undefined : Math.max(0, at - now)
}

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
  const base = options.baseDelayMs ?? 250
  const max = options.maxDelayMs ?? 10_000
  const asked = retryAfterMs(response.headers.get('retry-after'), options.now)
  if (asked !== undefined) return asked <= max ? asked : undefined
  const ceiling = Math.min(max, base * 2 ** attempt)
  return Math.floor((options.random ?? Math.random)() * ceiling)
}
