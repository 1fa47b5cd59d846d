/**
 * The console's sign-in and its guards, over its routes (`app.request`), on SQLite and PostgreSQL:
 * a wallet's personal-message signature signs an owner in and sets the cookie; a replayed or
 * expired sign-in message, another address's signature and a signature of other text are refused;
 * a cross-site POST (no console header, a foreign or missing Origin) changes nothing even with the
 * cookie; another owner's key id is a 404 like an unknown one; signing out and the sign-in's
 * expiry end it; nonces are rate-limited per client and capped. Usage is summed per day and model
 * from the usage ledger.
 */
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Hono } from 'hono'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { GatewayDatabase } from '../db/database.js'
import { testEngines } from '../db/testHelpers.js'
import { createKeyStore, type KeyStore } from '../inference/keys.js'
import { createRateLimiter } from '../inference/limits.js'
import { buildHint } from './assets.js'
import { type ConsoleOptions, consoleRoutes } from './routes.js'

const origin = 'http://127.0.0.1:4020'
const nonceTtlMs = 5 * 60_000
const signInTtlMs = 60 * 60_000

type Harness = {
  app: Hono
  clock: { now: number }
  keys: KeyStore
}

function harness(database: GatewayDatabase, overrides: Partial<ConsoleOptions> = {}): Harness {
  const clock = { now: Date.UTC(2026, 10, 27, 12) }
  const keys = createKeyStore(database.db)
  const app = new Hono()
  app.route(
    '/console',
    consoleRoutes({
      db: database.db,
      keys,
      publicBaseUrl: origin,
      network: 'sui:mainnet',
      asset: '0x2::sui::SUI',
      payTo: `0x${'5c'.repeat(32)}`,
      topUps: ['1', '5'],
      ledger: { getTransaction: async () => ({ status: 'not_found' }) },
      testMoney: true,
      signIns: { now: () => clock.now, nonceTtlMs, signInTtlMs },
      assets: { status: 'missing', hint: buildHint },
      fetch: async () => new Response(null, { status: 404 }),
      ...overrides,
    }),
  )
  return { app, clock, keys }
}

const mutation = { 'content-type': 'application/json', 'x-tollgate-console': '1', origin }

async function post(
  app: Hono,
  path: string,
  body: unknown,
  headers: Record<string, string> = mutation,
): Promise<Response> {
  return app.request(`/console/api/${path}`, {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
  })
}

async function nonceFor(app: Hono, address: string) {
  const response = await post(app, 'nonce', { address })
  expect(response.status).toBe(200)
  return (await response.json()) as { nonce: string; message: string }
}

/** A nonce for `signer` and its signature of the message: the body of a sign-in. */
async function signedMessage(app: Hono, signer: Ed25519Keypair) {
  const { nonce, message } = await nonceFor(app, signer.toSuiAddress())
  const { signature } = await signer.signPersonalMessage(new TextEncoder().encode(message))
  return { nonce, signature, message }
}

const body = ({ nonce, signature }: { nonce: string; signature: string }) => ({ nonce, signature })

/** Signs `signer` in; returns the cookie header to send. */
async function signIn(app: Hono, signer: Ed25519Keypair): Promise<string> {
  const { nonce, signature } = await signedMessage(app, signer)
  const response = await post(app, 'sign-in', { nonce, signature })
  expect(response.status).toBe(200)
  const cookie = response.headers.get('set-cookie') ?? ''
  return cookie.split(';')[0] as string
}

async function refusal(response: Response) {
  return { status: response.status, ...((await response.json()) as { error: object }).error }
}

for (const engine of testEngines('console')) {
  // PostgreSQL runs when DATABASE_URL is set (CI sets it, and CI_REQUIRE_SERVICES fails the skip).
  describe.skipIf(engine.skip)(`the console's sign-in and guards (${engine.name})`, () => {
    let database: GatewayDatabase

    beforeAll(async () => {
      database = await engine.open()
    })
    afterAll(async () => {
      await database?.close()
      await engine.cleanup()
    })

    it('signs an owner in with a personal message stating domain, address, nonce and times', async () => {
      const { app } = harness(database)
      const owner = new Ed25519Keypair()
      const { nonce, message, signature } = await signedMessage(app, owner)
      expect(message).toBe(
        [
          '127.0.0.1:4020 wants you to sign in to the Tollgate console with your Sui account:',
          owner.toSuiAddress(),
          '',
          'URI: http://127.0.0.1:4020/console',
          `Nonce: ${nonce}`,
          'Issued At: 2026-11-27T12:00:00.000Z',
          'Expiration Time: 2026-11-27T12:05:00.000Z',
        ].join('\n'),
      )
      const response = await post(app, 'sign-in', { nonce, signature })
      expect(await response.json()).toEqual({
        address: owner.toSuiAddress(),
        expiresAt: '2026-11-27T13:00:00.000Z',
      })
      const cookie = response.headers.get('set-cookie') ?? ''
      expect(cookie).toMatch(/^tollgate_sign_in=[A-Za-z0-9_-]{43};/)
      expect(cookie).toContain('HttpOnly')
      expect(cookie).toContain('SameSite=Strict')
      expect(cookie).toContain('Path=/console')
      // Loopback: a browser would not keep a Secure cookie over plain http.
      expect(cookie).not.toContain('Secure')
      const me = await app.request('/console/api/me', {
        headers: { cookie: cookie.split(';')[0] as string },
      })
      expect(await me.json()).toEqual({ address: owner.toSuiAddress() })
    })

    it('sets a Secure cookie when the gateway is not on loopback', async () => {
      const { app } = harness(database, { publicBaseUrl: 'https://gw.example' })
      const owner = new Ed25519Keypair()
      const { nonce, message } = (await (
        await post(
          app,
          'nonce',
          { address: owner.toSuiAddress() },
          { ...mutation, origin: 'https://gw.example' },
        )
      ).json()) as { nonce: string; message: string }
      expect(message.split('\n')[0]).toBe(
        'gw.example wants you to sign in to the Tollgate console with your Sui account:',
      )
      const { signature } = await owner.signPersonalMessage(new TextEncoder().encode(message))
      const response = await post(
        app,
        'sign-in',
        { nonce, signature },
        { ...mutation, origin: 'https://gw.example' },
      )
      expect(response.status).toBe(200)
      expect(response.headers.get('set-cookie')).toContain('Secure')
    })

    it('refuses a replayed sign-in message', async () => {
      const { app } = harness(database)
      const owner = new Ed25519Keypair()
      const signed = await signedMessage(app, owner)
      expect((await post(app, 'sign-in', body(signed))).status).toBe(200)
      const again = await post(app, 'sign-in', body(signed))
      expect(await refusal(again)).toMatchObject({
        status: 401,
        code: 'sign_in_refused',
        reason: 'nonce_used',
      })
      expect(again.headers.get('set-cookie')).toBeNull()
    })

    it('refuses an expired sign-in message', async () => {
      const { app, clock } = harness(database)
      const owner = new Ed25519Keypair()
      const signed = await signedMessage(app, owner)
      clock.now += nonceTtlMs
      expect(await refusal(await post(app, 'sign-in', body(signed)))).toMatchObject({
        status: 401,
        reason: 'nonce_expired',
      })
    })

    it('refuses another address’s signature, and consumes nothing', async () => {
      const { app } = harness(database)
      const owner = new Ed25519Keypair()
      const thief = new Ed25519Keypair()
      const { nonce, message } = await nonceFor(app, owner.toSuiAddress())
      const stolen = await thief.signPersonalMessage(new TextEncoder().encode(message))
      expect(
        await refusal(await post(app, 'sign-in', { nonce, signature: stolen.signature })),
      ).toMatchObject({ status: 401, reason: 'invalid_signature' })
      // The owner's own signature of that nonce still signs in: the refusal used nothing up.
      const own = await owner.signPersonalMessage(new TextEncoder().encode(message))
      expect((await post(app, 'sign-in', { nonce, signature: own.signature })).status).toBe(200)
    })

    it('refuses a signature of any other text (another domain’s message)', async () => {
      const { app } = harness(database)
      const owner = new Ed25519Keypair()
      const { nonce, message } = await nonceFor(app, owner.toSuiAddress())
      const phished = message.replace('127.0.0.1:4020', 'evil.example')
      const { signature } = await owner.signPersonalMessage(new TextEncoder().encode(phished))
      expect(await refusal(await post(app, 'sign-in', { nonce, signature }))).toMatchObject({
        reason: 'invalid_signature',
      })
      expect(
        await refusal(await post(app, 'sign-in', { nonce: 'f'.repeat(32), signature })),
      ).toMatchObject({ reason: 'unknown_nonce' })
    })

    it('refuses a cross-site POST even with the sign-in cookie: nothing changes', async () => {
      const { app, keys } = harness(database)
      const owner = new Ed25519Keypair()
      const cookie = await signIn(app, owner)
      const { id } = await keys.create({ name: 'target', owner: owner.toSuiAddress() })
      const attempts: Record<string, string>[] = [
        // A form post: no custom header can be set, and the Origin is the attacker's.
        { 'content-type': 'text/plain', origin: 'https://evil.example', cookie },
        // The header but a foreign Origin (a page that somehow sent it).
        { ...mutation, origin: 'https://evil.example', cookie },
        // The header and no Origin at all.
        { 'content-type': 'application/json', 'x-tollgate-console': '1', cookie },
        // The right Origin without the header.
        { 'content-type': 'application/json', origin, cookie },
      ]
      for (const headers of attempts) {
        const revoked = await post(app, `keys/${id}/revoke`, {}, headers)
        expect(await refusal(revoked)).toMatchObject({ status: 403, code: 'csrf_refused' })
        const created = await post(app, 'keys', { name: 'planted' }, headers)
        expect(created.status).toBe(403)
      }
      expect((await keys.list({ owner: owner.toSuiAddress() })).map((k) => k.name)).toEqual([
        'target',
      ])
      expect((await keys.get(id))?.revokedAt).toBeNull()
      // The same request from the page itself goes through.
      const revoked = await post(app, `keys/${id}/revoke`, {}, { ...mutation, cookie })
      expect(await revoked.json()).toEqual({ id, revoked: true })
    })

    it('answers another owner’s key id as an unknown one (404), and changes nothing', async () => {
      const { app, keys } = harness(database)
      const alice = new Ed25519Keypair()
      const mallory = new Ed25519Keypair()
      const aliceCookie = await signIn(app, alice)
      const malloryCookie = await signIn(app, mallory)
      const created = await post(
        app,
        'keys',
        { name: 'alice’s' },
        { ...mutation, cookie: aliceCookie },
      )
      expect(created.status).toBe(201)
      const { key, secret } = (await created.json()) as { key: { id: string }; secret: string }
      expect(secret).toMatch(/^tg_/)
      const operatorKey = await keys.create({ name: 'operator' })
      for (const id of [key.id, operatorKey.id, 'key_0000000000000000']) {
        const revoke = await post(
          app,
          `keys/${id}/revoke`,
          {},
          { ...mutation, cookie: malloryCookie },
        )
        expect(await refusal(revoke)).toMatchObject({ status: 404, code: 'key_not_found' })
        const usage = await app.request(`/console/api/keys/${id}/usage`, {
          headers: { cookie: malloryCookie },
        })
        expect(usage.status).toBe(404)
        const verify = await app.request(`/console/api/keys/${id}/receipts/rcpt_x/verify`, {
          headers: { cookie: malloryCookie },
        })
        expect(verify.status).toBe(404)
      }
      const listed = await app.request('/console/api/keys', { headers: { cookie: malloryCookie } })
      expect(await listed.json()).toEqual({ keys: [] })
      expect((await keys.get(key.id))?.revokedAt).toBeNull()
      expect((await keys.authenticate(secret)).status).toBe('valid')
    })

    it('ends a sign-in at sign-out and at its expiry', async () => {
      const { app, clock } = harness(database)
      const owner = new Ed25519Keypair()
      const cookie = await signIn(app, owner)
      const out = await post(app, 'sign-out', {}, { ...mutation, cookie })
      expect(out.headers.get('set-cookie')).toMatch(/^tollgate_sign_in=;.*Max-Age=0/)
      const after = await app.request('/console/api/keys', { headers: { cookie } })
      expect(await refusal(after)).toMatchObject({ status: 401, code: 'sign_in_required' })

      const later = await signIn(app, owner)
      clock.now += signInTtlMs - 1
      expect((await app.request('/console/api/me', { headers: { cookie: later } })).status).toBe(
        200,
      )
      clock.now += 1
      expect((await app.request('/console/api/me', { headers: { cookie: later } })).status).toBe(
        401,
      )
    })

    it('limits nonces per client and caps the outstanding ones', async () => {
      const limited = harness(database, {
        prepareLimit: {
          limiter: createRateLimiter({
            points: 2,
            durationSeconds: 60,
            keyPrefix: `c${Math.random()}`,
          }),
          trustProxy: false,
        },
      })
      const address = new Ed25519Keypair().toSuiAddress()
      expect((await post(limited.app, 'nonce', { address })).status).toBe(200)
      expect((await post(limited.app, 'nonce', { address })).status).toBe(200)
      const third = await post(limited.app, 'nonce', { address })
      expect(third.status).toBe(429)
      expect(Number(third.headers.get('retry-after'))).toBeGreaterThan(0)

      const capped = harness(database, {
        signIns: { maxOutstandingNonces: 1, now: () => Date.UTC(2030, 0, 1) },
      })
      // Older tests' nonces are expired at this clock: only new ones count.
      expect((await post(capped.app, 'nonce', { address })).status).toBe(200)
      expect(await refusal(await post(capped.app, 'nonce', { address }))).toMatchObject({
        status: 429,
        code: 'rate_limited',
      })
    })

    it('refuses bad bodies with a stable code', async () => {
      const { app } = harness(database)
      const bad = [
        ['nonce', { address: 'alice' }],
        ['nonce', { address: '0x1', extra: true }],
        ['sign-in', { nonce: 'x' }],
      ] as const
      for (const [path, body] of bad) {
        expect(await refusal(await post(app, path, body))).toMatchObject({
          status: 400,
          code: 'invalid_request_body',
        })
      }
      const cookie = await signIn(app, new Ed25519Keypair())
      const control = await post(app, 'keys', { name: 'a\nb' }, { ...mutation, cookie })
      expect(await refusal(control)).toMatchObject({ status: 400, code: 'invalid_request_body' })
    })

    it('sums usage per day and model from served calls only', async () => {
      const { app, keys } = harness(database)
      const owner = new Ed25519Keypair()
      const cookie = await signIn(app, owner)
      const { id } = await keys.create({ owner: owner.toSuiAddress(), credit: 10_000_000n })
      const call = async (n: number, model: string, outcome: 'served' | 'restored') => {
        const entryId = `call_${id}_${n}`
        // Reserved at 3 000, settled at 1 500: the usage counts what was kept, not what was held.
        await keys.reserve(id, 3_000n, { entryId, model, leaseUntilMs: Date.now() + 60_000 })
        if (outcome === 'served')
          await keys.settle(entryId, 1_500n, { promptTokens: 10, completionTokens: n })
        else await keys.restore(entryId)
      }
      await call(1, 'open-a', 'served')
      await call(2, 'open-a', 'served')
      await call(3, 'open-b', 'served')
      await call(4, 'open-a', 'restored')
      const usage = (await (
        await app.request(`/console/api/keys/${id}/usage`, { headers: { cookie } })
      ).json()) as { days: unknown[]; recent: { id: string; state: string; receiptId: null }[] }
      const today = new Date().toISOString().slice(0, 10)
      expect(usage.days).toEqual([
        {
          day: today,
          model: 'open-a',
          calls: 2,
          promptTokens: 20,
          completionTokens: 3,
          spent: '0.003000',
        },
        {
          day: today,
          model: 'open-b',
          calls: 1,
          promptTokens: 10,
          completionTokens: 3,
          spent: '0.001500',
        },
      ])
      expect(usage.recent.map((r) => r.state).sort()).toEqual([
        'restored',
        'served',
        'served',
        'served',
      ])
      const listed = (await (
        await app.request('/console/api/keys', { headers: { cookie } })
      ).json()) as { keys: { id: string; credit: string; lastUsedAt: string | null }[] }
      expect(listed.keys[0]).toMatchObject({ id, credit: '9.995500' })
      expect(listed.keys[0]?.lastUsedAt?.slice(0, 10)).toBe(today)
    })
  })
}

describe('the console page without its built files', () => {
  it('serves the page with one line saying how to build them, and the files 404 with it', async () => {
    const database = await (await import('../db/database.js')).openDatabase({
      kind: 'sqlite',
      file: ':memory:',
    })
    try {
      const { app } = harness(database)
      const page = await app.request('/console')
      expect(page.status).toBe(200)
      expect(page.headers.get('content-security-policy')).toContain("script-src 'self'")
      expect(await page.text()).toContain('npm run build:console')
      const script = await app.request('/console/assets/console.js')
      expect(script.status).toBe(404)
      expect(await script.text()).toBe(`${buildHint}\n`)
    } finally {
      await database.close()
    }
  })
})
