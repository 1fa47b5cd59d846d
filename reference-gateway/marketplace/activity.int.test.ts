/**
 * The activity feed over loopback, on the ledger emulator and a SQLite store: a payment made
 * directly to a listed seller and reported is checked on the ledger and enters the feed once; a
 * digest that paid someone else, one that does not exist, a report naming an address that lists
 * nothing, and a second report of one digest do not; gateway sales enter once; the feed pages
 * newest first and streams new items as server-sent events.
 */
import { randomBytes } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import { createAdaptorServer } from '@hono/node-server'
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { toBase58 } from '@mysten/sui/utils'
import { createLedger, type Ledger } from 'tollgate'
import { MAINNET_USDC_TYPE, useTestLedger } from 'tollgate/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type GatewayDatabase, openDatabase } from '../db/database.js'
import {
  type ActivityStore,
  activityRoutes,
  createActivityStore,
  recordGatewaySale,
} from './activity.js'
import { createMarketplaceStore, type MarketplaceStore } from './store.js'

const chain = useTestLedger({ beforeAll, afterAll })
let ledger: Ledger
let database: GatewayDatabase
let store: MarketplaceStore
let activity: ActivityStore
let server: ReturnType<typeof createAdaptorServer>
let base: string
let seller: Ed25519Keypair
let buyer: Ed25519Keypair
const gatewayPayTo = `0x${'5c'.repeat(32)}`

type Item = { source: string; digest: string; seller: string; buyer: string; amount: string }

beforeAll(async () => {
  ledger = createLedger({ url: chain.url })
  database = await openDatabase({ kind: 'sqlite', file: ':memory:' })
  store = createMarketplaceStore(database.db)
  activity = createActivityStore(database.db)
  seller = chain.createTestWallet({ usdc: '0' })
  buyer = chain.createTestWallet({ usdc: '5', sui: '1' })
  await store.putListing(
    {
      seller: seller.toSuiAddress(),
      url: 'https://seller.example/v1/answer',
      method: 'POST',
      probeBody: '{}',
      name: 'Answer',
      description: '',
      tags: [],
      network: 'sui:mainnet',
      asset: MAINNET_USDC_TYPE,
      price: 50_000n,
      payTo: seller.toSuiAddress(),
      nextProbeAtMs: 0,
    },
    new Date(),
  )
  const routes = activityRoutes({ activity, store, ledger, asset: MAINNET_USDC_TYPE, pollMs: 20 })
  server = createAdaptorServer({ fetch: (request) => routes.fetch(request) })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  ;(server as import('node:http').Server | undefined)?.closeAllConnections()
  await new Promise((resolve) => server?.close(resolve))
  await database?.close()
})

/** `buyer` pays `amount` base units of USDC to `to`; resolves with the digest. */
async function pay(to: string, amount: bigint): Promise<string> {
  const bytes = await ledger.buildTransfer({
    sender: buyer.toSuiAddress(),
    to,
    amount,
    coinType: MAINNET_USDC_TYPE,
  })
  const { signature } = await buyer.signTransaction(bytes)
  const outcome = await ledger.execute(bytes, [signature])
  if (outcome.status !== 'executed' || !outcome.transaction.success) throw new Error('not paid')
  return outcome.transaction.digest
}

const report = async (body: unknown) => {
  const response = await fetch(`${base}/api/mpp/report`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  return { status: response.status, json: (await response.json()) as Record<string, unknown> }
}

const feed = async (query = '') =>
  (await (await fetch(`${base}/v1/activity${query}`)).json()) as { items: Item[]; total: number }

describe('POST /api/mpp/report', () => {
  it('puts a payment to a listed seller in the feed once, after finding it on the ledger', async () => {
    const digest = await pay(seller.toSuiAddress(), 50_000n)
    const first = await report({ digest, seller: seller.toSuiAddress() })
    expect(first.status, JSON.stringify(first.json)).toBe(201)
    expect(first.json).toMatchObject({
      source: 'report',
      digest,
      seller: seller.toSuiAddress(),
      buyer: buyer.toSuiAddress(),
      amount: '50000',
    })
    const again = await report({ digest, seller: seller.toSuiAddress() })
    expect(again.status).toBe(422)
    expect(again.json).toMatchObject({
      error: { code: 'report_refused', reason: 'already_reported' },
    })
    expect((await feed()).items.filter((i) => i.digest === digest)).toHaveLength(1)
  })

  it('keeps out a digest that paid someone else, one that does not exist, and a non-seller', async () => {
    const before = (await feed()).total
    const elsewhere = await pay(chain.createTestWallet({ usdc: '0' }).toSuiAddress(), 10_000n)
    const paidElsewhere = await report({ digest: elsewhere, seller: seller.toSuiAddress() })
    expect(paidElsewhere.json).toMatchObject({ error: { reason: 'not_paying_seller' } })
    const missing = await report({
      digest: toBase58(randomBytes(32)),
      seller: seller.toSuiAddress(),
    })
    expect(missing.json).toMatchObject({ error: { reason: 'not_found' } })
    const paidSeller = await pay(seller.toSuiAddress(), 10_000n)
    const nobody = await report({ digest: paidSeller, seller: buyer.toSuiAddress() })
    expect(nobody.json).toMatchObject({ error: { reason: 'not_a_seller' } })
    for (const answer of [paidElsewhere, missing, nobody]) expect(answer.status).toBe(422)
    expect((await feed()).total).toBe(before)
    expect((await report({ digest: 'x', seller: seller.toSuiAddress() })).status).toBe(400)
    expect((await report({ digest: paidSeller })).status).toBe(400)
  })
})

describe('the feed', () => {
  it('records each gateway sale once, pages newest first, refuses a bad query', async () => {
    const sale = {
      digest: toBase58(randomBytes(32)),
      payer: buyer.toSuiAddress(),
      amount: 20_000n,
      resource: 'https://gw.example/v1/x',
    }
    const gateway = { payTo: gatewayPayTo, asset: MAINNET_USDC_TYPE }
    await recordGatewaySale(activity, gateway, sale, new Date(Date.now() + 60_000))
    await recordGatewaySale(activity, gateway, sale, new Date(Date.now() + 60_000))
    const all = await feed('?limit=100')
    expect(all.items.filter((i) => i.digest === sale.digest)).toHaveLength(1)
    expect(all.items[0]).toMatchObject({
      source: 'gateway',
      digest: sale.digest,
      seller: gatewayPayTo,
    })
    const second = await feed('?limit=1&offset=1')
    expect(second.items).toEqual([all.items[1]])
    expect(second.total).toBe(all.total)
    expect((await fetch(`${base}/v1/activity?limit=0`)).status).toBe(400)
    expect((await fetch(`${base}/v1/activity?colour=blue`)).status).toBe(400)
  })

  it('streams new items as server-sent events', async () => {
    const controller = new AbortController()
    const response = await fetch(`${base}/v1/activity/stream`, { signal: controller.signal })
    expect(response.headers.get('content-type')).toContain('text/event-stream')
    const reader = (response.body as ReadableStream<Uint8Array>).getReader()
    const decoder = new TextDecoder()
    let text = ''
    try {
      await new Promise((resolve) => setTimeout(resolve, 50))
      const digest = await pay(seller.toSuiAddress(), 30_000n)
      expect((await report({ digest, seller: seller.toSuiAddress() })).status).toBe(201)
      const deadline = Date.now() + 10_000
      while (!text.includes(digest) && Date.now() < deadline) {
        const { value, done } = await reader.read()
        if (done) break
        text += decoder.decode(value, { stream: true })
      }
      expect(text).toContain('event: activity')
      const data = text
        .split('\n')
        .find((line) => line.startsWith('data: ') && line.includes(digest))
      expect(JSON.parse((data ?? '').slice(6))).toMatchObject({
        digest,
        amount: '30000',
        source: 'report',
      })
      // Only what happened after it opened: the earlier items are on the page, not in the stream.
      expect(text.split('event: activity').length - 1).toBe(1)
    } finally {
      controller.abort()
      await reader.cancel().catch(() => {})
    }
  })
})
