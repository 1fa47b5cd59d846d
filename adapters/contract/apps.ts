/**
 * The same seller app written idiomatically in Express, Koa and Hono, for the adapter contract
 * suite: one route table, one per-route `pay()` route, the same handlers, real HTTP servers on
 * 127.0.0.1.
 *
 * @module
 */
import type { AddressInfo } from 'node:net'
import { PassThrough } from 'node:stream'
import { serve } from '@hono/node-server'
import Router from '@koa/router'
import express from 'express'
import { Hono } from 'hono'
import Koa from 'koa'
import { z } from 'zod'
import type { Refunder } from '../../src/refunds.js'
import type { RouteTable } from '../../src/routes.js'
import type { SellerOptions } from '../../src/seller.js'
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
export const contractRoutes: RouteTable = {
  'POST /v1/things/:id': { price: '0.02', description: 'a thing' },
  'POST /v1/echo': { price: '0.02', body: z.object({ text: z.string().max(100) }) },
  'POST /v1/boom': '0.02',
  'POST /v1/teapot': { price: '0.02', failedStatuses: [418] },
  'POST /v1/missing': '0.02',
  'GET /v1/stream': { price: '0.02', mimeType: 'text/event-stream' },
}

/** Milliseconds between the streamed route's events. */
export const streamGapMs = 150
/** Events the streamed route sends. */
export const streamEvents = 3

/** A running app. */
export type StartedApp = {
  url: string
  /** Handler invocations by path (to show that a refused request never ran one). */
  calls: Map<string, number>
  /** The refund worker behind the app's paywall. */
  refunder: Refunder
  close(): Promise<void>
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const event = (i: number) => `data: {"n":${i}}\n\n`

/** Starts the contract app in `framework` with the given paywall options. */
export async function startApp(
  framework: Framework,
  options: Omit<SellerOptions, 'routes'>,
): Promise<StartedApp> {
  const calls = new Map<string, number>()
  const count = (path: string) => calls.set(path, (calls.get(path) ?? 0) + 1)
  const all = { ...options, routes: contractRoutes }
  if (framework === 'express') {
    const paid = expressPaywall(all)
    const app = express()
    app.use(paid)
    app.post('/v1/things/:id', express.text({ type: '*/*' }), (req, res) => {
      count('/v1/things')
      const payer = res.locals.tollgate.payment.payer
      res.json({ ok: true, id: req.params.id, payer, received: req.body ?? '' })
    })
    app.post('/v1/echo', (req, res) => {
      count('/v1/echo')
      res.json({ text: (req.body as { text: string }).text })
    })
    app.post('/v1/boom', () => {
      count('/v1/boom')
      throw new Error('upstream failed')
    })
    app.post('/v1/teapot', (_req, res) => {
      count('/v1/teapot')
      res.status(418).json({ teapot: true })
    })
    app.post('/v1/missing', (_req, res) => {
      count('/v1/missing')
      res.status(404).json({ missing: true })
    })
    app.get('/v1/stream', async (_req, res) => {
      count('/v1/stream')
      res.setHeader('content-type', 'text/event-stream')
      res.flushHeaders()
      for (let i = 0; i < streamEvents; i++) {
        if (i > 0) await sleep(streamGapMs)
        res.write(event(i))
      }
      res.end()
    })
    app.post('/v1/quote', paid.pay('0.01'), (_req, res) => {
      count('/v1/quote')
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
    return listenNode(app, calls, paid.seller.refunder, () => paid.close())
  }
  if (framework === 'koa') {
    const paid = koaPaywall(all)
    const app = new Koa()
    const router = new Router()
    app.use(paid)
    router.post('/v1/things/:id', async (ctx) => {
      count('/v1/things')
      const chunks: Buffer[] = []
      for await (const chunk of ctx.req) chunks.push(chunk as Buffer)
      const payer = ctx.state.tollgate.payment.payer
      const received = Buffer.concat(chunks).toString('utf8')
      ctx.body = { ok: true, id: ctx.params.id, payer, received }
    })
    router.post('/v1/echo', (ctx) => {
      count('/v1/echo')
      ctx.body = { text: (ctx.request as unknown as { body: { text: string } }).body.text }
    })
    router.post('/v1/boom', () => {
      count('/v1/boom')
      throw new Error('upstream failed')
    })
    router.post('/v1/teapot', (ctx) => {
      count('/v1/teapot')
      ctx.status = 418
      ctx.body = { teapot: true }
    })
    router.post('/v1/missing', (ctx) => {
      count('/v1/missing')
      ctx.status = 404
      ctx.body = { missing: true }
    })
    router.get('/v1/stream', (ctx) => {
      count('/v1/stream')
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
    router.post('/v1/quote', paid.pay('0.01'), (ctx) => {
      count('/v1/quote')
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
    return listenNode(app.callback(), calls, paid.seller.refunder, () => paid.close())
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
    count('/v1/things')
    const payer = tollgateOf(c)?.payment.payer
    return c.json({ ok: true, id: c.req.param('id'), payer, received: await c.req.text() })
  })
  app.post('/v1/echo', async (c) => {
    count('/v1/echo')
    // In front of the app, the handler reads the Web Request itself: still whole after the paywall.
    const body = (inFront ? await c.req.raw.json() : await c.req.json()) as { text: string }
    return c.json({ text: body.text })
  })
  app.post('/v1/boom', () => {
    count('/v1/boom')
    throw new Error('upstream failed')
  })
  app.post('/v1/teapot', (c) => {
    count('/v1/teapot')
    return c.json({ teapot: true }, 418)
  })
  app.post('/v1/missing', (c) => {
    count('/v1/missing')
    return c.json({ missing: true }, 404)
  })
  app.get('/v1/stream', () => {
    count('/v1/stream')
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
  app.post('/v1/quote', paid.pay('0.01'), (c) => {
    count('/v1/quote')
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
    refunder: paid.seller.refunder,
    async close() {
      await paid.close()
      ;(server as { closeAllConnections?: () => void }).closeAllConnections?.()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

async function listenNode(
  handler: Parameters<typeof import('node:http').createServer>[1],
  calls: Map<string, number>,
  refunder: Refunder,
  closePaid: () => Promise<void>,
): Promise<StartedApp> {
  const { createServer } = await import('node:http')
  const server = createServer(handler)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    refunder,
    async close() {
      await closePaid()
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}
