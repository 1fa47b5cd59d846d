import { describe, expect, it } from 'vitest'
import { retryAfterMs, retryDelay } from './retry.js'

describe('Retry-After', () => {
  it('reads seconds and HTTP dates, and ignores anything else', () => {
    const now = Date.parse('2026-01-01T00:00:00Z')
    expect(retryAfterMs('3', now)).toBe(3000)
    expect(retryAfterMs('Thu, 01 Jan 2026 00:00:05 GMT', now)).toBe(5000)
    expect(retryAfterMs('Wed, 31 Dec 2025 00:00:00 GMT', now)).toBe(0)
    expect(retryAfterMs('soon', now)).toBeUndefined()
    expect(retryAfterMs('-1', now)).toBeUndefined()
    expect(retryAfterMs(null, now)).toBeUndefined()
  })
})

describe('retry delay', () => {
  const bare = new Response(null, { status: 503 })
  it('backs off exponentially with full jitter, capped', () => {
    expect(retryDelay(0, bare, { random: () => 0.999 })).toBe(249)
    expect(retryDelay(3, bare, { random: () => 0.5 })).toBe(1000)
    expect(retryDelay(20, bare, { random: () => 0.999, maxDelayMs: 2000 })).toBe(1998)
    expect(retryDelay(2, bare, { random: () => 0 })).toBe(0)
  })

  it('waits what Retry-After asks, and not at all when it asks more than the cap', () => {
    const asks = (s: string) => new Response(null, { status: 429, headers: { 'retry-after': s } })
    expect(retryDelay(0, asks('2'), { random: () => 0.9 })).toBe(2000)
    expect(retryDelay(0, asks('60'), { maxDelayMs: 10_000 })).toBeUndefined()
  })
})
