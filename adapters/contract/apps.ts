/**
 * The same seller app written idiomatically in Express, Koa and Hono, for the adapter contract
 * suite: one route table, one per-route `pay()` route, the same handlers, real HTTP servers on
 * 127.0.0.1.
 *
 * @module
 */
import type { AddressInfo, Server as NetServer, Socket } from 'node:net'
import { PassThrough } from 'node:stream'
import { serve } from '@hono/node-server'
import Router from '@koa/router'
import express from 'express'
import { Hono } from 'hono'
import Koa from 'koa'
import type { PaidRequestInfo, Refunder, Routes, SellerOptions } from 'tollgate'
import { z } from 'zod'
import { paywall as expressPaywall } from '../express.js'
import { paywall as honoPaywall, type TollgateEnv, tollgateOf } from '../hono.js'
import { paywall as koaPaywall } from '../koa.js'

/**
 * The frameworks under contract (`hono-front`: the Hono paywall mounted in front of the app;
 * `hono-web`: Hono as on a Web-standard runtime — served without the Node bindings, so the paywall
 * reads a clone of the Web `Request` and wraps the paid `Response`).
 */
export type Framework = 'express' | 'koa' | 'hono' | 'hono-front' | 'hono-web'

/** Every framework, in the order the suite runs them. */
export const frameworks: readonly Framework[] = ['express', 'koa', 'hono', 'hono-front', 'hono-web']

/** The priced routes every app serves (the per-route `POST /v1/quote` comes on top). */
export const contractRoutes: Routes.RouteTable = {
  'POST /v1/things/:id': { price: '0.02', description: 'a thing' },
  'POST /v1/echo': { price: '0.02', body: z.object({ text: z.string().max(100) }) },
  'POST /v1/boom': '0.02',
  'POST /v1/teapot': { price: '0.02', failedStatuses: [418] },
  'POST /v1/missing': '0.02',
  'GET /v1/stream': { price: '0.02', mimeType: 'text/event-stream' },
  'POST /v1/slow': '0.02',
  'POST /v1/deferred': { price: '0.02', commit: 'manual' },
}

/**
 * A handler held until released: `entered` resolves when it starts, `release()` lets it answer. A
 * new latch is armed for each call (`arm()`), so a test decides when the answer starts.
 */
export type Latch = {
  /** Resolves when the held handler has started. */
  readonly entered: Promise<void>
  /** Lets the held handler answer. */
  release(): void
}

/** Holds the next calls of a handler until released (see {@link Latch}). */
export function createGate(): { arm(): Latch; pass(): Promise<void> } {
  let current: { latch: Latch; enter(): void; released: Promise<void> } | undefined
  return {
    arm() {
      let enter!: () => void
      let release!: () => void
      const entered = new Promise<void>((resolve) => {
        enter = resolve
      })
      const released = new Promise<void>((resolve) => {
        release = resolve
      })
      current = { latch: { entered, release }, enter, released }
      return current.latch
    },
    async pass() {
      const held = current
      if (held === undefined) return
      current = undefined
      held.enter()
      await held.released
    },
  }
}

/** Milliseconds between the streamed route's events. */
export const streamGapMs = 150
/** Events the streamed route sends. */
export const streamEvents = 3

/** A running app. */
export type StartedApp = {
  url: string
  /**
   * Holds `POST /v1/slow` until released: `app.slow.arm()` before the call. `POST /v1/deferred`
   * (`commit: 'manual'`) is held twice: before it calls `commit()`, and after, when it went ahead.
   */
  slow: ReturnType<typeof createGate>
  /** What each `commit()` of `POST /v1/deferred` returned, in order. */
  commits: boolean[]
  /** Resolves when the server has seen the connection from the client's `localPort` close. */
  connectionClosed(localPort: number): Promise<void>
  /** Handler invocations by path (to show that a refused request never ran one). */
  calls: Map<string, number>
  /** The refund worker behind the app's paywall. */
  refunder: Refunder
  close(): Promise<void>
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const event = (i: number) => `data: {"n":${i}}\n\n`

/** What a test may observe inside the app. */
export type AppHooks = {
  /**
   * Called synchronously as a paid handler starts, with the payment the handler sees (`undefined`
   * if it runs without one — which must never happen).
   */
  onPaidCall?: ((path: string, info: PaidRequestInfo | undefined) => void) | undefined
}

/** Starts the contract app in `framework` with the given paywall options. */
export async function startApp(
  framework: Framework,
  options: Omit<SellerOptions, 'routes'>,
  hooks: AppHooks = {},
): Promise<StartedApp> {
  const calls = new Map<string, number>()
  const count = (path: string) => calls.set(path, (calls.get(path) ?? 0) + 1)
  /** A paid handler starts: counted, and shown to the test (with the payment it sees, if any). */
  const paidCall = (path: string, info: PaidRequestInfo | undefined) => {
    count(path)
    hooks.onPaidCall?.(path, info)
  }
  const slow = createGate()
  const commits: boolean[] = []
  /** The work of `POST /v1/deferred`: held, then started with `commit()` (held again if it did). */
  const deferred = async (info: PaidRequestInfo | undefined): Promise<boolean> => {
    await slow.pass()
    const started = info?.commit() ?? false
    commits.push(started)
    if (started) await slow.pass()
    return started
  }
  const all = { ...options, routes: contractRoutes }
  if (framework === 'express') {
    const paid = expressPaywall(all)
    const app = express()
    app.use(paid)
    app.post('/v1/things/:id', express.text({ type: '*/*' }), (req, res) => {
      paidCall('/v1/things', res.locals.tollgate)
      const payer = res.locals.tollgate?.payment.payer
      res.json({ ok: true, id: req.params.id, payer, received: req.body ?? '' })
    })
    app.post('/v1/echo', (req, res) => {
      paidCall('/v1/echo', res.locals.tollgate)
      res.json({ text: (req.body as { text: string }).text })
    })
    app.post('/v1/boom', (_req, res) => {
      paidCall('/v1/boom', res.locals.tollgate)
      throw new Error('upstream failed')
    })
    app.post('/v1/teapot', (_req, res) => {
      paidCall('/v1/teapot', res.locals.tollgate)
      res.status(418).json({ teapot: true })
    })
    app.post('/v1/missing', (_req, res) => {
      paidCall('/v1/missing', res.locals.tollgate)
      res.status(404).json({ missing: true })
    })
    app.get('/v1/stream', async (_req, res) => {
      paidCall('/v1/stream', res.locals.tollgate)
      res.setHeader('content-type', 'text/event-stream')
      res.flushHeaders()
      for (let i = 0; i < streamEvents; i++) {
        if (i > 0) await sleep(streamGapMs)
        res.write(event(i))
      }
      res.end()
    })
    app.post('/v1/slow', async (_req, res) => {
      paidCall('/v1/slow', res.locals.tollgate)
      await slow.pass()
      res.json({ slow: true })
    })
    app.post('/v1/deferred', async (_req, res) => {
      paidCall('/v1/deferred', res.locals.tollgate)
      if (await deferred(res.locals.tollgate)) res.json({ deferred: true })
      else res.status(499).end()
    })
    app.post('/v1/quote', paid.pay('0.01'), (_req, res) => {
      paidCall('/v1/quote', res.locals.tollgate)
      res.json({ quote: true })
    })
    app.get('/free', (_req, res) => {
      count('/free')
      res.json({ free: true })
    })
    app.post('/free/echo', express.text({ type: '*/*' }), (req, res) => {
      count('/free/echo')
      res.json({ received: req.body })
    })
    return listenNode(app, calls, slow, commits, paid.seller.refunder, () => paid.close())
  }
  if (framework === 'koa') {
    const paid = koaPaywall(all)
    const app = new Koa()
    const router = new Router()
    app.use(paid)
    router.post('/v1/things/:id', async (ctx) => {
      paidCall('/v1/things', ctx.state.tollgate)
      const chunks: Buffer[] = []
      for await (const chunk of ctx.req) chunks.push(chunk as Buffer)
      const payer = ctx.state.tollgate?.payment.payer
      const received = Buffer.concat(chunks).toString('utf8')
      ctx.body = { ok: true, id: ctx.params.id, payer, received }
    })
    router.post('/v1/echo', (ctx) => {
      paidCall('/v1/echo', ctx.state.tollgate)
      ctx.body = { text: (ctx.request as unknown as { body: { text: string } }).body.text }
    })
    router.post('/v1/boom', (ctx) => {
      paidCall('/v1/boom', ctx.state.tollgate)
      throw new Error('upstream failed')
    })
    router.post('/v1/teapot', (ctx) => {
      paidCall('/v1/teapot', ctx.state.tollgate)
      ctx.status = 418
      ctx.body = { teapot: true }
    })
    router.post('/v1/missing', (ctx) => {
      paidCall('/v1/missing', ctx.state.tollgate)
      ctx.status = 404
      ctx.body = { missing: true }
    })
    router.get('/v1/stream', (ctx) => {
      paidCall('/v1/stream', ctx.state.tollgate)
      const stream = new PassThrough()
      ctx.type = 'text/event-stream'
      ctx.body = stream
      void (async () => {
        for (let i = 0; i < streamEvents; i++) {
          if (i > 0) await sleep(streamGapMs)
          stream.write(event(i))
        }
        stream.end()
      })()
    })
    router.post('/v1/slow', async (ctx) => {
      paidCall('/v1/slow', ctx.state.tollgate)
      await slow.pass()
      ctx.body = { slow: true }
    })
    router.post('/v1/deferred', async (ctx) => {
      paidCall('/v1/deferred', ctx.state.tollgate)
      if (await deferred(ctx.state.tollgate)) ctx.body = { deferred: true }
      else ctx.status = 499
    })
    router.post('/v1/quote', paid.pay('0.01'), (ctx) => {
      paidCall('/v1/quote', ctx.state.tollgate)
      ctx.body = { quote: true }
    })
    router.get('/free', (ctx) => {
      count('/free')
      ctx.body = { free: true }
    })
    router.post('/free/echo', async (ctx) => {
      count('/free/echo')
      const chunks: Buffer[] = []
      for await (const chunk of ctx.req) chunks.push(chunk as Buffer)
      ctx.body = { received: Buffer.concat(chunks).toString('utf8') }
    })
    app.use(router.routes())
    app.silent = true
    return listenNode(app.callback(), calls, slow, commits, paid.seller.refunder, () =>
      paid.close(),
    )
  }
  const paid = honoPaywall(all)
  const app = new Hono<TollgateEnv>()
  const inFront = framework === 'hono-front'
  if (!inFront) {
    // A middleware before the paywall that reads the body (as a logger might): the paywall takes
    // the bytes from Hono's body cache.
    app.use('/v1/echo', async (c, next) => {
      await c.req.text()
      await next()
    })
    app.use(paid)
  }
  app.post('/v1/things/:id', async (c) => {
    paidCall('/v1/things', tollgateOf(c))
    const payer = tollgateOf(c)?.payment.payer
    return c.json({ ok: true, id: c.req.param('id'), payer, received: await c.req.text() })
  })
  app.post('/v1/echo', async (c) => {
    paidCall('/v1/echo', tollgateOf(c))
    // In front of the app, the handler reads the Web Request itself: still whole after the paywall.
    const body = (inFront ? await c.req.raw.json() : await c.req.json()) as { text: string }
    return c.json({ text: body.text })
  })
  app.post('/v1/boom', (c) => {
    paidCall('/v1/boom', tollgateOf(c))
    throw new Error('upstream failed')
  })
  app.post('/v1/teapot', (c) => {
    paidCall('/v1/teapot', tollgateOf(c))
    return c.json({ teapot: true }, 418)
  })
  app.post('/v1/missing', (c) => {
    paidCall('/v1/missing', tollgateOf(c))
    return c.json({ missing: true }, 404)
  })
  app.get('/v1/stream', (c) => {
    paidCall('/v1/stream', tollgateOf(c))
    let i = 0
    const encoder = new TextEncoder()
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        if (i > 0) await sleep(streamGapMs)
        controller.enqueue(encoder.encode(event(i)))
        if (++i === streamEvents) controller.close()
      },
    })
    return new Response(body, { headers: { 'content-type': 'text/event-stream' } })
  })
  app.post('/v1/slow', async (c) => {
    paidCall('/v1/slow', tollgateOf(c))
    await slow.pass()
    return c.json({ slow: true })
  })
  app.post('/v1/deferred', async (c) => {
    paidCall('/v1/deferred', tollgateOf(c))
    return (await deferred(tollgateOf(c)))
      ? c.json({ deferred: true })
      : new Response(null, { status: 499 })
  })
  app.post('/v1/quote', paid.pay('0.01'), (c) => {
    paidCall('/v1/quote', tollgateOf(c))
    return c.json({ quote: true })
  })
  app.get('/free', (c) => {
    count('/free')
    return c.json({ free: true })
  })
  app.post('/free/echo', async (c) => {
    count('/free/echo')
    return c.json({ received: await c.req.text() })
  })
  const server = serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch: inFront
      ? paid.front(app)
      : framework === 'hono-web'
        ? (request: Request) => app.fetch(request)
        : app.fetch,
  })
  await new Promise((resolve) => server.once('listening', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    slow,
    commits,
    connectionClosed: watchConnections(server),
    refunder: paid.seller.refunder,
    async close() {
      await paid.close()
      ;(server as { closeAllConnections?: () => void }).closeAllConnections?.()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

/** Server-side sockets by the client's port, to know when the server saw a client hang up. */
function watchConnections(server: NetServer): StartedApp['connectionClosed'] {
  const closed = new Map<number, Promise<void>>()
  server.on('connection', (socket: Socket) => {
    const port = socket.remotePort
    if (port === undefined) return
    closed.set(port, new Promise((resolve) => socket.once('close', () => resolve())))
  })
  return async (localPort) => {
    for (let i = 0; i < 200 && !closed.has(localPort); i++) await sleep(10)
    await closed.get(localPort)
  }
}

async function listenNode(
  handler: Parameters<typeof import('node:http').createServer>[1],
  calls: Map<string, number>,
  slow: StartedApp['slow'],
  commits: boolean[],
  refunder: Refunder,
  closePaid: () => Promise<void>,
): Promise<StartedApp> {
  const { createServer } = await import('node:http')
  const server = createServer(handler)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    slow,
    commits,
    connectionClosed: watchConnections(server),
    refunder,
    async close() {
      await closePaid()
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}
