import { describe, expect, it } from 'vitest'
import { createMemoryStore } from '../stores/memory.js'
import { finishResponse, watchHangUp } from './finish.js'
import { createPaywall } from './paywall.js'
import type { CallOutcome, Decision, PaidDecision } from './types.js'

function decision(dialect: 'x402' | 'mpp') {
  const outcomes: CallOutcome[] = []
  const paid: PaidDecision = {
    status: 'paid',
    payment: {
      dialect,
      method: dialect,
      digest: 'D',
      payer: '0x1',
      amount: 1n,
      resource: 'r',
      resumed: false,
    },
    body: undefined,
    headersFor: (status) =>
      dialect === 'mpp' && (status < 200 || status > 299) ? {} : { 'x-paid': 'yes' },
    isFailure: (o) => !('status' in o) || o.status >= 500,
    committed: false,
    commit: () => false,
    start: () => {},
    handled: () => {},
    ready: async () => undefined,
    async complete(o) {
      outcomes.push(o)
      return this.isFailure(o) ? 'refund_due' : 'served'
    },
  }
  return { paid, outcomes }
}

function stream(chunks: string[], fail = false) {
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = chunks.shift()
      if (next !== undefined) controller.enqueue(new TextEncoder().encode(next))
      else if (fail) controller.error(new Error('upstream broke'))
      else controller.close()
    },
  })
}

describe('finishResponse', () => {
  it('sets the success header and records the call served only when the stream ends', async () => {
    const { paid, outcomes } = decision('x402')
    const response = finishResponse(new Response(stream(['data: 1\n\n', 'data: 2\n\n'])), paid)
    expect(response.headers.get('x-paid')).toBe('yes')
    const reader = response.body!.getReader()
    await reader.read()
    expect(outcomes).toEqual([])
    while (!(await reader.read()).done) {}
    expect(outcomes).toEqual([{ status: 200 }])
  })

  it('turns an error in mid-stream into a failed call', async () => {
    const { paid, outcomes } = decision('x402')
    const response = finishResponse(new Response(stream(['part'], true)), paid)
    await expect(response.text()).rejects.toThrow()
    expect(outcomes).toHaveLength(1)
    expect('error' in outcomes[0]!).toBe(true)
  })

  it('records a 5xx as failed at once, without success headers', async () => {
    const { paid, outcomes } = decision('x402')
    const response = finishResponse(new Response('bad gateway', { status: 502 }), paid)
    expect(response.headers.get('x-paid')).toBeNull()
    expect(outcomes).toEqual([{ status: 502 }])
  })

  it('serves a 4xx but sends the MPP receipt on 2xx only', async () => {
    const { paid, outcomes } = decision('mpp')
    const response = finishResponse(new Response(null, { status: 404 }), paid)
    expect(response.headers.get('x-paid')).toBeNull()
    expect(outcomes).toEqual([{ status: 404 }])
  })
})

describe('engine.handle without a payment', () => {
  const untouchable = {
    execute: () => Promise.reject(new Error('the ledger must not be called')),
    getTransaction: () => Promise.reject(new Error('the ledger must not be called')),
  }
  const engine = createPaywall({
    payTo: `0x${'ab'.repeat(32)}`,
    ledger: untouchable,
    store: createMemoryStore(),
    secrets: ['a-challenge-secret-of-at-least-32-bytes!'],
  })
  const route = { price: '0.02', maxBodyBytes: 100 }
  const post = (headers: Record<string, string> = {}) =>
    new Request('http://shop.example/v1/x', { method: 'POST', headers })

  it('decides an unpaid request at once, with one 402 object while the challenge lasts', async () => {
    const first = engine.handle(post(), route)
    expect(first).not.toBeInstanceOf(Promise)
    const decision = first as Decision
    expect(decision.status === 'respond' && decision.plain.status).toBe(402)
    expect(engine.handle(post(), route)).toBe(first)
    // Each read of `response` is a Response of its own with the same bytes.
    if (decision.status !== 'respond') throw new Error('not an answer')
    expect(decision.response).not.toBe(decision.response)
    expect(await decision.response.text()).toBe(decision.plain.body)
    expect(await decision.response.text()).toBe(decision.plain.body)
  })

  it('keeps its 402 per engine, until the expiry bucket moves on', () => {
    let clock = 1_700_000_000_000
    const make = (secret: string) =>
      createPaywall({
        payTo: `0x${'ab'.repeat(32)}`,
        ledger: untouchable,
        store: createMemoryStore(),
        secrets: [secret],
        now: () => clock,
      })
    const one = make('a-challenge-secret-of-at-least-32-bytes!')
    const two = make('another-challenge-secret-of-32-bytes!!')
    const body = (engine: ReturnType<typeof make>) => {
      const decision = engine.handle(post(), route) as Decision
      return decision.status === 'respond' ? decision.plain.body : ''
    }
    const first = body(one)
    // The same route object in two engines: each signs with its own secret.
    expect(body(two)).not.toBe(first)
    clock += 1_000
    expect(body(one)).toBe(first)
    // 60 s challenges expire on 15 s boundaries: a minute later it is a new challenge.
    clock += 60_000
    expect(body(one)).not.toBe(first)
  })

  it('answers 413 for a declared body over the limit, before any 402', () => {
    const decision = engine.handle(post({ 'content-length': '101' }), route) as Decision
    expect(decision.status === 'respond' && decision.plain.status).toBe(413)
    expect(decision.status === 'respond' && JSON.parse(decision.plain.body)).toEqual({
      type: 'about:blank',
      title: 'Payload Too Large',
      status: 413,
      detail: 'The request body is over 100 bytes.',
      code: 'request_body_too_large',
    })
  })

  it('decides requests that carry a payment, and routes that validate a body, asynchronously', async () => {
    const x402 = engine.handle(post({ 'x-payment': 'e30=' }), route)
    expect(x402).toBeInstanceOf(Promise)
    expect(engine.handle(post({ authorization: 'Payment e30=' }), route)).toBeInstanceOf(Promise)
    const validated = { ...route, body: () => ({ status: 'valid', body: {} }) as const }
    const challenged = engine.handle(
      new Request('http://shop.example/v1/x', { method: 'POST', body: '{}' }),
      validated,
    )
    expect(challenged).toBeInstanceOf(Promise)
    // The same 402 bytes either way.
    const plain = engine.handle(post(), route) as Decision
    const later = await challenged
    expect(later.status === 'respond' && later.plain.body).toBe(
      plain.status === 'respond' && plain.plain.body,
    )
    expect((await x402).status).toBe('respond')
  })
})

describe('watchHangUp', () => {
  it('records a hang-up before the answer as a failed call, once', () => {
    const { paid, outcomes } = decision('x402')
    const buyer = new AbortController()
    const stop = watchHangUp(buyer.signal, paid)
    expect(stop).toBeTypeOf('function')
    buyer.abort()
    buyer.abort()
    expect(outcomes).toEqual([{ hungUp: true }])
    expect(paid.isFailure({ hungUp: true })).toBe(true)
  })

  it('says the buyer is already gone, and records it', () => {
    const { paid, outcomes } = decision('mpp')
    expect(watchHangUp(AbortSignal.abort(), paid)).toBeUndefined()
    expect(outcomes).toEqual([{ hungUp: true }])
  })

  it('leaves a hang-up after the answer started to the response (served mid-stream)', async () => {
    const { paid, outcomes } = decision('x402')
    const buyer = new AbortController()
    watchHangUp(buyer.signal, paid)?.()
    const response = finishResponse(new Response(stream(['data: 1\n\n', 'data: 2\n\n'])), paid)
    buyer.abort()
    await response.body!.cancel()
    expect(outcomes).toEqual([{ status: 200 }])
  })
})
