/**
 * A payment whose last write is still under way when the handler starts (`PaymentBooks.durable`,
 * what a session call priced per request does on the mounts that hold the answer): on every Hono
 * mount — `pay()` and `front()` on Node, `pay()` through `app.fetch` as on a Web-standard runtime —
 * the handler runs at once, its answer leaves only once the write is done, and a write that refuses
 * the payment after all replaces the answer with the refusal (none of the handler's headers, no
 * receipt, nothing recorded as served); the handler's `durable()` tells it which. Express and Koa
 * send a handler's answer as it writes it: they do not hold it, so the payment is written before
 * the handler runs, and `durable()` answers `true`.
 *
 * The method here ("held") is written with the package's public exports only; each credential
 * names a write the test finishes by hand.
 */
import { createServer, type RequestListener, type Server } from 'node:http'
import { getRequestListener } from '@hono/node-server'
import Router from '@koa/router'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import express from 'express'
import { type Context, Hono } from 'hono'
import Koa from 'koa'
import { createMemoryStore, type Methods, PaymentError, type Settle } from 'tollgate'
import { paywall as expressPaywall } from 'tollgate/express'
import { paywall, tollgateOf } from 'tollgate/hono'
import { paywall as koaPaywall } from 'tollgate/koa'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

/** The writes of the payments presented, by credential: finished by the test. */
const writes = new Map<string, (error: PaymentError | undefined) => void>()
/** What each payment's books were told: `served <id>`, `failed <id>`. */
const told: string[] = []
/** Whether the mount said it holds the answer (`holdsAnswer`), by credential. */
const mountHolds = new Map<string, boolean>()

const held: Methods.PaymentMethod = {
  name: 'held',
  dialect: 'x402',
  buyerSubmits: false,
  server: {
    label: 'held',
    how: 'Held-Payment (held)',
    unsupportedCode: 'unsupported_scheme',
    classify: (headers) => headers.get('held-payment') ?? undefined,
    challenge: (parts) => ({ ...parts, headers: { ...parts.headers, 'Held-Offer': 'yes' } }),
    settle(credential, { holdsAnswer }) {
      mountHolds.set(credential, holdsAnswer === true)
      const durable = new Promise<PaymentError | undefined>((resolve) => {
        if (holdsAnswer) writes.set(credential, resolve)
        else resolve(undefined)
      })
      const books: Settle.PaymentBooks = {
        served: async () => {
          told.push(`served ${credential}`)
          return true
        },
        failed: async () => {
          told.push(`failed ${credential}`)
          return true
        },
        headersFor: () => ({ 'Held-Receipt': credential }),
        durable,
      }
      return {
        status: 'settled',
        digest: credential,
        payer: `0x${'1'.repeat(64)}`,
        amount: 1n,
        dialect: 'x402',
        resumed: false,
        books,
      }
    },
    successHeaders: () => () => ({}),
  },
  client: {
    label: 'held',
    rank: 0,
    read: () => ({ offers: [], unreadable: [] }),
    escrowTerms: () => undefined,
    pay: async () => ({
      status: 'failed',
      error: new PaymentError('DIALECT_UNSUPPORTED', 'Not bought here.'),
      moneyMayHaveMoved: false,
    }),
    receipt: () => undefined,
  },
}

/** The handler runs of each credential. */
const ran: string[] = []
const handler = (credential: string) => {
  ran.push(credential)
  return new Response(JSON.stringify({ ok: true }), {
    headers: { 'content-type': 'application/json', 'x-handler': 'yes', 'content-length': '11' },
  })
}

/** A seller's options paid by `held` alone, with a store of their own, for `routes`. */
const heldOptions = (routes: Record<string, string>) => ({
  payTo: new Ed25519Keypair().toSuiAddress(),
  ledger: 'http://127.0.0.1:9',
  store: createMemoryStore(),
  secrets: ['a-challenge-secret-of-at-least-32-bytes!'],
  routes,
  methods: [held],
})

const paid = paywall(heldOptions({ 'POST /front': '0.02' }))
const app = new Hono()
/** What each handler's `durable()` resolved to, by credential. */
const durable = new Map<string, boolean>()
const paidHandler = (c: Context) => {
  const credential = c.req.header('held-payment') ?? ''
  void tollgateOf(c)
    ?.durable()
    .then((ok) => durable.set(credential, ok))
  return handler(credential)
}
app.post('/pay', paid.pay('0.02'), paidHandler)
app.post('/front', paidHandler)

let base: string
let close: () => void
beforeAll(async () => {
  // Hono's Node listener, as `serve()` mounts it.
  const listening = await listen(getRequestListener(paid.front(app)))
  base = listening.base
  close = () => listening.server.close()
})
afterAll(async () => {
  close?.()
  await paid.close()
})

const mounts = [
  { name: '`pay()` on Node', call: (init: RequestInit) => fetch(`${base}/pay`, init) },
  { name: '`front()` on Node', call: (init: RequestInit) => fetch(`${base}/front`, init) },
  {
    name: '`pay()` through `app.fetch`',
    call: async (init: RequestInit) => app.fetch(new Request('http://seller.test/pay', init)),
  },
]

/** Presents `credential`; waits until its handler ran and its write is pending. */
async function present(call: (init: RequestInit) => Promise<Response>, credential: string) {
  let answered = false
  const response = call({ method: 'POST', headers: { 'held-payment': credential } }).then((r) => {
    answered = true
    return r
  })
  await expect.poll(() => ran.includes(credential) && writes.has(credential)).toBe(true)
  await new Promise((resolve) => setTimeout(resolve, 50))
  expect(answered).toBe(false)
  return { response, finish: writes.get(credential) as (e: PaymentError | undefined) => void }
}

describe.each(mounts)('a payment written while its handler runs, on $name', ({ name, call }) => {
  it('sends the answer once the write is done, with its receipt', async () => {
    const credential = `done ${name}`
    const { response, finish } = await present(call, credential)
    finish(undefined)
    const answer = await response
    expect(answer.status).toBe(200)
    expect(answer.headers.get('x-handler')).toBe('yes')
    expect(answer.headers.get('held-receipt')).toBe(credential)
    expect(await answer.json()).toEqual({ ok: true })
    await expect.poll(() => told).toContain(`served ${credential}`)
    expect(durable.get(credential)).toBe(true)
  })

  it('sends the refusal instead when the write refuses the payment: nothing of the answer', async () => {
    const credential = `refused ${name}`
    const { response, finish } = await present(call, credential)
    finish(
      new PaymentError('insufficient_balance', "The channel's vouchers do not cover this call."),
    )
    const answer = await response
    expect(answer.status).toBe(402)
    expect(answer.headers.get('x-handler')).toBeNull()
    expect(answer.headers.get('held-receipt')).toBeNull()
    expect(answer.headers.get('held-offer')).toBe('yes')
    expect(await answer.json()).toMatchObject({ code: 'insufficient_balance' })
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(told.filter((line) => line.endsWith(credential))).toEqual([])
    // The handler learnt it was not paid, so as not to do work that must never happen unpaid.
    expect(durable.get(credential)).toBe(false)
  })
})

/** Listens on loopback; the base URL and the server. */
async function listen(listener: RequestListener): Promise<{ base: string; server: Server }> {
  const server = createServer(listener)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  return {
    base: `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`,
    server,
  }
}

describe('on Express and Koa, which do not hold the answer', () => {
  const options = heldOptions({ 'POST /paid': '0.02' })

  it('writes the payment before the handler runs; durable() answers true, the receipt is sent', async () => {
    const onExpress = expressPaywall(options)
    const expressApp = express()
    expressApp.use(onExpress)
    expressApp.post('/paid', async (req, res) => {
      const credential = req.header('held-payment') ?? ''
      ran.push(credential)
      durable.set(credential, (await res.locals.tollgate?.durable()) ?? false)
      res.json({ ok: true })
    })
    const onKoa = koaPaywall(options)
    const koaApp = new Koa()
    const router = new Router()
    koaApp.use(onKoa)
    router.post('/paid', async (ctx) => {
      const credential = ctx.get('held-payment')
      ran.push(credential)
      durable.set(credential, (await ctx.state.tollgate?.durable()) ?? false)
      ctx.body = { ok: true }
    })
    koaApp.use(router.routes())
    const servers = [
      { name: 'express', ...(await listen(expressApp)) },
      { name: 'koa', ...(await listen(koaApp.callback())) },
    ]
    try {
      for (const { name, base } of servers) {
        const credential = `unheld ${name}`
        const answer = await fetch(`${base}/paid`, {
          method: 'POST',
          headers: { 'held-payment': credential },
        })
        expect(answer.status).toBe(200)
        expect(await answer.json()).toEqual({ ok: true })
        expect(answer.headers.get('held-receipt')).toBe(credential)
        expect(mountHolds.get(credential)).toBe(false)
        expect(ran).toContain(credential)
        expect(durable.get(credential)).toBe(true)
        await expect.poll(() => told).toContain(`served ${credential}`)
      }
    } finally {
      for (const { server } of servers) server.close()
      await Promise.all([onExpress.close(), onKoa.close()])
    }
  })
})
