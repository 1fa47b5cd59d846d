/**
 * Test-only: what the marketplace tests share — a paid seller built with each adapter (Express,
 * Koa, Hono) on 127.0.0.1, and a listing submitted as a seller does it (prepare, sign the message
 * with a Sui personal-message signature, submit).
 */
import { createServer, type RequestListener } from 'node:http'
import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import Router from '@koa/router'
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import express from 'express'
import { Hono } from 'hono'
import Koa from 'koa'
import { createMemoryStore, type SellerOptions } from 'tollgate'
import { paywall as expressPaywall } from 'tollgate/express'
import { paywall as honoPaywall, type TollgateEnv } from 'tollgate/hono'
import { paywall as koaPaywall } from 'tollgate/koa'
import type { RunningSeller } from '../../conformance/fixtures/sellers.js'

/** The adapters a seller can be built with. */
export type AdapterName = 'express' | 'koa' | 'hono'
/** Every adapter, in a stable order. */
export const adapterNames: readonly AdapterName[] = ['express', 'koa', 'hono']

/** What an adapter seller is started with. */
export type AdapterSellerOptions = {
  /** The recipient of its payments (the seller's agent address, for gate c). */
  payTo: string
  ledgerUrl: string
  /** USDC per call. Default `0.02`. */
  price?: string | undefined
}

/** The paid path of every adapter seller; it answers `{ answer: 42 }`. */
export const adapterSellerPath = '/v1/answer'

function sellerOptions(options: AdapterSellerOptions): SellerOptions {
  return {
    routes: {
      [`POST ${adapterSellerPath}`]: { price: options.price ?? '0.02', maxTimeoutSeconds: 2 },
    },
    payTo: options.payTo,
    ledger: options.ledgerUrl,
    store: createMemoryStore(),
    secrets: 'marketplace-submission-secret-of-32-bytes-or-more',
  }
}

async function listen(
  listener: RequestListener,
  stop: () => Promise<void>,
): Promise<RunningSeller> {
  const http = createServer(listener)
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}${adapterSellerPath}`,
    async close() {
      await stop()
      http.closeAllConnections()
      await new Promise<void>((resolve) => http.close(() => resolve()))
    },
  }
}

const starters: Record<AdapterName, (options: SellerOptions) => Promise<RunningSeller>> = {
  async express(options) {
    const paid = expressPaywall(options)
    const app = express()
    app.use(paid)
    app.post(adapterSellerPath, (_req, res) => {
      res.json({ answer: 42 })
    })
    return listen(app, () => paid.close())
  },
  async koa(options) {
    const paid = koaPaywall(options)
    const app = new Koa()
    const router = new Router()
    app.use(paid)
    router.post(adapterSellerPath, (ctx) => {
      ctx.body = { answer: 42 }
    })
    app.use(router.routes())
    app.silent = true
    return listen(app.callback(), () => paid.close())
  },
  async hono(options) {
    const paid = honoPaywall(options)
    const app = new Hono<TollgateEnv>()
    app.use(paid)
    app.post(adapterSellerPath, (c) => c.json({ answer: 42 }))
    const http = serve({ port: 0, hostname: '127.0.0.1', fetch: app.fetch })
    await new Promise((resolve) => http.once('listening', resolve))
    return {
      url: `http://127.0.0.1:${(http.address() as AddressInfo).port}${adapterSellerPath}`,
      async close() {
        await paid.close()
        await new Promise<void>((resolve) => http.close(() => resolve()))
      },
    }
  },
}

/** Starts a paid seller built with `adapter` on 127.0.0.1. */
export function startAdapterSeller(
  adapter: AdapterName,
  options: AdapterSellerOptions,
): Promise<RunningSeller> {
  return starters[adapter](sellerOptions(options))
}

/** An answer of the marketplace routes: its status and JSON body. */
export type RouteAnswer = { status: number; json: Record<string, unknown> }

/** POSTs `body` as JSON to `url`. */
export async function postJson(url: string, body: unknown): Promise<RouteAnswer> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  return { status: response.status, json: (await response.json()) as Record<string, unknown> }
}

/**
 * Lists `body.url` as `signer` through the routes at `agentBase` (`…/v1/agent`): prepares, signs
 * the message it returns (a Sui personal-message signature) and submits. Throws when prepare fails;
 * answers the submission.
 */
export async function submitListing(
  agentBase: string,
  signer: Ed25519Keypair,
  body: Record<string, unknown>,
): Promise<RouteAnswer> {
  const address = signer.toSuiAddress()
  const prepared = await postJson(`${agentBase}/endpoint/prepare`, {
    address,
    action: 'submit',
    body,
  })
  if (prepared.status !== 201) throw new Error(`prepare: ${JSON.stringify(prepared.json)}`)
  const { nonce, message } = prepared.json as { nonce: string; message: string }
  const { signature } = await signer.signPersonalMessage(new TextEncoder().encode(message))
  return postJson(`${agentBase}/endpoint/submit`, { address, nonce, signature, body })
}
