/**
 * `GET /v1/services` paging (by offset and by cursor) and filters over the gateway's own items and
 * listed endpoints, on both engines of the relational store: suspended and delisted endpoints are
 * hidden; pages run across the two sources.
 */
import { SellerText } from 'tollgate'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { GatewayDatabase } from '../db/database.js'
import { testEngines } from '../db/testHelpers.js'
import { type ServiceItem, searchServices, servicesQuerySchema } from './services.js'
import { createMarketplaceStore, type MarketplaceStore } from './store.js'

const gatewayAddress = `0x${'1'.repeat(64)}`
const seller = `0x${'2'.repeat(64)}`

const own: ServiceItem[] = ['search', 'image'].map((tag, i) => ({
  source: 'gateway',
  id: `op-${tag}`,
  name: tag,
  summary: tag,
  method: 'POST',
  url: `https://gateway.example/v1/${tag}`,
  tags: [tag],
  network: 'sui:mainnet',
  asset: 'usdc',
  price: String(1_000 * (i + 1)),
  payTo: gatewayAddress,
  seller: gatewayAddress,
}))

const query = (q: Record<string, string> = {}) => servicesQuerySchema.parse(q)

for (const engine of testEngines('services'))
  describe.skipIf(engine.skip)(`GET /v1/services on ${engine.name}`, () => {
    let database: GatewayDatabase
    let store: MarketplaceStore

    beforeAll(async () => {
      database = await engine.open()
      store = createMarketplaceStore(database.db)
      for (const [i, state] of (['listed', 'listed', 'suspended', 'delisted'] as const).entries()) {
        const listing = await store.putListing(
          {
            seller,
            url: `https://seller.example/${i}`,
            method: 'POST',
            probeBody: '{}',
            name: `s${i}`,
            description: '',
            tags: i === 0 ? ['search'] : ['text'],
            network: 'sui:mainnet',
            asset: 'usdc',
            price: BigInt(500 * (i + 1)),
            payTo: seller,
            nextProbeAtMs: 0,
          },
          new Date(1_000 + i),
        )
        if (state !== 'listed') {
          await store.setListingState(
            listing.id,
            { state, consecutiveFailures: 3 },
            new Date(2_000),
          )
        }
      }
    })

    afterAll(async () => {
      await database?.close()
      await engine.cleanup()
    })

    it("lists the gateway's items, then listed endpoints, hiding suspended and delisted ones", async () => {
      const page = await searchServices(own, store, query())
      expect(page.total).toBe(4)
      expect(page.items.map((i) => i.source)).toEqual(['gateway', 'gateway', 'seller', 'seller'])
      expect(page.items.map((i) => i.url)).not.toContain('https://seller.example/2')
      expect(page.items.map((i) => i.url)).not.toContain('https://seller.example/3')
    })

    it('pages across the two sources', async () => {
      const urls = async (limit: string, offset: string) =>
        (await searchServices(own, store, query({ limit, offset }))).items.map((i) => i.url)
      const all = await urls('100', '0')
      expect([...(await urls('3', '0')), ...(await urls('3', '3'))]).toEqual(all)
      expect(await urls('1', '2')).toEqual([all[2]])
    })

    it('pages by cursor as by offset, across the two sources, and says where the next page starts', async () => {
      const all = (await searchServices(own, store, query({ limit: '100' }))).items.map(
        (i) => i.url,
      )
      expect((await searchServices(own, store, query({ limit: '100' }))).nextCursor).toBeUndefined()
      for (const limit of ['1', '3']) {
        const walked: string[] = []
        let cursor: string | undefined
        for (;;) {
          const page = await searchServices(
            own,
            store,
            query({ limit, ...(cursor === undefined ? {} : { cursor }) }),
          )
          walked.push(...page.items.map((i) => i.url))
          if (page.nextCursor === undefined) break
          cursor = page.nextCursor
        }
        expect(walked).toEqual(all)
      }
      // A cursor with a filter keeps to it.
      const tagged = await searchServices(own, store, query({ tag: 'search', limit: '1' }))
      expect(tagged.items.map((i) => i.source)).toEqual(['gateway'])
      const cursor = tagged.nextCursor as string
      const rest = await searchServices(own, store, query({ tag: 'search', limit: '5', cursor }))
      expect(rest.items.map((i) => i.url)).toEqual(['https://seller.example/0'])
      expect(rest.nextCursor).toBeUndefined()
    })

    it('refuses a cursor it did not make, and a cursor with an offset', () => {
      const second = Buffer.from('{"o":1}').toString('base64url')
      expect(servicesQuerySchema.safeParse({ cursor: second }).success).toBe(true)
      expect(servicesQuerySchema.safeParse({ cursor: second, offset: '2' }).success).toBe(false)
      for (const cursor of [
        'not base64 !',
        Buffer.from('{"o":-1}').toString('base64url'),
        Buffer.from('{"t":"yesterday","i":"lst_00"}').toString('base64url'),
        Buffer.from('[1]').toString('base64url'),
        'x'.repeat(201),
      ]) {
        expect(servicesQuerySchema.safeParse({ cursor }).success).toBe(false)
      }
    })

    it('filters by tag, seller, highest price and network', async () => {
      const ids = async (q: Record<string, string>) =>
        (await searchServices(own, store, query(q))).items.map((i) =>
          // A listing's name is shown as the seller's (quoted and labelled); compared unwrapped.
          SellerText.unquote(i.name),
        )
      expect(await ids({ tag: 'search' })).toEqual(['search', 's0'])
      expect((await ids({ seller })).sort()).toEqual(['s0', 's1'])
      // Newest listing first: s1 (1000) was listed after s0 (500); image (2000) is over.
      expect(await ids({ maxPrice: '1000' })).toEqual(['search', 's1', 's0'])
      expect(await ids({ network: 'sui:testnet' })).toEqual([])
    })

    it('refuses a malformed query', () => {
      expect(servicesQuerySchema.safeParse({ limit: '0' }).success).toBe(false)
      expect(servicesQuerySchema.safeParse({ maxPrice: '-1' }).success).toBe(false)
      expect(servicesQuerySchema.safeParse({ sort: 'x' }).success).toBe(false)
    })
  })
