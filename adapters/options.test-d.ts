import Router from '@koa/router'
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import express from 'express'
import { Hono } from 'hono'
import Koa from 'koa'
import { describe, expectTypeOf, it } from 'vitest'
import { z } from 'zod'
import type { PaidRequestInfo, SellerOptions } from '../src/engine/sellerTypes.js'
import type { PaymentInfo } from '../src/engine/types.js'
import type { Ledger } from '../src/ledger/index.js'
import { createMemoryStore } from '../src/stores/memory.js'
import {
  type ExpressPaywall,
  type ExpressPaywallOptions,
  paywall as expressPaywall,
  type PaidHandler,
} from './express.js'
import { paywall as honoPaywall, type TollgateEnv } from './hono.js'
import { paywall as koaPaywall } from './koa.js'

const base = {
  payTo: '0x1',
  ledger: 'http://127.0.0.1:9000',
  store: createMemoryStore(),
  secrets: 'a-challenge-secret-of-at-least-32-bytes!',
}

describe('the one options object', () => {
  it('is the same type for every framework', () => {
    expectTypeOf<ExpressPaywallOptions>().toEqualTypeOf<SellerOptions>()
    expectTypeOf(koaPaywall).parameter(0).toEqualTypeOf<SellerOptions>()
    expectTypeOf(honoPaywall).parameter(0).toEqualTypeOf<SellerOptions>()
  })

  it('requires payTo, ledger, store and secrets', () => {
    expressPaywall(base)
    // @ts-expect-error store is required
    expressPaywall({ payTo: '0x1', ledger: 'http://x', secrets: 's' })
    // @ts-expect-error payTo is required
    koaPaywall({ ledger: 'http://x', store: createMemoryStore(), secrets: 's' })
    // @ts-expect-error secrets is required
    honoPaywall({ payTo: '0x1', ledger: 'http://x', store: createMemoryStore() })
  })

  it('takes the ledger as a URL or a Ledger, and one secret or several', () => {
    expectTypeOf<SellerOptions['ledger']>().toEqualTypeOf<string | Ledger>()
    expressPaywall({ ...base, secrets: ['new-secret', 'old-secret'] })
    expressPaywall({ ...base, secrets: new Uint8Array(32) })
    // @ts-expect-error the ledger is a URL or a Ledger
    expressPaywall({ ...base, ledger: 42 })
  })

  it('types the route table: a price, or a route with schema and options', () => {
    expressPaywall({
      ...base,
      routes: {
        'POST /v1/answer': '0.02',
        'GET /v1/files/*': 10_000n,
        'POST /v1/things/:id': {
          price: '$0.05',
          description: 'a thing',
          mimeType: 'text/event-stream',
          maxTimeoutSeconds: 30,
          body: z.object({ text: z.string() }),
          failedStatuses: [404, 409],
          commit: 'manual',
        },
      },
    })
    // @ts-expect-error a price is a string or a bigint, never a float
    expressPaywall({ ...base, routes: { 'GET /x': 0.02 } })
    // @ts-expect-error unknown route option
    expressPaywall({ ...base, routes: { 'GET /x': { price: '0.01', cost: 1 } } })
  })

  it('takes only the documented enumerations', () => {
    expressPaywall({ ...base, offer: 'mpp', trustProxy: true, publicBaseUrl: 'https://api.x' })
    // @ts-expect-error offer is both, x402 or mpp
    expressPaywall({ ...base, offer: 'stripe' })
    // @ts-expect-error commit is 'handler' or 'manual'
    expressPaywall({ ...base, routes: { 'GET /x': { price: '0.01', commit: 'later' } } })
  })

  it('takes an operator signer for refunds and a pino-compatible logger', () => {
    expectTypeOf<Ed25519Keypair>().toExtend<NonNullable<SellerOptions['refundSigner']>>()
    const logger = { info() {}, warn() {}, error() {} }
    honoPaywall({ ...base, logger, onEvent: (event) => expectTypeOf(event.type).toBeString() })
  })
})

describe('what a paid handler reads', () => {
  it('types res.locals.tollgate (Express): set on priced requests, never any', () => {
    const paid = expressPaywall(base)
    const app = express()
    app.use(paid)
    app.get('/table', (_req, res) => {
      expectTypeOf(res.locals.tollgate).toEqualTypeOf<PaidRequestInfo | undefined>()
      expectTypeOf(res.locals.tollgate?.payment).toEqualTypeOf<PaymentInfo | undefined>()
    })
    app.post('/route', paid.pay('0.01'), (_req, res) => {
      expectTypeOf(res.locals.tollgate).toEqualTypeOf<PaidRequestInfo>()
      expectTypeOf(res.locals.tollgate.payment.amount).toEqualTypeOf<bigint>()
      expectTypeOf(res.locals.tollgate.commit).toEqualTypeOf<() => boolean>()
      // @ts-expect-error no such field on the payment
      void res.locals.tollgate.payment.nonsense
    })
  })

  it('types ctx.state.tollgate (Koa): set on priced requests, never any', () => {
    const paid = koaPaywall(base)
    new Koa().use(paid).use((ctx) => {
      expectTypeOf(ctx.state.tollgate).toEqualTypeOf<PaidRequestInfo | undefined>()
    })
    new Koa().use(paid.pay('0.01')).use((ctx) => {
      expectTypeOf(ctx.state.tollgate).toEqualTypeOf<PaidRequestInfo>()
      // @ts-expect-error no such field on the payment
      void ctx.state.tollgate.payment.nonsense
    })
    new Router().post('/route', paid.pay('0.01'), (ctx) => {
      expectTypeOf(ctx.state.tollgate.payment).toEqualTypeOf<PaymentInfo>()
    })
  })
})

describe('the middleware shapes', () => {
  it('is a framework middleware with pay() of the same framework', () => {
    const paid = expressPaywall(base)
    expectTypeOf(paid).toExtend<express.RequestHandler>()
    expectTypeOf(paid.pay('0.01')).toEqualTypeOf<PaidHandler>()
    express().post('/x', paid.pay('0.01', { description: 'x' }), (_req, res) => {
      res.json({})
    })
    // @ts-expect-error the price goes in the first argument, not in routeOptions
    paid.pay('0.01', { price: '0.02' })
    expectTypeOf<ExpressPaywall['close']>().returns.toEqualTypeOf<Promise<void>>()

    const koa = koaPaywall(base)
    new Koa().use(koa).use(koa.pay('0.01'))

    const hono = honoPaywall(base)
    new Hono<TollgateEnv>().post('/x', hono.pay('0.01'), (c) => {
      expectTypeOf(c.get('tollgate').payment).toEqualTypeOf<PaymentInfo>()
      return c.json({})
    })
  })
})
