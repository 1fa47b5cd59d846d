import { describe, expect, it, vi } from 'vitest'
import * as routeTable from './routes.js'
import { createSellerPaywall, type SellerOptions } from './seller.js'

// The route-table look-up, observed: a URL seen before is answered from memory.
vi.mock('./routes.js', async (original) => {
  const actual = await original<typeof import('./routes.js')>()
  return { ...actual, matchRoute: vi.fn(actual.matchRoute) }
})

import { createMemoryStore } from './stores/memory.js'

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

  it('looks a URL up in the table once, priced or not, and remembers many method spellings', () => {
    const seller = createSellerPaywall(options({ routes: { 'POST /paid': '0.02' } }))
    const lookUps = vi.mocked(routeTable.matchRoute)
    lookUps.mockClear()
    for (let i = 0; i < 3; i++) {
      seller.match('POST', 'http://x/paid')
      seller.match('GET', 'http://x/free')
    }
    expect(lookUps).toHaveBeenCalledTimes(2)
    // More spellings than are remembered still answer right.
    for (let i = 0; i < 40; i++) expect(seller.match(`M${i}`, '/paid')).toBeUndefined()
    expect(seller.match('post', '/paid')?.price).toBe('0.02')
  })

  it('refuses a bad or zero price at start-up, not on the first request', () => {
    expect(() => createSellerPaywall(options({ routes: { 'GET /x': 'abc' } }))).toThrow()
    expect(() => createSellerPaywall(options({ routes: { 'GET /x': '0' } }))).toThrow(/zero/)
    const seller = createSellerPaywall(options())
    expect(() => seller.route('-1')).toThrow()
    expect(seller.route('0.01', { description: 'd' })).toEqual({ price: '0.01', description: 'd' })
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
})
