/**
 * The catalog page's marketplace part, read from a SQLite store: listed seller endpoints with their
 * state, price and their seller's rating; suspended and delisted ones not shown (docs/marketplace.md, "Re-probes"); the
 * activity feed newest first; every seller-supplied value HTML-escaped; a store that fails leaves
 * the catalog page itself served.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { defaultCatalog } from '../catalog/default.js'
import { type GatewayDatabase, openDatabase } from '../db/database.js'
import { type ActivityStore, createActivityStore } from '../marketplace/activity.js'
import { createReviewStore, type ReviewStore } from '../marketplace/reviews.js'
import { createMarketplaceStore, type MarketplaceStore } from '../marketplace/store.js'
import { catalogPage, catalogPageRenderer } from './page.js'
import { catalogPageRoute, loadMarketplaceView, type MarketplaceView } from './pageMarketplace.js'

const catalog = defaultCatalog()
const options = {
  publicBaseUrl: 'https://gw.example/',
  payTo: `0x${'5c'.repeat(32)}`,
  network: 'sui:mainnet',
  asset: '0x2::usdc::USDC',
}
const sellerA = `0x${'a1'.repeat(32)}`
const sellerB = `0x${'b2'.repeat(32)}`
const buyer = `0x${'c3'.repeat(32)}`
const evil = `<img src=x onerror="alert('x')"> & co`

let database: GatewayDatabase
let store: MarketplaceStore
let reviews: ReviewStore
let activity: ActivityStore
let view: MarketplaceView
let html: string

beforeAll(async () => {
  database = await openDatabase({ kind: 'sqlite', file: ':memory:' })
  store = createMarketplaceStore(database.db)
  reviews = createReviewStore(database.db)
  activity = createActivityStore(database.db)
  const listings = [
    { seller: sellerA, name: 'Weather oracle', tags: ['weather'], price: 20_000n },
    { seller: sellerB, name: evil, tags: ['evil-tag'], price: 1_500_000n },
    { seller: sellerB, name: 'Suspended forecast', tags: [], price: 10_000n },
    { seller: sellerA, name: 'Delisted thing', tags: [], price: 10_000n },
  ]
  const ids: string[] = []
  for (const [i, l] of listings.entries()) {
    const listing = await store.putListing(
      {
        url: `https://seller-${i}.example/v1/call?q="${i}"`,
        method: 'POST',
        probeBody: '{}',
        description: i === 1 ? evil : `Listing ${i}`,
        network: 'sui:mainnet',
        asset: options.asset,
        payTo: l.seller,
        nextProbeAtMs: 0,
        ...l,
      },
      new Date(1_000 + i),
    )
    ids.push(listing.id)
  }
  const at = new Date(3_000)
  await store.setListingState(ids[1] as string, { state: 'listed', consecutiveFailures: 2 }, at)
  await store.setListingState(ids[2] as string, { state: 'suspended', consecutiveFailures: 3 }, at)
  await store.setListingState(ids[3] as string, { state: 'delisted', consecutiveFailures: 0 }, at)
  for (const [i, rating] of [5, 4].entries()) {
    await reviews.add({
      seller: sellerA,
      buyer,
      purchase: `digest-${i}`,
      rating,
      text: 'good',
      createdAt: new Date(4_000 + i).toISOString(),
      value: 200_000n,
    })
  }
  for (const [i, amount] of [20_000n, 1_500_000n].entries()) {
    await activity.add({
      source: i === 0 ? 'gateway' : 'report',
      digest: `${'D'.repeat(40)}${i}`,
      seller: i === 0 ? options.payTo : sellerB,
      buyer,
      amount,
      asset: options.asset,
      resource: i === 0 ? 'https://gw.example/openai/v1/chat/completions' : null,
      at: new Date(Date.UTC(2026, 10, 25, 12, i)).toISOString(),
    })
  }
  view = await loadMarketplaceView({ store, reviews, activity })
  html = catalogPage(catalog, options, view)
})

afterAll(async () => {
  await database?.close()
})

/** The rows of listed sellers, each as its cells' text (tags stripped of markup). */
const sellerRows = (page: string) =>
  [...page.matchAll(/<tr data-listing="[^"]+"[^>]*>(.*?)<\/tr>/g)].map((m) =>
    [...(m[1] ?? '').matchAll(/<td[^>]*>(.*?)<\/td>/g)].map((c) =>
      (c[1] ?? '').replace(/<br>/g, ' | ').replace(/<[^>]+>/g, ''),
    ),
  )

describe('the marketplace on the catalog page', () => {
  it('lists the listed endpoints, newest first, with state, price and rating', () => {
    expect(view.total).toBe(2)
    expect(html).toContain('services, ')
    expect(html).toContain(' paid endpoints, 2 listed seller endpoints. Pay per request')
    const rows = sellerRows(html)
    expect(rows.map((r) => r.slice(1, 3))).toEqual([
      ['1.500000 USDC', 'listed (2 of 3 re-probes failed)'],
      ['0.020000 USDC', 'listed'],
    ])
    expect(rows[1]?.[0]).toBe(
      'Weather oracle | POST https://seller-0.example/v1/call?q=&quot;0&quot;',
    )
    expect(rows[0]?.[3]).toContain('no reviews yet')
    // One buyer's two reviews: its latest counts.
    expect(rows[1]?.[3]).toContain('★ 4.00 from 1 buyer (2 reviews)')
    expect(html).toContain(`<a href="https://gw.example/v1/agent/${sellerA}">`)
  })

  it('does not show suspended or delisted endpoints', () => {
    expect(html).not.toContain('Suspended forecast')
    expect(html).not.toContain('Delisted thing')
  })

  it('escapes what sellers wrote (name, description, URL)', () => {
    expect(html).not.toContain('<img')
    expect(html).toContain('&lt;img src=x onerror=&quot;alert(&#39;x&#39;)&quot;&gt; &amp; co')
  })

  it('shows the activity feed newest first, with the live stream wired', () => {
    const items = [
      ...html.matchAll(/<li data-id="[^"]+" data-at="([^"]+)" data-digest="[^"]+">(.*?)<\/li>/g),
    ]
    expect(items.map((m) => m[1])).toEqual(['2026-11-25T12:01:00.000Z', '2026-11-25T12:00:00.000Z'])
    const text = items.map((m) => (m[2] ?? '').replace(/<[^>]+>/g, ''))
    expect(text[0]).toBe(
      '2026-11-25 12:01:00 UTC 1.500000 USDC from 0xc3c3…c3c3 to 0xb2b2…b2b2 reported, found on the ledger',
    )
    expect(text[1]).toBe(
      '2026-11-25 12:00:00 UTC 0.020000 USDC from 0xc3c3…c3c3 to 0x5c5c…5c5c for https://gw.example/openai/v1/chat/completions through the gateway',
    )
    expect(html).toContain('data-stream="https://gw.example/v1/activity/stream"')
    expect(html).not.toContain('id="feed-empty">')
  })

  it('without a feed, shows the listings and no feed or its script', async () => {
    const page = catalogPage(catalog, options, await loadMarketplaceView({ store }))
    expect(sellerRows(page)).toHaveLength(2)
    expect(page).not.toContain('id="feed"')
    expect(page.match(/<script>/g)).toHaveLength(1)
  })

  it('serves the catalog without the marketplace when reading it fails, and says why', async () => {
    const errors: unknown[] = []
    const failing = {
      ...store,
      searchListings: () => Promise.reject(new Error('database away')),
    }
    const route = catalogPageRoute(catalogPageRenderer(catalog, options), { store: failing }, (e) =>
      errors.push(e),
    )
    const response = await route()
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8')
    const page = await response.text()
    expect(page).toBe(catalogPage(catalog, options))
    expect(errors).toEqual([new Error('database away')])
    const served = await catalogPageRoute(catalogPageRenderer(catalog, options), {
      store,
      reviews,
      activity,
    })()
    expect(await served.text()).toBe(html)
  })
})
