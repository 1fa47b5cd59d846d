/**
 * A paid Koa route (with @koa/router). Run: `npx tsx examples/koa.ts` (add `--once` to exit after
 * the demo). The imports are the ones your app writes.
 */
import Router from '@koa/router'
import Koa from 'koa'
import { createMemoryStore } from 'tollgate'
import { paywall } from 'tollgate/koa'
import { startLocal } from './local.js'

const local = await startLocal()

const paid = paywall({
  payTo: local.seller.toSuiAddress(),
  ledger: local.ledger.url,
  store: createMemoryStore(),
  secrets: [local.secret],
  refundSigner: local.seller,
})

const router = new Router()
router.get('/v1/joke', paid.pay('0.01', { description: 'A joke, freshly told' }), (ctx) => {
  ctx.body = { joke: 'A SQL query walks into a bar…', paidBy: ctx.state.tollgate.payment.payer }
})
const app = new Koa()
app.use(router.routes())

const server = app.listen(local.port, '127.0.0.1', () => {
  void local.demo(`http://127.0.0.1:${local.port}/v1/joke`, () => {
    server.close()
    void paid.close()
  })
})
server.on('error', local.listenFailed)
