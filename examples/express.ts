/**
 * A paid Express route. Run: `npx tsx examples/express.ts` (add `--once` to exit after the demo).
 * In your app, import from `tollgate/express` and `tollgate` instead of the relative paths.
 */
import express from 'express'
import { paywall } from '../adapters/express.js'
import { createMemoryStore } from '../src/index.js'
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

const app = express()
app.use(paid)
app.get('/v1/joke', (_req, res) => {
  res.json({ joke: 'A SQL query walks into a bar…', paidBy: res.locals.tollgate.payment.payer })
})

const server = app.listen(local.port, '127.0.0.1', () => {
  void local.demo(`http://127.0.0.1:${local.port}/v1/joke`, () => {
    server.close()
    void paid.close()
  })
})
