/**
 * Anonymous nonces do not pile up: `POST /v1/agent/endpoint/prepare` (which stores one nonce per
 * call, for any address) is limited per client IP address — the socket's peer, or with
 * `trustProxy` the last `X-Forwarded-For` entry, never a header the client chose otherwise — the
 * outstanding nonces are capped, and expired ones are deleted; on SQLite and PostgreSQL, over HTTP
 * on loopback.
 */
import type { AddressInfo } from 'node:net'
import { createAdaptorServer } from '@hono/node-server'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { GatewayDatabase } from '../db/database.js'
import { testEngines } from '../db/testHelpers.js'
import { createRateLimiter } from '../inference/limits.js'
import { marketplaceRoutes } from './routes.js'
import { createMutationSigner } from './signing.js'
import { createMarketplaceStore, type MarketplaceStore } from './store.js'

const ttlMs = 60_000
const maxOutstanding = 40

type Served = { base: string; close(): Promise<void> }

/** The agent routes on a real HTTP server, with the Node bindings passed on (the peer address). */
async function serve(routes: ReturnType<typeof marketplaceRoutes>): Promise<Served> {
  const server = createAdaptorServer({ fetch: (request, env) => routes.fetch(request, env) })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

const body = { op: 'delist', listingId: `lst_${'0'.repeat(24)}` }

async function prepare(
  base: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; retryAfter: string | null; json: Record<string, unknown> }> {
  const response = await fetch(`${base}/endpoint/prepare`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({
      address: Ed25519Keypair.generate().toSuiAddress(),
      action: 'service',
      body,
    }),
  })
  return {
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    json: (await response.json()) as Record<string, unknown>,
  }
}

async function rows(database: GatewayDatabase): Promise<number> {
  const found = await database.db
    .selectFrom('marketplace_nonces')
    .select((eb) => eb.fn.countAll<string | number | bigint>().as('n'))
    .executeTakeFirst()
  return Number(found?.n ?? 0)
}

for (const engine of testEngines('nonces')) {
  describe.skipIf(engine.skip)(`nonces on ${engine.name}`, () => {
    let database: GatewayDatabase
    let store: MarketplaceStore
    let clock = 1_700_000_000_000
    let served: Served
    beforeAll(async () => {
      database = await engine.open()
      store = createMarketplaceStore(database.db)
      const now = () => clock
      const signer = createMutationSigner({
        store,
        nonceTtlMs: ttlMs,
        maxOutstandingNonces: maxOutstanding,
        now,
      })
      served = await serve(marketplaceRoutes({ store, signer, now }))
    })
    afterAll(async () => {
      await served?.close()
      await database?.close()
      await engine.cleanup()
    })

    it('keeps at most the cap outstanding, answers 429 past it, and deletes expired nonces', async () => {
      const answers = []
      for (let i = 0; i < 3 * maxOutstanding; i++) answers.push(await prepare(served.base))
      const issued = answers.filter((a) => a.status === 201)
      const refused = answers.filter((a) => a.status !== 201)
      expect(issued).toHaveLength(maxOutstanding)
      expect(refused.every((a) => a.status === 429 && a.json.code === 'rate_limited')).toBe(true)
      expect(refused[0]?.retryAfter).toBe(String(ttlMs / 1000))
      expect(await rows(database)).toBe(maxOutstanding)

      // Expired, they no longer count: new ones are issued at once.
      clock += ttlMs
      expect((await prepare(served.base)).status).toBe(201)
      // Expired more than a lifetime ago, they are deleted: left are the last two issued.
      clock += ttlMs + 1
      expect((await prepare(served.base)).status).toBe(201)
      expect(await rows(database)).toBe(2)
    })

    it('a late signer of an expired nonce is still told nonce_expired, not unknown_nonce', async () => {
      const signer = createMutationSigner({ store, nonceTtlMs: ttlMs, now: () => clock })
      const keypair = Ed25519Keypair.generate()
      const address = keypair.toSuiAddress()
      const prepared = await signer.prepare({ address, action: 'service', body })
      if (prepared.status !== 'prepared') throw new Error('not prepared')
      const { signature } = await keypair.signPersonalMessage(
        new TextEncoder().encode(prepared.message),
      )
      clock += ttlMs
      await signer.prepare({ address, action: 'service', body })
      expect(
        await signer.verify({ address, action: 'service', body, nonce: prepared.nonce, signature }),
      ).toEqual({ ok: false, reason: 'nonce_expired' })
    })

    it('3 000 prepares from one client leave only what its limit allows', async () => {
      const limited = await serve(
        marketplaceRoutes({
          store,
          signer: createMutationSigner({ store, nonceTtlMs: ttlMs, now: () => clock }),
          now: () => clock,
          prepareLimit: { limiter: createRateLimiter({ points: 30 }), trustProxy: false },
        }),
      )
      clock += 3 * ttlMs
      try {
        const before = await rows(database)
        const statuses = new Map<number, number>()
        for (let round = 0; round < 30; round++) {
          const answers = await Promise.all(
            Array.from({ length: 100 }, () => prepare(limited.base)),
          )
          for (const a of answers) statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1)
        }
        expect(Object.fromEntries(statuses)).toEqual({ 201: 30, 429: 2_970 })
        expect((await rows(database)) - before).toBeLessThanOrEqual(30)
      } finally {
        await limited.close()
      }
    })
  })
}

describe('the prepare limit per client IP address', () => {
  const engine = testEngines('nonceip')[0]
  let database: GatewayDatabase
  let store: MarketplaceStore
  beforeAll(async () => {
    database = await (engine as NonNullable<typeof engine>).open()
    store = createMarketplaceStore(database.db)
  })
  afterAll(async () => {
    await database?.close()
    await engine?.cleanup()
  })

  const start = (trustProxy: boolean) =>
    serve(
      marketplaceRoutes({
        store,
        signer: createMutationSigner({ store }),
        prepareLimit: { limiter: createRateLimiter({ points: 2 }), trustProxy },
      }),
    )

  it('counts the socket peer: a client cannot pick a new address with X-Forwarded-For', async () => {
    const served = await start(false)
    try {
      const statuses = []
      for (let i = 0; i < 4; i++) {
        statuses.push((await prepare(served.base, { 'x-forwarded-for': `203.0.113.${i}` })).status)
      }
      expect(statuses).toEqual([201, 201, 429, 429])
      const limited = await prepare(served.base)
      expect(limited).toMatchObject({ status: 429, json: { code: 'rate_limited' } })
      expect(Number(limited.retryAfter)).toBeGreaterThanOrEqual(1)
    } finally {
      await served.close()
    }
  })

  it('with TRUST_PROXY, counts the address the proxy appended (the last X-Forwarded-For entry)', async () => {
    const served = await start(true)
    try {
      const from = (client: string, spoofed = '198.51.100.7') =>
        prepare(served.base, { 'x-forwarded-for': `${spoofed}, ${client}` }).then((a) => a.status)
      expect([
        await from('203.0.113.1'),
        await from('203.0.113.1'),
        await from('203.0.113.1'),
      ]).toEqual([201, 201, 429])
      // Another client behind the proxy has its own count; what the client wrote first is ignored.
      expect(await from('203.0.113.2', '203.0.113.1')).toBe(201)
    } finally {
      await served.close()
    }
  })
})
