/**
 * Retrying with backoff: the one loop behind the buyer's paying fetch, the reference gateway's
 * upstream calls and settlement's ledger look-ups. Pure policy: how many attempts, how long to wait
 * (exponential backoff, full jitter by default, a server's `Retry-After` taken when given), a time
 * budget, an abort signal. What is worth another attempt is decided by the caller, per attempt.
 *
 * @module
 */

/** How long to wait between attempts (see {@link backoffDelay}). */
export type BackoffOptions = {
  /** First backoff step in ms, doubling after each retry. Default 250. */
  baseDelayMs?: number | undefined
  /**
   * Longest wait in ms. Default 10 000. A computed wait is capped at it; a wait the server asked for
   * (`retryAfterMs` of a step) above it ends the retries instead.
   */
  maxDelayMs?: number | undefined
  /**
   * `'full'` (default): a random wait in `[0, step)`, so that many clients that failed together do
   * not retry together. `'none'`: the step itself (for waits on one's own lagging read).
   */
  jitter?: 'full' | 'none' | undefined
  /** Source of randomness in `[0, 1)` (tests). Default `Math.random`. */
  random?: (() => number) | undefined
}

/** When to give up (see {@link withRetries}). */
export type RetryPolicy = BackoffOptions & {
  /** Most attempts in total, the first included. Default 3; `1` turns retrying off. */
  attempts?: number | undefined
  /**
   * Total time in ms for all attempts and waits, counted from the call. A wait that would end at or
   * past it is not taken. Default: unbounded.
   */
  budgetMs?: number | undefined
  /** Ends the retries: a wait in progress is cut short and no further attempt is made. */
  signal?: AbortSignal | undefined
  /** Waits `ms` (tests inject one). Default: a timer that ends early when `signal` aborts. */
  sleep?: ((ms: number, signal?: AbortSignal) => Promise<void>) | undefined
  /** Clock in ms, for the budget (tests). Default `Date.now`. */
  now?: (() => number) | undefined
}

/** What one attempt came to: a final value, or one worth another attempt. */
export type RetryStep<T> =
  | { retry: false; value: T }
  | {
      retry: true
      value: T
      /** The wait the server asked for (`Retry-After`), in ms; else the backoff applies. */
      retryAfterMs?: number | undefined
    }

/** Why {@link withRetries} stopped. */
export type RetryStop =
  /** An attempt's value was final. */
  | 'done'
  /** The last attempt allowed was worth another one. */
  | 'attempts'
  /** The next wait would have ended at or past the time budget. */
  | 'budget'
  /** The server asked for a longer wait than `maxDelayMs`. */
  | 'wait_too_long'
  /** `signal` aborted. */
  | 'aborted'

/** The value of the last attempt made, how many were made, and why they stopped. */
export type RetryOutcome<T> = { value: T; attempts: number; stopped: RetryStop }

/** Options of {@link withRetries}: the policy, and a hook before each wait. */
export type WithRetriesOptions<T> = RetryPolicy & {
  /**
   * Called before each wait with the attempt (1-based) that is retried, the wait and its value, e.g.
   * to log it or to release a response body that will not be read.
   */
  onRetry?:
    | ((retry: { attempt: number; waitMs: number; value: T }) => void | Promise<void>)
    | undefined
}

/**
 * The backoff before retry number `retry` (0-based): `min(maxDelayMs, baseDelayMs * 2^retry)`,
 * fully jittered unless `jitter: 'none'`.
 *
 * @example
 * ```ts
 * backoffDelay(2, { baseDelayMs: 100, jitter: 'none' }) // 400
 * ```
 */
export function backoffDelay(retry: number, options: BackoffOptions = {}): number {
  const step = Math.min(options.maxDelayMs ?? 10_000, (options.baseDelayMs ?? 250) * 2 ** retry)
  return options.jitter === 'none' ? step : Math.floor((options.random ?? Math.random)() * step)
}

/**
 * Reads `Retry-After`: delay-seconds or an HTTP date, as ms from `now`. Undefined when absent or
 * unreadable; never negative.
 *
 * @example
 * ```ts
 * retryAfterMs('2') // 2000
 * ```
 */
export function retryAfterMs(
  value: string | null | undefined,
  now: number = Date.now(),
): number | undefined {
  if (value === null || value === undefined) return undefined
  const text = value.trim()
  if (/^[0-9]{1,9}$/.test(text)) return Number(text) * 1000
  // An HTTP date names its day and month (`Sun, 06 Nov 1994 08:49:37 GMT`).
  if (text.length > 64 || !/^[A-Za-z]{3}/.test(text)) return undefined
  const at = Date.parse(text)
  return Number.isNaN(at) ? undefined : Math.max(0, at - now)
}

/**
 * Runs `attempt` until its step is final or the policy says stop, waiting between attempts. Never
 * throws on its own: an attempt that throws ends the retries with that error (an attempt that wants
 * a thrown failure retried returns it as a step). The outcome carries the last attempt's value.
 *
 * @param attempt - one attempt; receives its number (1-based).
 * @param options - the {@link RetryPolicy}, and `onRetry`.
 *
 * @example
 * ```ts
 * const { value } = await withRetries(async () => {
 *   const response = await fetch(url)
 *   return response.status === 503
 *     ? { retry: true, value: response, retryAfterMs: retryAfterMs(response.headers.get('retry-after')) }
 *     : { retry: false, value: response }
 * }, { attempts: 3, signal })
 * ```
 */
export async function withRetries<T>(
  attempt: (attempt: number) => Promise<RetryStep<T>>,
  options: WithRetriesOptions<T> = {},
): Promise<RetryOutcome<T>> {
  const attempts = Math.max(1, options.attempts ?? 3)
  const now = options.now ?? Date.now
  const sleep = options.sleep ?? abortableSleep
  const { signal, budgetMs } = options
  const started = now()
  // A function, not a property read: the signal may abort during any await below.
  const aborted = () => signal?.aborted === true
  const left = () =>
    budgetMs === undefined ? Number.POSITIVE_INFINITY : budgetMs - (now() - started)
  for (let n = 1; ; n++) {
    const step = await attempt(n)
    const { value } = step
    if (!step.retry) return { value, attempts: n, stopped: 'done' }
    if (n >= attempts) return { value, attempts: n, stopped: 'attempts' }
    const hinted = step.retryAfterMs
    if (hinted !== undefined && hinted > (options.maxDelayMs ?? 10_000)) {
      return { value, attempts: n, stopped: 'wait_too_long' }
    }
    const waitMs = hinted ?? backoffDelay(n - 1, options)
    if (waitMs >= left()) return { value, attempts: n, stopped: 'budget' }
    await options.onRetry?.({ attempt: n, waitMs, value })
    if (aborted()) return { value, attempts: n, stopped: 'aborted' }
    await sleep(waitMs, signal)
    if (aborted()) return { value, attempts: n, stopped: 'aborted' }
    if (left() <= 0) return { value, attempts: n, stopped: 'budget' }
  }
}

/** A timer that resolves after `ms`, or at once when `signal` aborts. */
function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted === true) return resolve()
    const done = () => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    signal?.addEventListener('abort', done, { once: true })
  })
}
