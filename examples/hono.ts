/**
 * A paid Hono route on Node. Run: `npx tsx examples/hono.ts` (add `--once` to exit after the
 * demo). The imports are the ones your app writes.
 */
import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import { createMemoryStore } from 'tollgate'
import { paywall, type TollgateEnv } from 'tollgate/hono'
import { startLocal } from './local.js'

const local = await startLocal()

const paid = paywall({
  routes: { 'GET /v1/joke': { price: '0.01', description: 'A joke, freshly told' } },
  payTo: local.seller.toSuiAddress(),
  ledger: local.ledger.url,
  store: createMemoryStore(),
  secrets: [local.secret],
  refundSigner: local.seller,
})

const app = new Hono<TollgateEnv>()
app.use(paid)
app.get('/v1/joke', (c) =>
  c.json({ joke: 'A SQL query walks into a bar…', paidBy: c.get('tollgate').payment.payer }),
)

const server = serve({ port: local.port, hostname: '127.0.0.1', fetch: app.fetch }, () => {
  void local.demo(`http://127.0.0.1:${local.port}/v1/joke`, () => {
    server.close()
    void paid.close()
  })
})
server.on('error', local.listenFailed)
