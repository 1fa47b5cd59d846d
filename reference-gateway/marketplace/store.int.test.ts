/**
 * The marketplace storage on both engines of the relational store (SQLite file, PostgreSQL in a
 * schema of its own): nonces are consumed once and only by their signer, before expiry, for their
 * body; listings are unique per seller, method and URL; searches filter and page; probes are kept
 * newest first; the re-probe lease has one holder at a time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { GatewayDatabase } from '../db/database.js'
import { testEngines } from '../db/testHelpers.js'
import {
  createMarketplaceStore,
  type ListingPosition,
  type MarketplaceStore,
  maxTotal,
  type NewListing,
} from './store.js'

const engines = testEngines('market')

const seller = `0x${'a'.repeat(64)}`
const other = `0x${'b'.repeat(64)}`
/** Issued at time 0 with room to spare (the cap has its own tests in `nonces.int.test.ts`). */
const uncapped = { nowMs: 0, maxOutstanding: 1_000 }

const listing = (over: Partial<NewListing> = {}): NewListing => ({
  seller,
  url: 'https://seller.example/v1/answer',
  method: 'POST',
  probeBody: '{}',
  name: 'Answer',
  description: 'Answers questions',
  tags: ['qa', 'text'],
  network: 'sui:localnet',
  asset: '0x2::usdc::USDC',
  price: 10_000n,
  payTo: seller,
  nextProbeAtMs: 1_000,
  ...over,
})

for (const engine of engines) {
  describe.skipIf(engine.skip)(`marketplace storage on ${engine.name}`, () => {
    let database: GatewayDatabase
    let store: MarketplaceStore
    beforeAll(async () => {
      database = await engine.open()
      store = createMarketplaceStore(database.db)
    })
    afterAll(async () => {
      await database?.close()
      await engine.cleanup()
    })

    it('consumes a nonce once, only for its signer, action and body, before it expires', async () => {
      const base = { address: seller, action: 'submit', bodyHash: 'h1' }
      await store.issueNonce({ nonce: 'n1', ...base, expiresAtMs: 2_000, ...uncapped })
      const use = { nonce: 'n1', ...base, nowMs: 1_000 }
      expect(await store.consumeNonce({ ...use, address: other })).toEqual({
        ok: false,
        reason: 'wrong_signer',
      })
      expect(await store.consumeNonce({ ...use, bodyHash: 'h2' })).toEqual({
        ok: false,
        reason: 'wrong_body',
      })
      expect(await store.consumeNonce({ ...use, action: 'service' })).toEqual({
        ok: false,
        reason: 'wrong_action',
      })
      expect(await store.consumeNonce({ ...use, nowMs: 2_000 })).toEqual({
        ok: false,
        reason: 'nonce_expired',
      })
      expect(await store.consumeNonce({ ...use, nonce: 'nope' })).toEqual({
        ok: false,
        reason: 'unknown_nonce',
      })
      expect(await store.consumeNonce(use)).toEqual({ ok: true })
      expect(await store.consumeNonce(use)).toEqual({ ok: false, reason: 'nonce_used' })
    })

    it('consumes a nonce exactly once under concurrent use', async () => {
      const base = { address: seller, action: 'submit', bodyHash: 'h' }
      await store.issueNonce({ nonce: 'race', ...base, expiresAtMs: 9_000, ...uncapped })
      const results = await Promise.all(
        Array.from({ length: 10 }, () => store.consumeNonce({ nonce: 'race', ...base, nowMs: 1 })),
      )
      expect(results.filter((r) => r.ok)).toHaveLength(1)
    })

    it('keeps one listing per seller, method and URL, and re-lists it on a new submission', async () => {
      const first = await store.putListing(listing(), new Date(1_000))
      await store.setListingState(
        first.id,
        { state: 'suspended', consecutiveFailures: 3 },
        new Date(2_000),
      )
      const again = await store.putListing(listing({ price: 20_000n }), new Date(3_000))
      expect(again.id).toBe(first.id)
      expect(again).toMatchObject({ state: 'listed', consecutiveFailures: 0, price: 20_000n })
      expect(again.createdAt).toBe(new Date(1_000).toISOString())
      expect(await store.listingsOf(seller)).toHaveLength(1)
    })

    it('searches listed endpoints by tag, network, seller and price, paged', async () => {
      await store.putListing(
        listing({ seller: other, url: 'https://b.example/x', tags: ['image'], price: 4_000_000n }),
        new Date(5_000),
      )
      await store.putListing(
        listing({ seller: other, url: 'https://b.example/y', network: 'sui:testnet' }),
        new Date(6_000),
      )
      const page = { limit: 10, offset: 0, state: 'listed' as const }
      expect((await store.searchListings(page)).total).toBe(3)
      const byTag = await store.searchListings({ ...page, tag: 'image' })
      expect(byTag.listings.map((l) => l.url)).toEqual(['https://b.example/x'])
      // `q` is a prefix of `qa`: a tag matches whole elements only.
      expect((await store.searchListings({ ...page, tag: 'q' })).total).toBe(0)
      expect((await store.searchListings({ ...page, network: 'sui:testnet' })).total).toBe(1)
      expect((await store.searchListings({ ...page, seller })).total).toBe(1)
      expect((await store.searchListings({ ...page, maxPrice: 1_000_000n })).total).toBe(2)
      const second = await store.searchListings({ ...page, limit: 1, offset: 1 })
      expect(second.total).toBe(3)
      expect(second.listings.map((l) => l.url)).toEqual(['https://b.example/x'])
    })

    it('searches by words in any case (punctuation separates words), by payTo, and keeps input schemas', async () => {
      const schema = { type: 'object', properties: { city: { type: 'string' } } }
      await store.putListing(
        listing({
          seller: other,
          url: 'https://words.example/forecast',
          name: 'Weather ORACLE',
          description: '100% hourly_forecasts',
          tags: ['weather'],
          payTo: other,
          inputSchema: schema,
        }),
        new Date(7_000),
      )
      const page = { limit: 10, offset: 0, state: 'listed' as const }
      const found = async (words: string[]) =>
        (await store.searchListings({ ...page, words })).listings.map((l) => l.url)
      expect(await found(['oracle', 'HOURLY'.toLowerCase()])).toEqual([
        'https://words.example/forecast',
      ])
      expect(await found(['words.example'])).toEqual(['https://words.example/forecast'])
      expect(await found(['100%'])).toEqual(['https://words.example/forecast'])
      expect(await found(['1_0%'])).toEqual([])
      expect(await found(['oracle', 'absent'])).toEqual([])
      expect((await store.searchListings({ ...page, payTo: other })).total).toBe(1)
      const [stored] = (await store.searchListings({ ...page, payTo: other })).listings
      expect(stored?.inputSchema).toEqual(schema)
      expect((await store.listingsOf(seller))[0]?.inputSchema).toBeNull()
    })

    it('matches the beginnings of words, the same on every engine: no stemming, accents kept, updates indexed', async () => {
      const created = await store.putListing(
        listing({
          seller: other,
          url: 'https://rule.example/v2/translate',
          name: 'Übersetzung café',
          description: 'Translating documents',
          tags: ['language'],
          payTo: other,
        }),
        new Date(8_000),
      )
      const page = { limit: 10, offset: 0, state: 'listed' as const }
      const found = async (words: string[]) =>
        (await store.searchListings({ ...page, words })).listings.map((l) => l.url)
      const url = ['https://rule.example/v2/translate']
      expect(await found(['transl'])).toEqual(url)
      expect(await found(['TRANSLATING'])).toEqual(url)
      // An inner substring is not a word beginning; a stem is not the word.
      expect(await found(['lating'])).toEqual([])
      expect(await found(['translates'])).toEqual([])
      expect(await found(['über', 'caf'])).toEqual(url)
      expect(await found(['uber'])).toEqual([])
      expect(await found(['v2', 'rule'])).toEqual(url)
      await store.updateListing(created.id, { description: 'Summaries' }, new Date(9_000))
      expect(await found(['translating'])).toEqual([])
      expect(await found(['summar'])).toEqual(url)
    })

    it('finds due listings and keeps probes newest first', async () => {
      const [own] = await store.listingsOf(seller)
      if (own === undefined) throw new Error('no listing')
      const due = await store.dueListings(1_000, 100)
      expect(due.map((l) => l.id)).toContain(own.id)
      expect(await store.dueListings(999, 100)).toEqual([])
      for (const [i, passed] of [true, false].entries()) {
        await store.addProbe({
          listingId: own.id,
          kind: 'reprobe',
          passed,
          failedGate: passed ? null : 'b',
          message: passed ? 'all gates passed' : 'no 402',
          probedAt: new Date(10_000 + i).toISOString(),
        })
      }
      const probes = await store.probesOf(own.id, 10)
      expect(probes.map((p) => [p.passed, p.failedGate])).toEqual([
        [false, 'b'],
        [true, null],
      ])
    })

    it('pages newest first by offset and after a listing, below and above the counted cap', async () => {
      // 1 010 listings tagged `bulk` (more than the 1 000 a total counts), every third also
      // `bulk-few` (337, fewer); created one millisecond apart, so the expected order is known.
      const count = maxTotal + 10
      for (let from = 0; from < count; from += 50) {
        await Promise.all(
          Array.from({ length: Math.min(50, count - from) }, (_, k) => from + k).map((i) =>
            store.putListing(
              listing({
                seller: other,
                url: `https://bulk.example/${i}`,
                name: `Bulk ${i}`,
                description: 'bulkword',
                tags: i % 3 === 0 ? ['bulk', 'bulk-few'] : ['bulk'],
                nextProbeAtMs: Number.MAX_SAFE_INTEGER,
              }),
              new Date(100_000 + i),
            ),
          ),
        )
      }
      const newestFirst = (keep: (i: number) => boolean) =>
        Array.from({ length: count }, (_, k) => count - 1 - k)
          .filter(keep)
          .map((i) => `https://bulk.example/${i}`)
      const cases = [
        { filter: { tag: 'bulk' }, expected: newestFirst(() => true) },
        { filter: { words: ['bulkword'] }, expected: newestFirst(() => true) },
        { filter: { tag: 'bulk-few' }, expected: newestFirst((i) => i % 3 === 0) },
        { filter: { tag: 'bulk-few', words: ['bulk'] }, expected: newestFirst((i) => i % 3 === 0) },
      ]
      for (const { filter, expected } of cases) {
        const base = { state: 'listed' as const, limit: 100, ...filter }
        const byOffset: string[] = []
        for (let offset = 0; ; offset += 100) {
          const page = await store.searchListings({ ...base, offset })
          expect(page.total).toBe(Math.min(expected.length, maxTotal))
          expect(page.totalCapped).toBe(expected.length > maxTotal)
          byOffset.push(...page.listings.map((l) => l.url))
          expect(page.hasMore).toBe(byOffset.length < expected.length)
          if (!page.hasMore) break
        }
        expect(byOffset).toEqual(expected)
        const byKey: string[] = []
        let after: ListingPosition | undefined
        for (;;) {
          const page = await store.searchListings({ ...base, offset: 0, after })
          byKey.push(...page.listings.map((l) => l.url))
          const last = page.listings.at(-1)
          if (!page.hasMore || last === undefined) break
          after = { createdAt: last.createdAt, id: last.id }
        }
        expect(byKey).toEqual(expected)
        const past = await store.searchListings({ ...base, offset: expected.length })
        expect(past).toMatchObject({ listings: [], hasMore: false })
        expect(past.total).toBe(Math.min(expected.length, maxTotal))
      }
    })

    it('gives the lease to one holder until it expires', async () => {
      const name = `reprobe-${Math.random()}`
      expect(await store.acquireLease(name, 'p1', 0, 1_000)).toBe(true)
      expect(await store.acquireLease(name, 'p2', 500, 1_000)).toBe(false)
      expect(await store.acquireLease(name, 'p1', 600, 1_000)).toBe(true)
      expect(await store.acquireLease(name, 'p2', 1_599, 1_000)).toBe(false)
      expect(await store.acquireLease(name, 'p2', 1_600, 1_000)).toBe(true)
      const racers = await Promise.all(
        ['a', 'b', 'c', 'd'].map((h) => store.acquireLease(`${name}-race`, h, 0, 1_000)),
      )
      expect(racers.filter(Boolean)).toHaveLength(1)
    })
  })
}
