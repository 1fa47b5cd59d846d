/**
 * Discovery over the gateway's own and the listed seller endpoints, served on loopback from a SQLite
 * store: `/discovery/resources` in the x402 Bazaar shape with its filters and paging across the two
 * sources, `/discovery/search` (every word, any case, wildcards taken literally), each item with its
 * request body's JSON Schema; `/.well-known/x402.json` and `/llms.txt` list the listed sellers and
 * drop suspended ones; bad queries are 400.
 */
import type { AddressInfo } from 'node:net'
import { createAdaptorServer } from '@hono/node-server'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { paidEntries } from '../catalog/catalog.js'
import { defaultCatalog } from '../catalog/default.js'
import { type GatewayDatabase, openDatabase } from '../db/database.js'
import { createMarketplaceStore, type MarketplaceStore } from '../marketplace/store.js'
import type { BazaarPage } from './bazaar.js'
import { listedDiscoveryRoutes } from './listed.js'

const gatewayPayTo = `0x${'5c'.repeat(32)}`
const sellerA = `0x${'a1'.repeat(32)}`
const sellerB = `0x${'b2'.repeat(32)}`
const catalog = defaultCatalog()
const own = paidEntries(catalog).length

let database: GatewayDatabase
let store: MarketplaceStore
let server: ReturnType<typeof createAdaptorServer>
let base: string
const clock = 1_000_000

const get = async (path: string) => {
  const response = await fetch(`${base}${path}`)
  return {
    status: response.status,
    json: (await response.json()) as BazaarPage & { query?: string },
  }
}

beforeAll(async () => {
  database = await openDatabase({ kind: 'sqlite', file: ':memory:' })
  store = createMarketplaceStore(database.db)
  const listings = [
    {
      seller: sellerA,
      name: 'Weather oracle',
      description: 'Hourly forecasts for any city',
      tags: ['weather'],
      inputSchema: {
        type: 'object',
        required: ['city'],
        properties: { city: { type: 'string' } },
      },
      probeBody: '{"city":"Lisbon"}',
    },
    {
      seller: sellerB,
      name: 'Percent_literal 100%',
      description: 'Discount calculator',
      tags: ['finance-tools'],
    },
    { seller: sellerB, name: 'Suspended forecast', description: 'weather, but down', tags: [] },
  ]
  for (const [i, l] of listings.entries()) {
    const listing = await store.putListing(
      {
        url: `https://seller-${i}.example/v1/call`,
        method: 'POST',
        probeBody: '{}',
        network: 'sui:testnet',
        asset: '0x2::usdc::USDC',
        price: BigInt(10_000 * (i + 1)),
        payTo: l.seller,
        nextProbeAtMs: 0,
        ...l,
      },
      new Date(1_000 + i),
    )
    if (i === 2) {
      await store.setListingState(
        listing.id,
        { state: 'suspended', consecutiveFailures: 3 },
        new Date(2_000),
      )
    }
  }
  const routes = listedDiscoveryRoutes({
    catalog,
    discovery: {
      publicBaseUrl: 'https://gw.example',
      payTo: gatewayPayTo,
      network: 'sui:mainnet',
      asset: '0x2::usdc::USDC',
    },
    store,
    now: () => clock,
  })
  server = createAdaptorServer({ fetch: (request) => routes.fetch(request) })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve))
  await database?.close()
})

describe('GET /discovery/resources', () => {
  it("lists the gateway's paid endpoints, then the listed ones, in the Bazaar shape", async () => {
    const { status, json } = await get('/discovery/resources?limit=100&offset=80')
    expect(status).toBe(200)
    expect(json.x402Version).toBe(1)
    expect(json.pagination).toEqual({ limit: 100, offset: 80, total: own + 2 })
    const urls = json.items.map((i) => i.resource)
    expect(urls.slice(-2)).toEqual([
      'https://seller-1.example/v1/call',
      'https://seller-0.example/v1/call',
    ])
    const gatewayItem = json.items[0]
    expect(gatewayItem).toMatchObject({
      type: 'http',
      x402Version: 1,
      metadata: { source: 'gateway' },
    })
    expect(gatewayItem?.accepts[0]).toMatchObject({ scheme: 'exact', payTo: gatewayPayTo })
    expect(gatewayItem?.metadata.inputSchema).toMatchObject({ type: 'object' })
    expect(gatewayItem?.accepts[0]?.outputSchema.input.schema).toEqual(
      gatewayItem?.metadata.inputSchema,
    )
    const weather = json.items.at(-1)
    expect(weather).toMatchObject({
      resource: 'https://seller-0.example/v1/call',
      accepts: [
        {
          scheme: 'exact',
          network: 'sui:testnet',
          maxAmountRequired: '10000',
          payTo: sellerA,
          outputSchema: {
            input: {
              method: 'POST',
              schema: { required: ['city'], properties: { city: { type: 'string' } } },
            },
          },
        },
      ],
      metadata: {
        source: 'seller',
        price: '0.010000',
        seller: sellerA,
        example: { city: 'Lisbon' },
      },
    })
    // A listing without a schema says: any JSON object.
    expect(json.items.at(-2)?.metadata.inputSchema).toEqual({ type: 'object' })
  })

  it('filters by payTo, network, type and scheme', async () => {
    const bySeller = await get(`/discovery/resources?payTo=${sellerB}`)
    expect(bySeller.json.items.map((i) => i.metadata.name)).toEqual([
      `seller's name: "Percent_literal 100%"`,
    ])
    const byGateway = await get(`/discovery/resources?payTo=${gatewayPayTo}&limit=100`)
    expect(byGateway.json.pagination.total).toBe(own)
    const testnet = await get('/discovery/resources?network=sui:testnet')
    expect(testnet.json.pagination.total).toBe(2)
    expect((await get('/discovery/resources?type=http')).json.pagination.total).toBe(own + 2)
    expect((await get('/discovery/resources?scheme=exact')).json.pagination.total).toBe(own + 2)
    expect((await get('/discovery/resources?type=mcp')).json.pagination.total).toBe(0)
    expect((await get('/discovery/resources?scheme=upto')).json.pagination.total).toBe(0)
  })

  it('refuses a malformed query with 400', async () => {
    for (const query of ['limit=0', 'limit=101', 'offset=-1', 'payTo=nope', 'colour=blue']) {
      const { status, json } = await get(`/discovery/resources?${query}`)
      expect(status, query).toBe(400)
      expect(json).toMatchObject({ error: { code: 'invalid_request_body' } })
    }
  })
})

describe('GET /discovery/search', () => {
  it('finds every word in any case across both sources, hiding suspended listings', async () => {
    const forecast = await get('/discovery/search?query=FORECASTS')
    expect(forecast.json.query).toBe('forecasts')
    expect(forecast.json.items.map((i) => i.resource)).toEqual(['https://seller-0.example/v1/call'])
    const weather = await get('/discovery/search?query=weather&limit=100')
    const sources = weather.json.items.map((i) => i.metadata.source)
    expect(sources).toContain('gateway')
    expect(sources.at(-1)).toBe('seller')
    expect(
      weather.json.items.some((i) => i.metadata.name === `seller's name: "Suspended forecast"`),
    ).toBe(false)
    const both = await get('/discovery/search?query=weather%20city%20hourly')
    expect(both.json.items.map((i) => i.metadata.id)).toHaveLength(1)
  })

  it('matches word beginnings, not inner substrings; punctuation separates words', async () => {
    // The rule of searchWords.ts, changed on purpose from substrings: `weath` begins "weather",
    // `eather` begins no word.
    const prefix = await get('/discovery/search?query=weath&limit=100')
    expect(prefix.json.items.map((i) => i.resource)).toContain('https://seller-0.example/v1/call')
    expect((await get('/discovery/search?query=eather')).json.items).toEqual([])
    // `100%` is the word `100`: the listing named "Percent_literal 100%" has it.
    const percent = await get('/discovery/search?query=100%25&limit=100')
    expect(percent.json.items.map((i) => i.metadata.name)).toContain(
      `seller's name: "Percent_literal 100%"`,
    )
    // `per_ent` is the words `per` and `ent`: no word of that listing begins with `ent`.
    const split = await get('/discovery/search?query=per_ent&limit=100')
    expect(split.json.items.map((i) => i.metadata.name)).not.toContain(
      `seller's name: "Percent_literal 100%"`,
    )
  })

  it('needs a query', async () => {
    expect((await get('/discovery/search')).status).toBe(400)
    expect((await get('/discovery/search?query=%20')).status).toBe(400)
    // Punctuation only: no word to look for.
    expect((await get('/discovery/search?query=%25%25%25')).status).toBe(400)
  })
})

describe('the documents list the listed sellers', () => {
  it('/.well-known/x402.json has them after the gateway resources', async () => {
    const manifest = (await (await fetch(`${base}/.well-known/x402.json`)).json()) as {
      documents: Record<string, string>
      resources: { resource: string; seller?: string; accepts: { payTo: string }[] }[]
    }
    expect(manifest.resources).toHaveLength(own + 2)
    expect(manifest.resources.at(-1)).toMatchObject({
      resource: 'https://seller-0.example/v1/call',
      seller: sellerA,
      accepts: [{ payTo: sellerA, maxAmountRequired: '10000' }],
    })
    expect(manifest.documents.discovery).toBe('https://gw.example/discovery/resources')
  })

  it('/llms.txt has a section of them, and drops one once it is suspended', async () => {
    const text = await (await fetch(`${base}/llms.txt`)).text()
    expect(text).toContain('## Listed seller endpoints')
    expect(text).toContain(
      `- \`POST https://seller-0.example/v1/call\`: 0.010000 USDC to \`${sellerA}\`. seller's name: "Weather oracle", seller's description: "Hourly forecasts for any city". Tags: weather. seller's example body: "{\\"city\\":\\"Lisbon\\"}"`,
    )
    expect(text).not.toContain('Suspended forecast')
    const { listings } = await store.searchListings({
      state: 'listed',
      seller: sellerA,
      limit: 1,
      offset: 0,
    })
    await store.setListingState(
      listings[0]?.id ?? '',
      { state: 'suspended', consecutiveFailures: 3 },
      new Date(3_000),
    )
    const after = await (await fetch(`${base}/llms.txt`)).text()
    expect(after).not.toContain('Weather oracle')
    expect(after).toContain('Percent_literal 100%')
  })
})
