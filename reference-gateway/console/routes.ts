/**
 * The owner's console at `/console`: the page, its built browser files, and its JSON routes under
 * `/console/api/`:
 *
 * ```
 * GET  /console                         the page (sign in, keys, top-ups, usage)
 * GET  /console/assets/console.{js,css} the bundled browser files
 * POST /console/api/nonce     {address} a one-time nonce and the exact message to sign
 * POST /console/api/sign-in   {nonce, signature}   verified: sets the sign-in cookie
 * POST /console/api/sign-out                        deletes the sign-in and clears the cookie
 * GET  /console/api/me                              who is signed in
 * GET  /console/api/keys                            the owner's keys (credit, created, last used)
 * POST /console/api/keys      {name}                a new key: its secret, shown once
 * POST /console/api/keys/:id/revoke
 * GET  /console/api/keys/:id/usage                  per day and model; recent calls with receipt ids
 * GET  /console/api/keys/:id/receipts/:receipt/verify  the gateway's own check of a receipt
 * ```
 *
 * Every POST must carry `x-tollgate-console: 1` and an `Origin` equal to the gateway's public
 * origin (403 `csrf_refused` otherwise): a cross-site form or fetch carries neither. The sign-in
 * cookie is HttpOnly, SameSite=Strict, `Path=/console`, Secure unless the gateway's public URL is
 * loopback, and lives as long as its sign-in row. An owner sees and changes only its own keys:
 * another owner's key id is a 404, as an unknown one.
 *
 * Top-ups are not a console route: the page pays the gateway's public top-up route
 * (`POST /v1/credit/<usdc>`) from the wallet, exactly as any buyer does.
 *
 * @module
 */
import { normalizeSuiAddress } from '@mysten/sui/utils'
import { type Context, Hono } from 'hono'
import { deleteCookie, getCookie, setCookie } from 'hono/cookie'
import type { Kysely } from 'kysely'
import { Attestation, formatAmount, type Ledger, parseAmount } from 'tollgate'
import { z } from 'zod'
import type { GatewaySchema } from '../db/schema.js'
import { clientAddressOf } from '../inference/aci.js'
import type { KeyRecord, KeyStore } from '../inference/keys.js'
import type { RateLimiter } from '../inference/limits.js'
import { topUpPath } from '../inference/openapi.js'
import { bodyTooLarge, readJsonBody } from '../requestBody.js'
import { type ConsoleAssets, loadConsoleAssets } from './assets.js'
import { consoleCsp, consolePage } from './page.js'
import { createSignIns, type SignInsOptions } from './signIn.js'
import { keyUsage, lastUsedOf, receiptKeyOf } from './usage.js'

/** The header every console mutation carries (a cross-site form cannot send it). */
export const consoleHeader = 'x-tollgate-console'
/** The sign-in cookie's name. */
export const signInCookie = 'tollgate_sign_in'

/** Options of {@link consoleRoutes}. */
export type ConsoleOptions = {
  /** The gateway's relational store (sign-ins, usage, receipts). */
  db: Kysely<GatewaySchema>
  keys: KeyStore
  /** The gateway's public base URL: the sign-in domain, and the only Origin a mutation may carry. */
  publicBaseUrl: string
  /** The x402 network of the top-ups, e.g. `sui:mainnet` (also the wallet's chain). */
  network: string
  /** The USDC coin type. */
  asset: string
  /** The address top-ups pay. */
  payTo: string
  /** The credit packs sold on `POST /v1/credit/<usdc>` (USDC decimals). */
  topUps: readonly string[]
  /** The ledger the receipt anchors are looked up on (the verify view). */
  ledger: Pick<Ledger, 'getTransaction'>
  /**
   * True on the local ledger emulator: the page says the money is not real, and the verify view
   * accepts the simulated enclave's test root (and says so).
   */
  testMoney: boolean
  /** Nonces asked per client address (429 `rate_limited` past it). Default: not limited. */
  prepareLimit?: { limiter: RateLimiter; trustProxy: boolean } | undefined
  /** Sign-in lifetimes, the nonce cap and the clock. */
  signIns?: Omit<SignInsOptions, 'publicBaseUrl'> | undefined
  /** The built browser files. Default: loaded once from next to the gateway's code. */
  assets?: ConsoleAssets | undefined
  /** The fetch the verify view reads the gateway's public receipt routes with (the app itself). */
  fetch: typeof globalThis.fetch
}

type ErrorCode =
  | 'sign_in_required'
  | 'sign_in_refused'
  | 'csrf_refused'
  | 'key_not_found'
  | 'receipt_not_found'
  | 'invalid_request_body'
  | 'rate_limited'

const statusOf: Record<ErrorCode, 400 | 401 | 403 | 404 | 429> = {
  sign_in_required: 401,
  sign_in_refused: 401,
  csrf_refused: 403,
  key_not_found: 404,
  receipt_not_found: 404,
  invalid_request_body: 400,
  rate_limited: 429,
}

function failure(
  code: ErrorCode,
  message: string,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): Response {
  return Response.json(
    { error: { code, message, ...extra } },
    { status: statusOf[code], headers: { 'cache-control': 'no-store', ...headers } },
  )
}

const refusalMessages = {
  unknown_nonce: 'This nonce was not issued here; ask for a new one.',
  nonce_used: 'This sign-in message was already used; sign a new one.',
  nonce_expired: 'This sign-in message expired; sign a new one.',
  invalid_signature: 'The signature is not this address’s signature of the sign-in message.',
} as const

const addressSchema = z
  .string()
  .regex(/^0x[0-9a-fA-F]{1,64}$/, 'a Sui address (0x and up to 64 hex digits)')
const nonceBody = z.object({ address: addressSchema }).strict()
const signInBody = z
  .object({
    nonce: z.string().max(64),
    signature: z.string().min(1).max(8192),
  })
  .strict()
const createBody = z
  .object({
    name: z
      .string()
      .trim()
      .min(1, 'a name')
      .max(64)
      .regex(/^[^\p{Cc}]*$/u, 'one line, no control characters'),
  })
  .strict()
const idPattern = /^key_[0-9a-f]{16}$/
const receiptPattern = /^[A-Za-z0-9_.:-]{1,200}$/

const loopbackHosts = new Set(['127.0.0.1', 'localhost', '[::1]'])

/** A key as the console lists it (never its secret). */
function keyJson(key: KeyRecord, lastUsedAt: string | undefined) {
  return {
    id: key.id,
    name: key.name,
    hint: key.hint,
    credit: formatAmount(key.credit),
    createdAt: key.createdAt,
    lastUsedAt: lastUsedAt ?? null,
    revokedAt: key.revokedAt,
  }
}

/**
 * The console's routes: a Hono app to mount at `/console`.
 *
 * @example
 * ```ts
 * app.route('/console', consoleRoutes({ db, keys, publicBaseUrl, network, asset, payTo, topUps, ledger, testMoney: false, fetch }))
 * ```
 */
export function consoleRoutes(options: ConsoleOptions): Hono {
  const app = new Hono()
  const base = new URL(options.publicBaseUrl)
  const origin = base.origin
  const secure = !loopbackHosts.has(base.hostname)
  const signIns = createSignIns(options.db, {
    ...options.signIns,
    publicBaseUrl: options.publicBaseUrl,
  })
  const assets = options.assets ?? loadConsoleAssets()
  const page = consolePage(
    {
      origin,
      chain: options.network,
      network: options.network,
      asset: options.asset,
      payTo: normalizeSuiAddress(options.payTo),
      topUps: options.topUps.map((usdc) => ({
        usdc,
        units: parseAmount(usdc).toString(),
        path: topUpPath(usdc),
      })),
      testMoney: options.testMoney,
    },
    assets.status === 'missing' ? assets.hint : undefined,
  )
  const verifier = (payment: Attestation.ExpectedPayment) =>
    Attestation.createInferenceReceiptVerifier({
      inferenceUrl: origin,
      fetch: options.fetch,
      ledger: options.ledger,
      expectPayment: payment,
      allowTestRoot: options.testMoney,
    })

  const pageHeaders = {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': consoleCsp,
    'x-frame-options': 'DENY',
    'referrer-policy': 'no-referrer',
    'x-content-type-options': 'nosniff',
    'cache-control': 'no-store',
  }
  app.get('/', () => new Response(page, { headers: pageHeaders }))
  app.get('/assets/:file', (c) => {
    const file = c.req.param('file')
    if (assets.status === 'missing') {
      return new Response(`${assets.hint}\n`, {
        status: 404,
        headers: { 'content-type': 'text/plain; charset=utf-8' },
      })
    }
    const types = {
      'console.js': ['text/javascript; charset=utf-8', assets.js],
      'console.css': ['text/css; charset=utf-8', assets.css],
    } as const
    const found = types[file as keyof typeof types]
    if (found === undefined) return c.notFound()
    return new Response(found[1], {
      headers: {
        'content-type': found[0],
        'x-content-type-options': 'nosniff',
        'cache-control': 'no-cache',
      },
    })
  })

  // CSRF: every mutation carries the console's header and comes from the gateway's own origin.
  app.use('/api/*', async (c, next) => {
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD') {
      if (c.req.header(consoleHeader) !== '1') {
        return failure('csrf_refused', `A console request must carry ${consoleHeader}: 1.`)
      }
      if (c.req.header('origin') !== origin) {
        return failure('csrf_refused', `A console request must come from ${origin}.`)
      }
    }
    await next()
    c.res.headers.set('cache-control', 'no-store')
  })

  async function readBody<T>(c: Context, schema: z.ZodType<T>) {
    const read = await readJsonBody(c.req.raw, 16 * 1024)
    if (read.status === 'too_large')
      return { ok: false as const, response: bodyTooLarge(read.limit) }
    if (read.status === 'not_json') {
      return {
        ok: false as const,
        response: failure('invalid_request_body', 'The body must be JSON.'),
      }
    }
    const parsed = schema.safeParse(read.json)
    if (!parsed.success) {
      const issue = parsed.error.issues[0]
      return {
        ok: false as const,
        response: failure(
          'invalid_request_body',
          `${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'}`,
        ),
      }
    }
    return { ok: true as const, value: parsed.data }
  }

  app.post('/api/nonce', async (c) => {
    const limit = options.prepareLimit
    if (limit !== undefined) {
      const client = clientAddressOf(c.req.raw, c.env, limit.trustProxy)
      const decision = await limit.limiter.take(`console:${client}`)
      if (decision.status === 'limited') {
        const seconds = Math.max(1, Math.ceil(decision.resetMs / 1000))
        return failure(
          'rate_limited',
          'Too many sign-in nonces asked from this address; retry later.',
          {},
          { 'retry-after': String(seconds) },
        )
      }
    }
    const body = await readBody(c, nonceBody)
    if (!body.ok) return body.response
    const prepared = await signIns.prepare(body.value.address)
    if (prepared.status === 'full') {
      return failure(
        'rate_limited',
        'Too many sign-ins are being prepared; retry later.',
        {},
        { 'retry-after': String(Math.ceil(prepared.retryAfterMs / 1000)) },
      )
    }
    return c.json({
      nonce: prepared.nonce,
      message: prepared.message,
      expiresAt: new Date(prepared.expiresAtMs).toISOString(),
    })
  })

  app.post('/api/sign-in', async (c) => {
    const body = await readBody(c, signInBody)
    if (!body.ok) return body.response
    const result = await signIns.signIn(body.value)
    if (result.status === 'refused') {
      return failure('sign_in_refused', refusalMessages[result.reason], { reason: result.reason })
    }
    setCookie(c, signInCookie, result.token, {
      path: '/console',
      httpOnly: true,
      secure,
      sameSite: 'Strict',
      expires: new Date(result.expiresAtMs),
    })
    return c.json({
      address: result.address,
      expiresAt: new Date(result.expiresAtMs).toISOString(),
    })
  })

  app.post('/api/sign-out', async (c) => {
    const token = getCookie(c, signInCookie)
    if (token !== undefined) await signIns.signOut(token)
    deleteCookie(c, signInCookie, { path: '/console', secure, httpOnly: true, sameSite: 'Strict' })
    return c.json({ signedOut: true })
  })

  /** The signed-in owner, or the 401 to answer. */
  async function owner(c: Context): Promise<{ address: string } | Response> {
    const token = getCookie(c, signInCookie)
    const signedIn = token === undefined ? undefined : await signIns.find(token)
    if (signedIn === undefined) return failure('sign_in_required', 'Sign in with your wallet.')
    return signedIn
  }

  /** The owner's key `id`, or the 404 an unknown or another owner's key gets alike. */
  async function ownKey(address: string, id: string): Promise<KeyRecord | Response> {
    const key = idPattern.test(id) ? await options.keys.get(id) : undefined
    if (key === undefined || key.owner !== address) {
      return failure('key_not_found', 'No such key among yours.')
    }
    return key
  }

  app.get('/api/me', async (c) => {
    const who = await owner(c)
    if (who instanceof Response) return who
    return c.json({ address: who.address })
  })

  app.get('/api/keys', async (c) => {
    const who = await owner(c)
    if (who instanceof Response) return who
    const keys = await options.keys.list({ owner: who.address })
    const lastUsed = await lastUsedOf(
      options.db,
      keys.map((k) => k.id),
    )
    return c.json({ keys: keys.map((k) => keyJson(k, lastUsed.get(k.id))) })
  })

  app.post('/api/keys', async (c) => {
    const who = await owner(c)
    if (who instanceof Response) return who
    const body = await readBody(c, createBody)
    if (!body.ok) return body.response
    const created = await options.keys.create({ name: body.value.name, owner: who.address })
    return c.json({ key: keyJson(created, undefined), secret: created.key }, 201)
  })

  app.post('/api/keys/:id/revoke', async (c) => {
    const who = await owner(c)
    if (who instanceof Response) return who
    const key = await ownKey(who.address, c.req.param('id'))
    if (key instanceof Response) return key
    const revoked = await options.keys.revoke(key.id)
    return c.json({ id: key.id, revoked: revoked || key.revokedAt !== null })
  })

  app.get('/api/keys/:id/usage', async (c) => {
    const who = await owner(c)
    if (who instanceof Response) return who
    const key = await ownKey(who.address, c.req.param('id'))
    if (key instanceof Response) return key
    const usage = await keyUsage(options.db, key.id)
    return c.json({
      days: usage.days.map((d) => ({ ...d, spent: formatAmount(d.spent) })),
      recent: usage.recent.map((r) => ({ ...r, amount: formatAmount(r.amount) })),
    })
  })

  app.get('/api/keys/:id/receipts/:receipt/verify', async (c) => {
    const who = await owner(c)
    if (who instanceof Response) return who
    const key = await ownKey(who.address, c.req.param('id'))
    if (key instanceof Response) return key
    const receiptId = c.req.param('receipt')
    const stored = receiptPattern.test(receiptId)
      ? await receiptKeyOf(options.db, receiptId)
      : undefined
    if (stored === undefined || stored.keyId !== key.id) {
      return failure('receipt_not_found', 'No such receipt for this key.')
    }
    const payment = `${key.id}:${stored.callId}`
    const result = await verifier({ keyId: key.id, callId: stored.callId }).verify(receiptId)
    return c.json({
      vouchedBy: 'gateway',
      statement:
        'This check ran on the gateway: it is the gateway vouching for itself. Run the command below on your own machine for an independent check.',
      command: `npx tollgate verify ${receiptId} --inference-url ${origin} --payment ${payment}${options.testMoney ? ' --allow-test-root' : ''}`,
      result,
    })
  })

  return app
}
