import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { describe, expect, it } from 'vitest'
import { hasCode } from '../errors.js'
import type { Ledger } from '../ledger/index.js'
import { createPayingFetch, isRefusal, type PayingFetchOptions, paymentOf } from './fetch.js'

/** A ledger that fails the test if anything touches it: these cases must never pay. */
const untouchable = new Proxy({} as Ledger, {
  get: (_target, name) => () => {
    throw new Error(`the ledger was used (${String(name)})`)
  },
})

function withServer(answers: (Response | Error)[], options: Partial<PayingFetchOptions> = {}) {
  const seen: { method: string; contentType: string | null; body: string }[] = []
  const waits: number[] = []
  const pay = createPayingFetch({
    signer: new Ed25519Keypair(),
    ledger: untouchable,
    limits: { file: join(mkdtempSync(join(tmpdir(), 'tollgate-fetch-')), 'spending.json') },
    sleep: async (ms) => void waits.push(ms),
    random: () => 0.5,
    fetch: async (request) => {
      seen.push({
        method: request.method,
        contentType: request.headers.get('content-type'),
        body: await request.text(),
      })
      const next = answers.shift() ?? new Response('ok')
      if (next instanceof Error) throw next
      return next
    },
    ...options,
  })
  return { pay, seen, waits }
}

describe('paying fetch without a payment', () => {
  it('passes a non-402 answer through untouched, with no payment attached', async () => {
    const { pay, seen } = withServer([Response.json({ free: true }, { status: 201 })])
    const response = await pay('http://127.0.0.1:1/free')
    expect(response.status).toBe(201)
    expect(await response.json()).toEqual({ free: true })
    expect(paymentOf(response)).toBeUndefined()
    expect(seen).toHaveLength(1)
  })

  it('sends JSON text as application/json unless the caller chose a type', async () => {
    const { pay, seen } = withServer([])
    await pay('http://127.0.0.1:1/a', { method: 'POST', body: '{"a":1}' })
    await pay('http://127.0.0.1:1/a', { method: 'POST', body: 'hello' })
    await pay('http://127.0.0.1:1/a', {
      method: 'POST',
      body: '[1]',
      headers: { 'Content-Type': 'application/vnd.api+json' },
    })
    await pay(new Request('http://127.0.0.1:1/a', { method: 'POST', body: '{"r":1}' }))
    expect(seen.map((s) => s.contentType)).toEqual([
      'application/json',
      'text/plain;charset=UTF-8',
      'application/vnd.api+json',
      'text/plain;charset=UTF-8',
    ])
  })

  it('retries 429/5xx before paying with jittered backoff, re-sending the same body, bounded', async () => {
    const busy = () => new Response('busy', { status: 503 })
    const { pay, seen, waits } = withServer([busy(), busy(), busy(), busy()])
    const response = await pay('http://127.0.0.1:1/a', { method: 'POST', body: '{"x":1}' })
    expect(response.status).toBe(503)
    expect(seen).toHaveLength(3)
    expect(seen.every((s) => s.body === '{"x":1}')).toBe(true)
    expect(waits).toEqual([125, 250])
  })

  it('honours Retry-After, and gives up at once when it asks for longer than the cap', async () => {
    const slow = (s: string) => new Response(null, { status: 429, headers: { 'retry-after': s } })
    const first = withServer([slow('1'), new Response('ok')])
    expect((await first.pay('http://127.0.0.1:1/a')).status).toBe(200)
    expect(first.waits).toEqual([1000])
    const second = withServer([slow('3600')])
    expect((await second.pay('http://127.0.0.1:1/a')).status).toBe(429)
    expect(second.seen).toHaveLength(1)
  })

  it('does not re-send an unpaid request that got no answer at all', async () => {
    const { pay, seen } = withServer([new TypeError('fetch failed')])
    await expect(pay('http://127.0.0.1:1/a', { method: 'POST', body: '{}' })).rejects.toThrow(
      'fetch failed',
    )
    expect(seen).toHaveLength(1)
  })

  it('refuses a 402 it cannot read with NO_PAYABLE_REQUIREMENT, touching no ledger', async () => {
    const { pay } = withServer([new Response('pay me', { status: 402 })])
    const error = await pay('http://127.0.0.1:1/a').catch((e: unknown) => e)
    expect(hasCode(error, 'NO_PAYABLE_REQUIREMENT')).toBe(true)
    expect(isRefusal(error)).toBe(true)
    expect(isRefusal(new TypeError('fetch failed'))).toBe(false)
  })

  it('rejects a network with no known USDC at creation', () => {
    expect(() =>
      createPayingFetch({ signer: new Ed25519Keypair(), network: 'sui:devnet', limits: false }),
    ).toThrow(/No USDC/)
  })

  it.each([-1, Number.NaN, Number.POSITIVE_INFINITY])(
    'rejects pendingWaitMs %s at creation with invalid_config',
    (pendingWaitMs) => {
      const make = () =>
        createPayingFetch({ signer: new Ed25519Keypair(), limits: false, pendingWaitMs })
      expect(make).toThrow(
        expect.objectContaining({
          code: 'invalid_config',
          message: expect.stringMatching(/^pendingWaitMs must be a number of milliseconds ≥ 0/),
        }),
      )
    },
  )
})
