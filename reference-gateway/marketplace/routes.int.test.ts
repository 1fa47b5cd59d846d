/**
 * Signed catalog mutations over HTTP on loopback, with real Sui personal-message signatures and a
 * SQLite store: the message is the fixed prefix, the nonce and the SHA-256 of the canonical body; a
 * forged signature, a replayed nonce, an expired nonce (injected clock), a nonce of another address
 * and a mutation of another seller's listing are 401 with a reason and change nothing.
 */
import { createHash } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import { createAdaptorServer } from '@hono/node-server'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { type GatewayDatabase, openDatabase } from '../db/database.js'
import { marketplaceRoutes } from './routes.js'
import { createMutationSigner, mutationPrefix } from './signing.js'
import { createMarketplaceStore, type Listing, type MarketplaceStore } from './store.js'

const seller = Ed25519Keypair.generate()
const intruder = Ed25519Keypair.generate()
const ttlMs = 60_000

let database: GatewayDatabase
let store: MarketplaceStore
let server: ReturnType<typeof createAdaptorServer>
let base: string
let clock = 1_700_000_000_000
let listing: Listing

beforeAll(async () => {
  database = await openDatabase({ kind: 'sqlite', file: ':memory:' })
  store = createMarketplaceStore(database.db)
  const now = () => clock
  const signer = createMutationSigner({ store, nonceTtlMs: ttlMs, now })
  const routes = marketplaceRoutes({ store, signer, now })
  server = createAdaptorServer({ fetch: (request) => routes.fetch(request) })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve))
  await database?.close()
})

beforeEach(async () => {
  listing = await store.putListing(
    {
      seller: seller.toSuiAddress(),
      url: `https://seller.example/${Math.random()}`,
      method: 'POST',
      probeBody: '{}',
      name: 'Original',
      description: 'The original description',
      tags: ['qa'],
      network: 'sui:localnet',
      asset: '0x2::usdc::USDC',
      price: 10_000n,
      payTo: seller.toSuiAddress(),
      nextProbeAtMs: clock,
    },
    new Date(clock),
  )
})

const post = async (path: string, body: unknown) => {
  const response = await fetch(`${base}/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  return { status: response.status, json: (await response.json()) as Record<string, unknown> }
}

const prepare = async (address: string, body: unknown) => {
  const { status, json } = await post('endpoint/prepare', { address, action: 'service', body })
  expect(status).toBe(201)
  return json as { nonce: string; message: string; sha256: string; expiresAt: string }
}

const sign = async (keypair: Ed25519Keypair, message: string) =>
  (await keypair.signPersonalMessage(new TextEncoder().encode(message))).signature

/** Prepares, signs with `keypair` and sends, claiming `address`. */
const mutate = async (body: unknown, keypair = seller, address = keypair.toSuiAddress()) => {
  const prepared = await prepare(address, body)
  const signature = await sign(keypair, prepared.message)
  return {
    prepared,
    signature,
    send: () => post('service', { address, nonce: prepared.nonce, signature, body }),
  }
}

const unchanged = async () => {
  const now = await store.getListing(listing.id)
  expect(now).toEqual(listing)
}

describe('signed catalog mutations', () => {
  it('asks to sign the prefix, the nonce and the SHA-256 of the canonical body', async () => {
    const body = { op: 'update', listingId: listing.id, name: 'N', tags: ['a', 'b'] }
    const prepared = await prepare(seller.toSuiAddress(), body)
    // RFC 8785: keys sorted, no white space.
    const canonical = `{"listingId":"${listing.id}","name":"N","op":"update","tags":["a","b"]}`
    const sha256 = createHash('sha256').update(canonical).digest('hex')
    expect(prepared.sha256).toBe(sha256)
    expect(prepared.message).toBe(`${mutationPrefix}nonce: ${prepared.nonce}\nsha256: ${sha256}`)
    expect(prepared.message.startsWith('Tollgate catalog mutation v1\n')).toBe(true)
    expect(Date.parse(prepared.expiresAt)).toBe(clock + ttlMs)
  })

  it('applies an update and a delist signed by the seller', async () => {
    const update = await mutate({ op: 'update', listingId: listing.id, description: 'New' })
    const updated = await update.send()
    expect(updated.status).toBe(200)
    expect(updated.json).toMatchObject({ description: 'New', name: 'Original', state: 'listed' })
    const delist = await mutate({ op: 'delist', listingId: listing.id })
    expect((await delist.send()).json).toMatchObject({ state: 'delisted' })
    expect((await store.getListing(listing.id))?.state).toBe('delisted')
  })

  it('refuses a forged signature and consumes nothing', async () => {
    const body = { op: 'delist', listingId: listing.id }
    const prepared = await prepare(seller.toSuiAddress(), body)
    const forged = await sign(intruder, prepared.message)
    const answer = await post('service', {
      address: seller.toSuiAddress(),
      nonce: prepared.nonce,
      signature: forged,
      body,
    })
    expect(answer.status).toBe(401)
    expect(answer.json).toMatchObject({ code: 'mutation_refused', reason: 'invalid_signature' })
    await unchanged()
    // The nonce was not consumed by the forgery: the seller can still use it.
    const genuine = await sign(seller, prepared.message)
    const ok = await post('service', {
      address: seller.toSuiAddress(),
      nonce: prepared.nonce,
      signature: genuine,
      body,
    })
    expect(ok.status).toBe(200)
  })

  it('refuses a body changed after signing', async () => {
    const signed = await mutate({ op: 'update', listingId: listing.id, name: 'Signed' })
    const answer = await post('service', {
      address: seller.toSuiAddress(),
      nonce: signed.prepared.nonce,
      signature: signed.signature,
      body: { op: 'update', listingId: listing.id, name: 'Tampered' },
    })
    expect(answer.status).toBe(401)
    expect(answer.json).toMatchObject({ reason: 'invalid_signature' })
    await unchanged()
  })

  it('refuses a replayed nonce and changes nothing', async () => {
    const first = await mutate({ op: 'update', listingId: listing.id, name: 'First' })
    expect((await first.send()).status).toBe(200)
    const second = await mutate({ op: 'update', listingId: listing.id, name: 'Second' })
    expect((await second.send()).status).toBe(200)
    listing = (await store.getListing(listing.id)) as Listing
    const replay = await first.send()
    expect(replay.status).toBe(401)
    expect(replay.json).toMatchObject({ code: 'mutation_refused', reason: 'nonce_used' })
    await unchanged()
    expect(listing.name).toBe('Second')
  })

  it('refuses an expired nonce and changes nothing', async () => {
    const signed = await mutate({ op: 'delist', listingId: listing.id })
    clock += ttlMs
    const answer = await signed.send()
    expect(answer.status).toBe(401)
    expect(answer.json).toMatchObject({ reason: 'nonce_expired' })
    await unchanged()
  })

  it('refuses a nonce issued to another address', async () => {
    const body = { op: 'delist', listingId: listing.id }
    const prepared = await prepare(seller.toSuiAddress(), body)
    const answer = await post('service', {
      address: intruder.toSuiAddress(),
      nonce: prepared.nonce,
      signature: await sign(intruder, prepared.message),
      body,
    })
    expect(answer.status).toBe(401)
    expect(answer.json).toMatchObject({ reason: 'wrong_signer' })
    await unchanged()
  })

  it("refuses a correctly signed mutation of another seller's listing", async () => {
    const signed = await mutate({ op: 'delist', listingId: listing.id }, intruder)
    const answer = await signed.send()
    expect(answer.status).toBe(401)
    expect(answer.json).toMatchObject({ code: 'mutation_refused', reason: 'not_the_seller' })
    await unchanged()
  })

  it('answers 400 for a malformed body and 404 for an unknown listing', async () => {
    const bad = await post('endpoint/prepare', { address: 'nope', action: 'service', body: {} })
    expect(bad.status).toBe(400)
    const missing = await mutate({ op: 'delist', listingId: `lst_${'0'.repeat(24)}` })
    const answer = await missing.send()
    expect(answer.status).toBe(404)
    expect(answer.json).toMatchObject({ code: 'listing_not_found' })
  })
})
