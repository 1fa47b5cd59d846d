/**
 * Requests per minute per key (120 by default, docs/inference.md "Limits"), counted by `rate-limiter-flexible`: in Redis when the
 * gateway has one (every process shares the count; `RateLimiterRedis` over ioredis), in memory
 * otherwise (`RateLimiterMemory`). When Redis cannot answer, a per-process memory limiter stands in
 * (the library's insurance limiter) rather than letting every request through or failing them all.
 *
 * @module
 */
import type { Redis } from 'ioredis'
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible'

/** Result of {@link RateLimiter.take}. */
export type RateDecision = {
  status: 'allowed' | 'limited'
  /** Requests allowed per window. */
  limit: number
  /** Requests left in the current window. */
  remaining: number
  /** Milliseconds until the window resets. */
  resetMs: number
}

/** A per-key request limiter. */
export type RateLimiter = {
  /** Counts one request of `key`. */
  take(key: string): Promise<RateDecision>
}

/** Options of {@link createRateLimiter}. */
export type RateLimiterOptions = {
  /** Requests allowed per window. Default 120. */
  points?: number | undefined
  /** Window, seconds. Default 60. */
  durationSeconds?: number | undefined
  /** Shares the count through this Redis (every process using the same `keyPrefix` shares it). */
  redis?: Redis | undefined
  /** Prefix of the Redis keys. Default `tollgate_rl`. */
  keyPrefix?: string | undefined
}

/**
 * Creates the limiter.
 *
 * @example
 * ```ts
 * const limiter = createRateLimiter({ points: 120, redis })
 * const decision = await limiter.take(keyId)
 * if (decision.status === 'limited') return tooMany(decision)
 * ```
 */
export function createRateLimiter(options: RateLimiterOptions = {}): RateLimiter {
  const points = options.points ?? 120
  const duration = options.durationSeconds ?? 60
  const keyPrefix = options.keyPrefix ?? 'tollgate_rl'
  const memory = new RateLimiterMemory({ points, duration, keyPrefix })
  const limiter =
    options.redis === undefined
      ? memory
      : new RateLimiterRedis({
          storeClient: options.redis,
          points,
          duration,
          keyPrefix,
          insuranceLimiter: memory,
        })
  return {
    async take(key) {
      try {
        const res = await limiter.consume(key, 1)
        return {
          status: 'allowed',
          limit: points,
          remaining: res.remainingPoints,
          resetMs: res.msBeforeNext,
        }
      } catch (rejection) {
        if (rejection instanceof RateLimiterRes) {
          return { status: 'limited', limit: points, remaining: 0, resetMs: rejection.msBeforeNext }
        }
        throw rejection
      }
    },
  }
}

/** The `x-ratelimit-*` headers (docs/inference.md, "Limits") of a decision, and `Retry-After` when limited. */
export function rateLimitHeaders(decision: RateDecision): Record<string, string> {
  const seconds = Math.max(1, Math.ceil(decision.resetMs / 1000))
  return {
    'x-ratelimit-limit-requests': String(decision.limit),
    'x-ratelimit-remaining-requests': String(Math.max(0, decision.remaining)),
    'x-ratelimit-reset-requests': `${seconds}s`,
    ...(decision.status === 'limited' ? { 'retry-after': String(seconds) } : {}),
  }
}
