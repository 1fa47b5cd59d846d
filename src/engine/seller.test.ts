import { describe, expect, it } from 'vitest'
import { paywall as expressPaywall } from '../../adapters/express.js'
import { paywall as honoPaywall } from '../../adapters/hono.js'
import { paywall as koaPaywall } from '../../adapters/koa.js'
import { PaymentError } from '../errors.js'
import { parseChallenge, serializeCredential } from '../mpp.js'
import { createMemoryStore } from '../stores/memory.js'
import { createPaywall } from './paywall.js'
import { createSellerPaywall } from './seller.js'
import { logSellerEvent } from './sellerLog.js'
import type { SellerOptions } from './sellerTypes.js'

const options = (extra: Partial<SellerOptions> = {}): SellerOptions => ({
  payTo: '0x5a1e4c0b4f0d7c8e9f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f80',
  ledger: 'http://127.0.0.1:9',
  store: createMemoryStore(),
  secrets: 'a-challenge-secret-of-at-least-32-bytes!',
  ...extra,
})

describe('createSellerPaywall', () => {
  it('matches the route table by method and normalised path, also when asked again', () => {
    const seller = createSellerPaywall(options({ routes: { 'POST /paid': '0.02' } }))
    for (let i = 0; i < 3; i++) {
      expect(seller.match('POST', '/paid')?.price).toBe('0.02')
      expect(seller.match('POST', '//PAID/')?.price).toBe('0.02')
      expect(seller.match('GET', '/paid')).toBeUndefined()
      expect(seller.match('POST', '/free')).toBeUndefined()
    }
  })

  it('answers from its own table, the same route object each time, beyond what it remembers', () => {
    const one = createSellerPaywall(options({ routes: { 'POST /paid': '0.02' } }))
    const two = createSellerPaywall(options({ routes: { 'POST /paid': '0.05', 'GET /free': '1' } }))
    const route = one.match('POST', 'http://x/paid')
    for (let i = 0; i < 3; i++) {
      // Two sellers in one process never answer from each other's memory.
      expect(one.match('POST', 'http://x/paid')).toBe(route)
      expect(two.match('POST', 'http://x/paid')?.price).toBe('0.05')
      expect(one.match('GET', 'http://x/free')).toBeUndefined()
      expect(two.match('GET', 'http://x/free')?.price).toBe('1')
    }
    // More URLs, longer URLs and more method spellings than are remembered still answer right.
    for (let i = 0; i < 5000; i++) expect(one.match('POST', `/paid?n=${i}`)).toBe(route)
    expect(one.match('POST', `/paid?${'x'.repeat(300)}`)).toBe(route)
    for (let i = 0; i < 40; i++) expect(one.match(`M${i}`, '/paid')).toBeUndefined()
    expect(one.match('post', '/paid')).toBe(route)
    expect(one.match('POST', 'http://x/paid')).toBe(route)
  })

  it('runs the lease sweeper: a settled payment whose process died is owed back', async () => {
    let now = 1_700_000_000_000
    const store = createMemoryStore({ now: () => now, serveLeaseMs: 1_000 })
    const events: string[] = []
    const digest = 'Crashed1111111111111111111111111111111111111'
    const resource = 'https://api.example/v1/slow'
    await store.claim(digest, { resource, dialect: 'x402' })
    await store.settled(digest, {
      payer: `0x${'ab'.repeat(32)}`,
      amount: 20_000n,
      resource,
      dialect: 'x402',
      network: 'sui:mainnet',
      asset: '0x2::usdc::USDC',
      settledAt: new Date(now),
    })
    now += 1_000 + 500
    const on = createSellerPaywall(
      options({
        store,
        leaseSweep: { intervalMs: 10, graceMs: 500 },
        now: () => now,
        onEvent: (event) => events.push(event.type),
      }),
    )
    try {
      await expect.poll(async () => (await store.get(digest))?.state).toBe('refund_due')
      expect(events).toEqual(['lease_lapsed'])
    } finally {
      await on.close()
    }
    expect(() => createSellerPaywall(options({ leaseSweep: { graceMs: -1 } }))).toThrow(
      expect.objectContaining({ code: 'invalid_config' }),
    )
  })

  it('refuses a bad or zero price at start-up, not on the first request', () => {
    expect(() => createSellerPaywall(options({ routes: { 'GET /x': 'abc' } }))).toThrow(
      expect.objectContaining({
        name: 'PaymentError',
        code: 'invalid_amount',
        details: { route: 'GET /x' },
        message: expect.stringMatching(/^Route "GET \/x": .*"0\.02"/),
      }),
    )
    expect(() => createSellerPaywall(options({ routes: { 'GET /x': '0' } }))).toThrow(/zero/)
    expect(() => createSellerPaywall(options({ routes: { 'GET /x': 0.02 as never } }))).toThrow(
      expect.objectContaining({ code: 'invalid_amount' }),
    )
    const seller = createSellerPaywall(options())
    expect(() => seller.route('-1')).toThrow(
      expect.objectContaining({ name: 'PaymentError', code: 'invalid_amount' }),
    )
    expect(seller.route('0.01', { description: 'd' })).toEqual({ price: '0.01', description: 'd' })
  })

  it.each([
    ['a short secret', { secrets: 'too-short' }, 'invalid_secret', /shorter than 32 bytes/],
    ['no secret', { secrets: [] }, 'invalid_secret', /at least one/i],
    ['one short secret of several', { secrets: ['x'.repeat(32), 'short'] }, 'invalid_secret', /#1/],
    // The guides' `secrets: [process.env.CHALLENGE_SECRET!]` with the variable unset.
    ['an unset secret variable', { secrets: [undefined] }, 'invalid_secret', /#0 is missing/],
    ['a secret that is no string', { secrets: [42] }, 'invalid_secret', /#0 is not a string/],
    ['no payTo', { payTo: undefined }, 'invalid_config', /payTo is required/],
    ['a payTo that is no address', { payTo: 'alice' }, 'invalid_config', /Sui address/],
    ['no store', { store: undefined }, 'invalid_config', /store is required/],
    ['a store that is no store', { store: {} }, 'invalid_config', /not a PaymentStore/],
    ['no ledger', { ledger: undefined }, 'invalid_config', /ledger is required/],
    ['a ledger that is no URL', { ledger: 'localhost:9000' }, 'invalid_config', /http\(s\) URL/],
    ['a bad network', { network: 'mainnet' }, 'invalid_config', /sui:mainnet/],
  ])('refuses %s when it is created, with a coded error', (_name, extra, code, message) => {
    const make = () => createSellerPaywall(options(extra as Partial<SellerOptions>))
    expect(make).toThrow(message)
    expect(make).toThrow(expect.objectContaining({ name: 'PaymentError', code }))
    // Never the secret itself in the message.
    expect(make).not.toThrow(/too-short/)
  })

  it('refuses bad options through every adapter at paywall(), before any request', () => {
    const bad = options({ secrets: 'too-short' })
    expect(() => expressPaywall(bad)).toThrow(expect.objectContaining({ code: 'invalid_secret' }))
    expect(() => koaPaywall(bad)).toThrow(expect.objectContaining({ code: 'invalid_secret' }))
    expect(() => honoPaywall(bad)).toThrow(expect.objectContaining({ code: 'invalid_secret' }))
    expect(() => createPaywall({ ...bad, ledger: {} as never, secrets: ['too-short'] })).toThrow(
      expect.objectContaining({ code: 'invalid_secret' }),
    )
  })

  it('applies the route body limit, else the default', () => {
    const seller = createSellerPaywall(options({ maxBodyBytes: 10 }))
    expect(seller.maxBodyBytes({ price: '1' })).toBe(10)
    expect(seller.maxBodyBytes({ price: '1', maxBodyBytes: 5 })).toBe(5)
  })

  it('logs payment events without secrets', async () => {
    const lines: Record<string, unknown>[] = []
    const logger = {
      info: (o: Record<string, unknown>) => lines.push(o),
      warn: (o: Record<string, unknown>) => lines.push(o),
      error: (o: Record<string, unknown>) => lines.push(o),
    }
    const seller = createSellerPaywall(options({ logger, routes: { 'GET /x': '0.01' } }))
    const route = seller.match('GET', '/x')!
    const decision = await seller.engine.handle(
      new Request('http://127.0.0.1/x', { headers: { 'x-payment': 'not base64 %%%' } }),
      route,
    )
    expect(decision.status).toBe('respond')
    expect(lines).toEqual([
      { event: 'rejected', resource: 'http://127.0.0.1/x', code: 'invalid_encoding' },
    ])
    expect(JSON.stringify(lines)).not.toContain('a-challenge-secret')
  })

  it('logs a broken store with the cause the driver gave', () => {
    const lines: Record<string, unknown>[] = []
    const push = (o: Record<string, unknown>) => lines.push(o)
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), {
      code: 'ECONNREFUSED',
    })
    const error = new PaymentError('store_error', 'The payment store failed.', {
      status: 503,
      details: { operation: 'claim' },
      cause: refused,
    })
    logSellerEvent(
      { info: push, warn: push, error: push },
      { type: 'store_failed', resource: 'http://127.0.0.1/x', error },
    )
    expect(lines).toEqual([
      {
        event: 'store_failed',
        resource: 'http://127.0.0.1/x',
        status: 503,
        operation: 'claim',
        cause: {
          code: 'ECONNREFUSED',
          name: 'Error',
          message: 'connect ECONNREFUSED 127.0.0.1:5432',
        },
      },
    ])
  })
})

describe('a ledger given as a URL', () => {
  it("is reached through the fetch the adapter passes (Express and Koa pass Node's)", async () => {
    const called: string[] = []
    const ledgerFetch: typeof fetch = async (input) => {
      called.push(input instanceof Request ? input.url : String(input))
      throw new TypeError('no ledger here')
    }
    const seller = createSellerPaywall(options({ routes: { 'GET /paid': '0.02' } }), {
      ledgerFetch,
    })
    const route = seller.match('GET', '/paid')
    if (route === undefined) throw new Error('the route is not priced')
    const url = 'https://api.example.com/paid'
    const challenge = await seller.engine.handle(new Request(url), route)
    if (challenge.status !== 'respond') throw new Error('no 402')
    const offered = parseChallenge(challenge.response.headers.get('www-authenticate') ?? '')
    const authorization = serializeCredential({
      challenge: offered,
      payload: { digest: '11111111111111111111111111111111', signature: 'AA==' },
    })
    await seller.engine.handle(new Request(url, { headers: { authorization } }), route)
    expect(called.length).toBeGreaterThan(0)
    expect(called[0]).toMatch(/^http:\/\/127\.0\.0\.1:9\//)
  })
})
