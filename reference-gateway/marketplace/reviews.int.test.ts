/**
 * Reviews of the gateway's paid calls over loopback, with purchases in a real payment store and
 * reviews in a SQLite store: a buyer of a served call reviews it (signed, prepared like any catalog
 * mutation) and it shows with the seller's rating; every rule refuses with its reason and stores
 * nothing — no purchase, another seller, not the buyer, a self-purchase, a refunded purchase, one
 * not yet served, a bad rating, a second review (also two at once) — and a forged signature is 401.
 */
import { randomBytes } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import { createAdaptorServer } from '@hono/node-server'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { toBase58 } from '@mysten/sui/utils'
import { Hono } from 'hono'
import { createMemoryStore, type PaymentStore } from 'tollgate'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type GatewayDatabase, openDatabase } from '../db/database.js'
import { createReviewStore, gatewayPurchases, type ReviewStore, reviewRoutes } from './reviews.js'
import { marketplaceRoutes } from './routes.js'
import { createMutationSigner } from './signing.js'
import { createMarketplaceStore } from './store.js'

const gateway = Ed25519Keypair.generate()
const buyer = Ed25519Keypair.generate()
const stranger = Ed25519Keypair.generate()
const otherSeller = Ed25519Keypair.generate().toSuiAddress()

let database: GatewayDatabase
let payments: PaymentStore
let reviews: ReviewStore
let server: ReturnType<typeof createAdaptorServer>
let base: string

const digest = () => toBase58(randomBytes(32))

/** A purchase from the gateway paid by `payer` (0.20 USDC unless said), taken to `state`. */
async function purchase(
  payer: string,
  state: 'settled' | 'served' | 'refund_due' | 'refunded',
  amount = 200_000n,
) {
  const d = digest()
  const resource = 'https://gw.example/v1/answer'
  await payments.claim(d, { resource, dialect: 'x402' })
  await payments.settled(d, {
    payer,
    amount,
    resource,
    dialect: 'x402',
    network: 'sui:mainnet',
    asset: '0x2::usdc::USDC',
    settledAt: new Date(),
  })
  if (state === 'served') await payments.served(d)
  if (state === 'refund_due' || state === 'refunded') await payments.oweRefund(d, 'upstream 502')
  if (state === 'refunded') await payments.refunded(d, digest())
  return d
}

beforeAll(async () => {
  database = await openDatabase({ kind: 'sqlite', file: ':memory:' })
  const store = createMarketplaceStore(database.db)
  const signer = createMutationSigner({ store })
  payments = createMemoryStore()
  reviews = createReviewStore(database.db)
  const app = new Hono()
  app.route('/v1/agent', marketplaceRoutes({ store, signer }))
  app.route(
    '/v1/reviews',
    reviewRoutes({
      reviews,
      purchases: gatewayPurchases(payments, gateway.toSuiAddress()),
      signer,
    }),
  )
  server = createAdaptorServer({ fetch: (request) => app.fetch(request) })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve))
  await payments?.close()
  await database?.close()
})

const post = async (path: string, body: unknown) => {
  const response = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  return { status: response.status, json: (await response.json()) as Record<string, unknown> }
}

/** Prepares, signs (as `signer`) and posts a review. */
async function review(
  signer: Ed25519Keypair,
  body: { seller?: string; purchase: string; rating?: number; text?: string },
) {
  const full = { seller: gateway.toSuiAddress(), rating: 5, text: 'Fast and right.', ...body }
  const address = signer.toSuiAddress()
  const prepared = await post('/v1/agent/endpoint/prepare', {
    address,
    action: 'review',
    body: full,
  })
  expect(prepared.status).toBe(201)
  const { nonce, message } = prepared.json as { nonce: string; message: string }
  const { signature } = await signer.signPersonalMessage(new TextEncoder().encode(message))
  return post('/v1/reviews', { address, nonce, signature, body: full })
}

const listed = async (seller = gateway.toSuiAddress()) =>
  (await (await fetch(`${base}/v1/reviews?seller=${seller}`)).json()) as {
    rating: { average: number | null; buyers: number; count: number }
    reviews: { purchase: string; rating: number; text: string; buyer: string }[]
  }

describe('reviews of paid calls', () => {
  it('takes a signed review of a served purchase by its buyer, and shows it with the rating', async () => {
    const served = await purchase(buyer.toSuiAddress(), 'served')
    const answer = await review(buyer, { purchase: served, rating: 4, text: 'Good.' })
    expect(answer.status, JSON.stringify(answer.json)).toBe(201)
    expect(answer.json).toMatchObject({
      purchase: served,
      rating: 4,
      buyer: buyer.toSuiAddress(),
      value: '200000',
      counts: true,
    })
    const second = await purchase(buyer.toSuiAddress(), 'served')
    expect((await review(buyer, { purchase: second, rating: 5 })).status).toBe(201)
    const shown = await listed()
    // One buyer: its latest review counts; both are listed.
    expect(shown.rating).toEqual({ average: 5, buyers: 1, count: 2 })
    expect(shown.reviews.map((r) => [r.purchase, r.rating])).toEqual([
      [second, 5],
      [served, 4],
    ])
  })

  it('takes a review of a dust purchase but does not count it: the rating stays the buyers’', async () => {
    const before = await listed()
    const puppet = Ed25519Keypair.generate()
    const dust = await purchase(puppet.toSuiAddress(), 'served', 1n)
    const answer = await review(puppet, { purchase: dust, rating: 1 })
    expect(answer.status).toBe(201)
    expect(answer.json).toMatchObject({ value: '1', counts: false })
    const after = await listed()
    expect(after.rating).toEqual({ ...before.rating, count: before.rating.count + 1 })
    expect(after.reviews.some((r) => r.purchase === dust)).toBe(true)
    // The same buyer at the minimum value (0.10 USDC) counts, as one more distinct buyer.
    const real = await purchase(puppet.toSuiAddress(), 'served', 100_000n)
    expect((await review(puppet, { purchase: real, rating: 1 })).json).toMatchObject({
      counts: true,
    })
    const counted = await listed()
    expect(counted.rating.buyers).toBe(before.rating.buyers + 1)
    expect(counted.rating.average).toBeLessThan(before.rating.average as number)
  })

  it.each([
    ['no purchase with this digest', async () => ({ purchase: digest() }), buyer, 'no_purchase'],
    [
      'a purchase named with another seller',
      async () => ({
        purchase: await purchase(buyer.toSuiAddress(), 'served'),
        seller: otherSeller,
      }),
      buyer,
      'no_purchase',
    ],
    [
      'someone other than the buyer',
      async () => ({ purchase: await purchase(buyer.toSuiAddress(), 'served') }),
      stranger,
      'not_buyer',
    ],
    [
      'a self-purchase (the seller paid itself)',
      async () => ({ purchase: await purchase(gateway.toSuiAddress(), 'served') }),
      gateway,
      'self_purchase',
    ],
    [
      'a purchase owed a refund',
      async () => ({ purchase: await purchase(buyer.toSuiAddress(), 'refund_due') }),
      buyer,
      'refunded',
    ],
    [
      'a refunded purchase',
      async () => ({ purchase: await purchase(buyer.toSuiAddress(), 'refunded') }),
      buyer,
      'refunded',
    ],
    [
      'a purchase settled but not served yet',
      async () => ({ purchase: await purchase(buyer.toSuiAddress(), 'settled') }),
      buyer,
      'not_completed',
    ],
    [
      '0 stars',
      async () => ({ purchase: await purchase(buyer.toSuiAddress(), 'served'), rating: 0 }),
      buyer,
      'invalid_rating',
    ],
    [
      '6 stars',
      async () => ({ purchase: await purchase(buyer.toSuiAddress(), 'served'), rating: 6 }),
      buyer,
      'invalid_rating',
    ],
    [
      '4.5 stars',
      async () => ({ purchase: await purchase(buyer.toSuiAddress(), 'served'), rating: 4.5 }),
      buyer,
      'invalid_rating',
    ],
  ] as const)('refuses %s and stores nothing', async (_, make, signer, reason) => {
    const before = await listed()
    const answer = await review(signer, await make())
    expect(answer.status).toBe(403)
    expect(answer.json).toMatchObject({ code: 'review_refused', reason })
    expect(await listed()).toEqual(before)
  })

  it('refuses a second review of one purchase, also when two arrive at once', async () => {
    const once = await purchase(buyer.toSuiAddress(), 'served')
    expect((await review(buyer, { purchase: once })).status).toBe(201)
    const again = await review(buyer, { purchase: once, rating: 1, text: 'Changed my mind.' })
    expect(again.status).toBe(403)
    expect(again.json).toMatchObject({ reason: 'already_reviewed' })
    const raced = await purchase(buyer.toSuiAddress(), 'served')
    const answers = await Promise.all([1, 2, 3].map(() => review(buyer, { purchase: raced })))
    expect(answers.map((a) => a.status).sort()).toEqual([201, 403, 403])
    const shown = await listed()
    expect(shown.reviews.filter((r) => r.purchase === raced)).toHaveLength(1)
    expect(shown.reviews.filter((r) => r.purchase === once)).toHaveLength(1)
  })

  it('refuses a forged signature with 401 and stores nothing', async () => {
    const served = await purchase(buyer.toSuiAddress(), 'served')
    const body = { seller: gateway.toSuiAddress(), purchase: served, rating: 1, text: 'forged' }
    const prepared = await post('/v1/agent/endpoint/prepare', {
      address: buyer.toSuiAddress(),
      action: 'review',
      body,
    })
    const { nonce, message } = prepared.json as { nonce: string; message: string }
    const { signature } = await stranger.signPersonalMessage(new TextEncoder().encode(message))
    const answer = await post('/v1/reviews', {
      address: buyer.toSuiAddress(),
      nonce,
      signature,
      body,
    })
    expect(answer.status).toBe(401)
    expect(answer.json).toMatchObject({ code: 'mutation_refused', reason: 'invalid_signature' })
    expect((await listed()).reviews.some((r) => r.purchase === served)).toBe(false)
  })

  it('answers 400 for a malformed review or query, and an empty list for a seller with none', async () => {
    expect((await post('/v1/reviews', { address: buyer.toSuiAddress() })).status).toBe(400)
    const long = await post('/v1/reviews', {
      address: buyer.toSuiAddress(),
      nonce: '0'.repeat(32),
      signature: 'AAAA',
      body: {
        seller: gateway.toSuiAddress(),
        purchase: digest(),
        rating: 5,
        text: 'x'.repeat(2001),
      },
    })
    expect(long.status).toBe(400)
    expect((await fetch(`${base}/v1/reviews?seller=nope`)).status).toBe(400)
    expect((await fetch(`${base}/v1/reviews`)).status).toBe(400)
    expect(await listed(otherSeller)).toMatchObject({
      rating: { average: null, buyers: 0, count: 0 },
      reviews: [],
    })
  })
})
