import { describe, expect, it } from 'vitest'
import { backoffDelay, type RetryStep, retryAfterMs, withRetries } from './backoff.js'

/** A sleep that records its waits and advances a fake clock by them. */
function fakeTime() {
  let at = 1_000
  const waits: number[] = []
  return {
    waits,
    now: () => at,
    sleep: async (ms: number) => {
      waits.push(ms)
      at += ms
    },
    advance: (ms: number) => {
      at += ms
    },
  }
}

/** Attempts that answer the given steps in order. */
function steps<T>(...answers: RetryStep<T>[]) {
  const seen: number[] = []
  return {
    seen,
    attempt: async (n: number) => {
      seen.push(n)
      const next = answers.shift()
      if (next === undefined) throw new Error('more attempts than expected')
      return next
    },
  }
}

describe('backoffDelay', () => {
  it('doubles a fully jittered step, capped', () => {
    expect(backoffDelay(0, { random: () => 0.999 })).toBe(249)
    expect(backoffDelay(3, { random: () => 0.5 })).toBe(1000)
    expect(backoffDelay(20, { random: () => 0.999, maxDelayMs: 2000 })).toBe(1998)
    expect(backoffDelay(2, { random: () => 0 })).toBe(0)
  })

  it('takes the step itself without jitter', () => {
    expect(backoffDelay(0, { baseDelayMs: 100, jitter: 'none' })).toBe(100)
    expect(backoffDelay(3, { baseDelayMs: 100, jitter: 'none' })).toBe(800)
    expect(backoffDelay(3, { baseDelayMs: 100, jitter: 'none', maxDelayMs: 500 })).toBe(500)
  })
})

describe('retryAfterMs', () => {
  it('reads seconds and HTTP dates, and nothing else', () => {
    const now = Date.parse('2026-01-01T00:00:00Z')
    expect(retryAfterMs(' 3 ', now)).toBe(3000)
    expect(retryAfterMs('Thu, 01 Jan 2026 00:00:05 GMT', now)).toBe(5000)
    expect(retryAfterMs('Wed, 31 Dec 2025 00:00:00 GMT', now)).toBe(0)
    expect(retryAfterMs('2026-01-01', now)).toBeUndefined()
    expect(retryAfterMs(undefined, now)).toBeUndefined()
  })
})

describe('withRetries', () => {
  it('stops at the first final step', async () => {
    const time = fakeTime()
    const run = steps<string>({ retry: true, value: 'a' }, { retry: false, value: 'b' })
    const outcome = await withRetries(run.attempt, { ...time, random: () => 0.5 })
    expect(outcome).toEqual({ value: 'b', attempts: 2, stopped: 'done' })
    expect(run.seen).toEqual([1, 2])
    expect(time.waits).toEqual([125])
  })

  it('waits a jittered, doubling backoff and gives the last value when attempts run out', async () => {
    const time = fakeTime()
    const run = steps<number>(
      { retry: true, value: 1 },
      { retry: true, value: 2 },
      { retry: true, value: 3 },
      { retry: true, value: 4 },
    )
    const outcome = await withRetries(run.attempt, {
      ...time,
      attempts: 4,
      baseDelayMs: 100,
      random: () => 0.75,
    })
    expect(outcome).toEqual({ value: 4, attempts: 4, stopped: 'attempts' })
    expect(time.waits).toEqual([75, 150, 300])
  })

  it('waits what the server asked for, and stops when it asks for more than maxDelayMs', async () => {
    const time = fakeTime()
    const run = steps<string>(
      { retry: true, value: 'a', retryAfterMs: 2_000 },
      { retry: true, value: 'b', retryAfterMs: 60_000 },
    )
    const outcome = await withRetries(run.attempt, { ...time, maxDelayMs: 10_000 })
    expect(outcome).toEqual({ value: 'b', attempts: 2, stopped: 'wait_too_long' })
    expect(time.waits).toEqual([2_000])
  })

  it('does not start a wait that would end past the budget', async () => {
    const time = fakeTime()
    const run = steps<string>(
      { retry: true, value: 'a' },
      { retry: true, value: 'b', retryAfterMs: 900 },
    )
    const attempt = async (n: number) => {
      time.advance(400) // each attempt takes 400 ms
      return run.attempt(n)
    }
    const outcome = await withRetries(attempt, {
      ...time,
      budgetMs: 2_000,
      jitter: 'none',
      baseDelayMs: 500,
    })
    // 400 (attempt) + 500 (wait) + 400 (attempt) = 1 300 spent; 900 more would reach 2 200.
    expect(outcome).toEqual({ value: 'b', attempts: 2, stopped: 'budget' })
    expect(time.waits).toEqual([500])
  })

  it('calls onRetry before each wait, with the value retried', async () => {
    const time = fakeTime()
    const seen: string[] = []
    const run = steps<string>({ retry: true, value: 'a' }, { retry: false, value: 'b' })
    await withRetries(run.attempt, {
      ...time,
      random: () => 0,
      onRetry: ({ attempt, waitMs, value }) => {
        seen.push(`${attempt}:${waitMs}:${value}:${time.waits.length}`)
      },
    })
    expect(seen).toEqual(['1:0:a:0'])
  })

  it('ends a real wait early when the signal aborts, and makes no further attempt', async () => {
    const controller = new AbortController()
    const run = steps<string>({ retry: true, value: 'a' }, { retry: false, value: 'never' })
    const started = Date.now()
    setTimeout(() => controller.abort(), 20)
    const outcome = await withRetries(run.attempt, {
      signal: controller.signal,
      baseDelayMs: 60_000,
      jitter: 'none',
      maxDelayMs: 60_000,
    })
    expect(outcome).toEqual({ value: 'a', attempts: 1, stopped: 'aborted' })
    expect(run.seen).toEqual([1])
    expect(Date.now() - started).toBeLessThan(5_000)
  })

  it('passes an attempt that throws through, without retrying it', async () => {
    const time = fakeTime()
    let calls = 0
    const attempt = async (): Promise<RetryStep<string>> => {
      calls++
      throw new Error('boom')
    }
    await expect(withRetries(attempt, time)).rejects.toThrow('boom')
    expect(calls).toBe(1)
  })

  it('makes one attempt when attempts is 1 (or less)', async () => {
    const run = steps<string>({ retry: true, value: 'a' })
    expect(await withRetries(run.attempt, { attempts: 0 })).toEqual({
      value: 'a',
      attempts: 1,
      stopped: 'attempts',
    })
  })
})
