/**
 * A seller's Worker, as a seller would write it for a Web-standard runtime (workerd, here): a Hono
 * app, the paywall of `tollgate/hono` with the memory store, and a ledger reached with the
 * runtime's own `fetch`. `webRuntime.int.test.ts` bundles it and runs it under `miniflare`; its
 * bindings say where the ledger is and who is paid.
 *
 * @module
 */
import { Hono } from 'hono'
import { createLedger, createMemoryStore } from 'tollgate'
import { type HonoPaywall, paywall, type TollgateEnv } from 'tollgate/hono'
import { z } from 'zod'

/** The Worker's bindings. */
export type WorkerEnv = { LEDGER_URL: string; PAY_TO: string; SECRET: string }

type App = { hono: Hono<TollgateEnv>; paid: HonoPaywall }

/** One app per isolate: the memory store must outlive a request. */
let app: App | undefined

function build(env: WorkerEnv): App {
  const paid = paywall({
    routes: {
      'POST /v1/echo': { price: '0.02', body: z.object({ text: z.string().max(100) }) },
      'GET /v1/quote': '0.01',
    },
    payTo: env.PAY_TO,
    ledger: createLedger({ url: env.LEDGER_URL, timeoutMs: 10_000 }),
    store: createMemoryStore(),
    secrets: env.SECRET,
  })
  const hono = new Hono<TollgateEnv>()
  hono.use(paid)
  hono.get('/free', (c) => c.text('free'))
  // What this runtime is, for the test: workerd, with none of Node's globals.
  hono.get('/runtime', (c) => {
    const globals = globalThis as { Buffer?: unknown; process?: unknown }
    return c.json({
      userAgent: globalThis.navigator?.userAgent,
      buffer: typeof globals.Buffer,
      process: typeof globals.process,
    })
  })
  hono.post('/v1/echo', (c) => {
    const { payment, body } = c.get('tollgate')
    return c.json({ text: (body as { text: string }).text, payer: payment.payer })
  })
  hono.get('/v1/quote', (c) => c.json({ quote: 'paid', digest: c.get('tollgate').payment.digest }))
  return { hono, paid }
}

export default {
  fetch(request: Request, env: WorkerEnv): Response | Promise<Response> {
    app ??= build(env)
    return app.hono.fetch(request, env)
  },
}
