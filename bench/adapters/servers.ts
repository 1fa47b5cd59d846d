/**
 * The servers of the adapter benchmark, each in its own process (so that autocannon does not share
 * its event loop and each server's CPU time is its own): each framework bare, with a no-op
 * middleware and behind `tollgate/<framework>` (Hono also in front of the app), and the peer
 * middlewares (`x402-express` v1, `@x402/express` v2 with a local facilitator stub, `mppx/express`).
 * `BENCH_SERVER` names the server to run. Prints `{ name: baseUrl }` as one JSON line, answers
 * CPU-usage requests over IPC, and serves until killed.
 */
import { createServer, type RequestListener } from 'node:http'
import type { AddressInfo } from 'node:net'
import type express from 'express'
import type Koa from 'koa'
import type { paywall as honoPaywall } from '../../adapters/hono.js'
import { createMemoryStore } from '../../src/stores/memory.js'

// Each server's modules are imported when it starts, so that a process loads only its own framework
// (quick to start, also under `valgrind`, which the instruction-count measurement uses).
const payTo = '0x5a1e4c0b4f0d7c8e9f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f80'
const evmPayTo = '0x209693Bc6afc0C5328bA36FaF03C514EF312287C'
const secret = 'a-challenge-secret-of-at-least-32-bytes!'
/** A realistic table: the priced route among others. The 402 path never touches the ledger. */
const routes = {
  'POST /paid': { price: '0.02', description: 'a paid answer' },
  'POST /v1/chat/completions': '0.01',
  'POST /v1/images/:id': '0.05',
  'GET /v1/search': '0.002',
  'GET /v1/files/*': '0.001',
}
const options = () => ({
  routes,
  payTo,
  ledger: 'http://127.0.0.1:9',
  store: createMemoryStore(),
  secrets: [secret],
})
const payload = { ok: true, answer: 42 }

function listen(handler: RequestListener): Promise<string> {
  const server = createServer(handler)
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
    ),
  )
}

const noop = (_req: unknown, _res: unknown, next: () => void) => next()

/**
 * The 402 the paywall answers to an unpaid `POST /paid` (status, headers, bytes). The bare apps
 * answer these same bytes from a plain handler at `POST /same-bytes`: a baseline that differs from
 * the 402 path only in who decides the answer.
 */
async function challengeAnswer(): Promise<{
  status: number
  headers: Record<string, string>
  body: Buffer
}> {
  const { createSellerPaywall } = await import('../../src/engine/seller.js')
  const seller = createSellerPaywall(options())
  const url = 'http://127.0.0.1:3000/paid'
  const route = seller.match('POST', url)
  const decision =
    route && (await seller.engine.handle(new Request(url, { method: 'POST' }), route))
  await seller.close()
  if (decision?.status !== 'respond') throw new Error('no 402 for POST /paid')
  const plain = decision.plain
  return { status: plain.status, headers: { ...plain.headers }, body: Buffer.from(plain.body) }
}

async function expressApp(paid?: express.RequestHandler) {
  const { default: express } = await import('express')
  const app = express()
  if (paid !== undefined) app.use(paid)
  else {
    const answer = await challengeAnswer()
    app.post('/same-bytes', (_req, res) => {
      res.status(answer.status).set(answer.headers).send(answer.body)
    })
  }
  app.get('/free', (_req, res) => {
    res.json(payload)
  })
  app.post('/paid', (_req, res) => {
    res.json(payload)
  })
  return app
}

async function koaApp(paid?: Koa.Middleware) {
  const [{ default: Koa }, { default: Router }] = await Promise.all([
    import('koa'),
    import('@koa/router'),
  ])
  const app = new Koa()
  const router = new Router()
  if (paid !== undefined) app.use(paid)
  else {
    const answer = await challengeAnswer()
    router.post('/same-bytes', (ctx) => {
      ctx.status = answer.status
      ctx.set(answer.headers)
      ctx.body = answer.body
    })
  }
  router.get('/free', (ctx) => {
    ctx.body = payload
  })
  router.post('/paid', (ctx) => {
    ctx.body = payload
  })
  app.use(router.routes())
  return app.callback()
}

/** Hono bare, with the paywall as middleware, in front of the app, or with a no-op middleware. */
async function honoApp(
  paid?: ReturnType<typeof honoPaywall>,
  mount: 'middleware' | 'front' | 'noop' = 'middleware',
): Promise<string> {
  const [{ Hono }, { serve }] = await Promise.all([import('hono'), import('@hono/node-server')])
  const app = new Hono()
  if (mount === 'noop') app.use((_c, next) => next())
  if (paid !== undefined && mount === 'middleware') app.use(paid)
  if (paid === undefined && mount !== 'noop') {
    const answer = await challengeAnswer()
    app.post('/same-bytes', (c) =>
      c.body(new Uint8Array(answer.body), answer.status as 402, answer.headers),
    )
  }
  app.get('/free', (c) => c.json(payload))
  app.post('/paid', (c) => c.json(payload))
  const fetch = paid !== undefined && mount === 'front' ? paid.front(app) : app.fetch
  const server = serve({ port: 0, hostname: '127.0.0.1', fetch })
  await new Promise((resolve) => server.once('listening', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

async function facilitatorStub(): Promise<string> {
  const supported = JSON.stringify({
    kinds: [{ x402Version: 2, scheme: 'exact', network: 'eip155:84532' }],
    extensions: [],
    signers: {},
  })
  return listen((req, res) => {
    if (req.url?.startsWith('/supported')) {
      res.setHeader('content-type', 'application/json')
      res.end(supported)
    } else {
      res.statusCode = 404
      res.end()
    }
  })
}

async function x402v1Server(): Promise<string> {
  const [{ default: express }, { paymentMiddleware: x402v1 }] = await Promise.all([
    import('express'),
    import('x402-express'),
  ])
  const v1 = express()
  v1.use(x402v1(evmPayTo, { 'POST /paid': { price: '$0.02', network: 'base-sepolia' } }))
  v1.post('/paid', (_req, res) => {
    res.json(payload)
  })
  return listen(v1)
}

async function x402v2Server(): Promise<string> {
  const [
    { default: express },
    { HTTPFacilitatorClient, x402ResourceServer },
    { paymentMiddleware: x402v2 },
  ] = await Promise.all([import('express'), import('@x402/core/server'), import('@x402/express')])
  // @x402/express v2 needs a facilitator (GET /supported at start-up) and a scheme server: both
  // are minimal local stubs; the 402 path calls neither per request.
  const scheme = {
    scheme: 'exact',
    defaultAssetTransferMethod: 'default',
    paymentFlows: { default: { supported: ['upfront'], default: 'upfront' } },
    parsePrice: async () => ({
      amount: '20000',
      asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
      extra: { name: 'USDC', version: '2' },
    }),
    enhancePaymentRequirements: async (requirements: unknown) => requirements,
  }
  const server = new x402ResourceServer(
    new HTTPFacilitatorClient({ url: await facilitatorStub() }),
  ).register('eip155:84532', scheme as never)
  const v2 = express()
  v2.use(
    x402v2(
      {
        'POST /paid': {
          accepts: { scheme: 'exact', price: '$0.02', network: 'eip155:84532', payTo: evmPayTo },
          description: 'a paid answer',
        },
      },
      server,
    ),
  )
  v2.post('/paid', (_req, res) => {
    res.json(payload)
  })
  return listen(v2)
}

async function mppxServer(): Promise<string> {
  const [{ default: express }, { Mppx, tempo }] = await Promise.all([
    import('express'),
    import('mppx/express'),
  ])
  const mppx = Mppx.create({
    methods: [
      tempo({
        currency: '0x20c0000000000000000000000000000000000001',
        recipient: evmPayTo,
      } as never),
    ],
    secretKey: secret,
  } as never) as unknown as { charge(options: { amount: string }): express.RequestHandler }
  const m = express()
  m.post('/paid', mppx.charge({ amount: '0.02' }), (_req, res) => {
    res.json(payload)
  })
  return listen(m)
}

/**
 * No framework: `@hono/node-server` with a fetch handler that answers `POST /same-bytes` with the
 * 402's exact bytes (headers as a plain object with their length) and `POST /paid` with the bare
 * JSON, both returned at once: what is left between the two is the cost of the 402's size. (Not a
 * floor of a Hono 402: an answer returned at once to a POST makes `@hono/node-server` drain the
 * unread body itself, which an answer returned as a promise, like the paywall's, does not.)
 */
async function nodeServerAlone(): Promise<string> {
  const { serve } = await import('@hono/node-server')
  const answer = await challengeAnswer()
  const text = answer.body.toString('utf8')
  const headers = { ...answer.headers, 'Content-Length': String(answer.body.byteLength) }
  const json = JSON.stringify(payload)
  const jsonHeaders = { 'content-type': 'application/json' }
  const server = serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch: (request) =>
      request.url.endsWith('/same-bytes')
        ? new Response(text, { status: answer.status, headers })
        : new Response(json, { headers: jsonHeaders }),
  })
  await new Promise((resolve) => server.once('listening', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** Every server of the benchmark, by name. */
const servers: Record<string, () => Promise<string>> = {
  'express bare': async () => listen(await expressApp()),
  'express tollgate': async () => {
    const { paywall } = await import('../../adapters/express.js')
    return listen(await expressApp(paywall(options())))
  },
  'express no-op middleware': async () => listen(await expressApp(noop)),
  'koa bare': async () => listen(await koaApp()),
  'koa tollgate': async () => {
    const { paywall } = await import('../../adapters/koa.js')
    return listen(await koaApp(paywall(options())))
  },
  'koa no-op middleware': async () => listen(await koaApp((_ctx, next) => next())),
  'hono bare': () => honoApp(),
  'hono tollgate': async () => {
    const { paywall } = await import('../../adapters/hono.js')
    return honoApp(paywall(options()))
  },
  'hono (front) tollgate': async () => {
    const { paywall } = await import('../../adapters/hono.js')
    return honoApp(paywall(options()), 'front')
  },
  'hono no-op middleware': () => honoApp(undefined, 'noop'),
  '@hono/node-server alone': nodeServerAlone,
  'x402-express (v1)': x402v1Server,
  '@x402/express (v2)': x402v2Server,
  'mppx/express': mppxServer,
}

// BENCH_SERVER names the server this process runs (the runner starts one process per server, so
// that each one's CPU time is its own); without it, every server.
// Several names separated by `|` share one process (`BENCH_SHARED=1` of the runner).
const names =
  process.env.BENCH_SERVER === undefined
    ? Object.keys(servers)
    : process.env.BENCH_SERVER.split('|')
const urls: Record<string, string> = {}
for (const name of names) {
  const start = servers[name]
  if (start === undefined) throw new Error(`no server named ${name}`)
  try {
    urls[name] = await start()
  } catch (error) {
    // mppx's express middleware is optional in this comparison: reported as not measured.
    if (name !== 'mppx/express') throw error
  }
}
process.stdout.write(`${JSON.stringify(urls)}\n`)
// The runner asks for this process's CPU time around each measurement (IPC): CPU per request is
// far steadier than requests/s on a machine that is busy with other work.
// `exit` ends the process normally (so that `BENCH_PROFILE` profiles are written).
process.on('message', (message) => {
  if (message === 'exit') process.exit(0)
  process.send?.(process.cpuUsage())
})
