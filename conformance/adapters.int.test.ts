/**
 * A seller built with each of the three adapters (Express, Koa, Hono), written as a user would,
 * passes every check in both modes against the ledger emulator.
 */
import { createServer, type RequestListener } from 'node:http'
import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import Router from '@koa/router'
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import express from 'express'
import { Hono } from 'hono'
import Koa from 'koa'
import { useTestLedger, WORMHOLE_USDC_TYPE } from 'tollgate/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { paywall as expressPaywall } from '../adapters/express.js'
import { paywall as honoPaywall, type TollgateEnv } from '../adapters/hono.js'
import { paywall as koaPaywall } from '../adapters/koa.js'
import type { SellerOptions } from '../src/engine/sellerTypes.js'
import { createMemoryStore } from '../src/stores/memory.js'
import { registerAgent } from './fixtures/agent.js'
import { runConformance } from './run.js'

const chain = useTestLedger({ beforeAll, afterAll })
let seller: Ed25519Keypair

beforeAll(async () => {
  seller = chain.createTestWallet({ usdc: '0' })
  await registerAgent(chain.client, seller, chain.modulesPackage)
})

type Started = { url: string; close(): Promise<void> }

function options(): SellerOptions {
  return {
    // A 2-second challenge lifetime keeps the expiry check short.
    routes: { 'POST /v1/answer': { price: '0.02', maxTimeoutSeconds: 2 } },
    payTo: seller.toSuiAddress(),
    ledger: chain.url,
    store: createMemoryStore(),
    secrets: 'adapter-conformance-secret-of-32-bytes-or-more',
  }
}

function openapi() {
  return {
    openapi: '3.1.0',
    info: { title: 'adapter seller', version: '1.0.0' },
    paths: {
      '/v1/answer': {
        post: {
          'x-payment-info': {
            pricingMode: 'fixed',
            price: '0.020000',
            protocols: ['mpp', 'x402'],
            x402: { scheme: 'exact', network: 'sui:mainnet', payTo: seller.toSuiAddress() },
          },
        },
      },
    },
  }
}

async function listen(listener: RequestListener, stop: () => Promise<void>): Promise<Started> {
  const server = createServer(listener)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/answer`,
    async close() {
      await stop()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

const sellers: Record<'express' | 'koa' | 'hono', () => Promise<Started>> = {
  async express() {
    const paid = expressPaywall(options())
    const app = express()
    app.use(paid)
    app.post('/v1/answer', (_req, res) => {
      res.json({ answer: 42 })
    })
    app.get('/openapi.json', (_req, res) => {
      res.json(openapi())
    })
    return listen(app, () => paid.close())
  },
  async koa() {
    const paid = koaPaywall(options())
    const app = new Koa()
    const router = new Router()
    app.use(paid)
    router.post('/v1/answer', (ctx) => {
      ctx.body = { answer: 42 }
    })
    router.get('/openapi.json', (ctx) => {
      ctx.body = openapi()
    })
    app.use(router.routes())
    app.silent = true
    return listen(app.callback(), () => paid.close())
  },
  async hono() {
    const paid = honoPaywall(options())
    const app = new Hono<TollgateEnv>()
    app.use(paid)
    app.post('/v1/answer', (c) => c.json({ answer: 42 }))
    app.get('/openapi.json', (c) => c.json(openapi()))
    const server = serve({ port: 0, hostname: '127.0.0.1', fetch: app.fetch })
    await new Promise((resolve) => server.once('listening', resolve))
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/answer`,
      async close() {
        await paid.close()
        await new Promise<void>((resolve) => server.close(() => resolve()))
      },
    }
  },
}

describe.each(Object.keys(sellers) as (keyof typeof sellers)[])(
  'a seller built with %s',
  (name) => {
    it.each(['read-only', 'paid'] as const)('passes every check (%s)', async (mode) => {
      const running = await sellers[name]()
      try {
        const report = await runConformance({
          url: running.url,
          agent: seller.toSuiAddress(),
          ledger: chain.client,
          registryPackage: chain.modulesPackage,
          mode,
          ...(mode === 'paid'
            ? {
                wallet: chain.createTestWallet({
                  usdc: '10',
                  extra: { coinType: WORMHOLE_USDC_TYPE, amount: 1_000_000n },
                }),
              }
            : {}),
          allowPrivateNetwork: true,
        })
        const expected = (id: string) =>
          mode === 'paid' || !id.startsWith('paid.') ? 'pass' : 'skip'
        expect(
          report.checks
            .filter((c) => c.status !== expected(c.id))
            .map((c) => `${c.id}: ${c.status} ${c.message}`),
        ).toEqual([])
        expect(report.listable).toBe(true)
      } finally {
        await running.close()
      }
    })
  },
)
