/**
 * A paid Express route. Run: `npx tsx examples/express.ts` (add `--once` to exit after the demo).
 * The imports are the ones your app writes (in this repository, tsconfig.json `paths` maps them).
 */
import express from 'express'
import { createMemoryStore } from 'tollgate'
import { paywall } from 'tollgate/express'
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
  // Set on priced requests (this route is priced in the table above); typed, possibly undefined.
  res.json({ joke: 'A SQL query walks into a bar…', paidBy: res.locals.tollgate?.payment.payer })
})

const server = app.listen(local.port, '127.0.0.1', () => {
  void local.demo(`http://127.0.0.1:${local.port}/v1/joke`, () => {
    server.close()
    void paid.close()
  })
})
server.on('error', local.listenFailed)
