/**
 * A seller taking MPP sessions on the local ledger, for tests: a paywall on loopback with the
 * built-in methods and the session method, its channel books in memory. `/call` answers 200 and
 * counts the calls it served (`/slow` the same, 300 ms later); `/failing` answers 503 (a failed call: nothing is spent for it);
 * `POST /tokens?n=N` streams N token events (and `[DONE]`) metered per token at
 * {@link sessionTokenPrice} through a second session method, priced per token, on the same books
 * (`&wait=MS` starts the answer that much later, `&plain` answers JSON without metering);
 * `/openapi.json` lists `/call` and `/failing` as paid POSTs (what `tollgate mcp` reads a catalog
 * from).
 */
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { serve } from '@hono/node-server'
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { afterAll, beforeAll } from 'vitest'
import { createChannelBook } from '../../client/channelBook.js'
import { createSessionFetch } from '../../client/sessions.js'
import { createPaywall } from '../../engine/paywall.js'
import { createLedger } from '../../ledger/index.js'
import { builtInMethods } from '../../methods/index.js'
import { createSessionMethod } from '../../methods/mppSession.js'
import { createMemoryStore } from '../../stores/memory.js'
import type { TestLedger } from '../../testing/ledger/testLedger.js'
import { type ChannelStore, createMemoryChannelStore } from '../channelStore.js'

/** The running seller (readable from `beforeAll` on). */
export type SessionSeller = {
  readonly base: string
  readonly payee: Ed25519Keypair
  readonly channels: ChannelStore
  /** The calls `/call` served. */
  readonly served: number
}

/** The price of one streamed token of `/tokens`, base units. */
export const sessionTokenPrice = 100n

/** The events `/tokens` streams: `n` chunks, then `[DONE]`. */
function tokenEvents(n: number): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder()
  let i = 0
  return new ReadableStream({
    pull(controller) {
      if (i < n) controller.enqueue(encoder.encode(`data: {"token":${i++}}\n\n`))
      else {
        controller.enqueue(encoder.encode('data: [DONE]\n\n'))
        controller.close()
      }
    },
  })
}

/**
 * What a test buyer of the local ledger starts from: a fresh funded wallet, the ledger's client, and
 * the ledger's channel package and registry pinned.
 */
export function pinnedBuyer(chain: TestLedger) {
  const wallet = chain.createTestWallet({ usdc: '5', sui: '1' })
  return {
    wallet,
    options: {
      signer: wallet,
      client: chain.client,
      pinned: [
        { network: 'mainnet', package: chain.modulesPackage, registry: chain.channel.registry },
      ],
    },
  }
}

/** The challenge secret of the seller's 402s. */
export const sessionSellerSecret = 'a-challenge-secret-of-at-least-32-bytes!'

/**
 * Starts the seller before the file's tests (on `chain`) and stops it after them; its channel books
 * in memory, or in the store `channelStore` makes.
 */
export function useSessionSeller(
  chain: TestLedger,
  price = '0.01',
  channelStore: () => ChannelStore = createMemoryChannelStore,
): SessionSeller {
  let started: (Omit<SessionSeller, 'served'> & { close(): void }) | undefined
  let served = 0
  beforeAll(async () => {
    const payee = chain.createTestWallet({ usdc: '0', sui: '1' })
    const channels = channelStore()
    const common = {
      client: chain.client,
      signer: payee,
      package: chain.modulesPackage,
      registry: chain.channel.registry,
      store: channels,
      network: 'mainnet',
    }
    const session = createSessionMethod(common)
    const tokenOptions = {
      ...common,
      unitType: 'token',
      unitPrice: sessionTokenPrice,
      voucherWaitMs: 2_000,
    } as const
    const perToken = createSessionMethod(tokenOptions)
    // Each unit after the first spent durably before it leaves (`/tokens-alone`).
    const perTokenAlone = createSessionMethod({ ...tokenOptions, unitWindow: 1 })
    const paywall = createPaywall({
      payTo: payee.toSuiAddress(),
      ledger: createLedger({ url: chain.url }),
      store: createMemoryStore(),
      secrets: [sessionSellerSecret],
      methods: [...builtInMethods, session],
    })
    const call = paywall.protect({ price }, () => {
      served++
      return Response.json({ ok: true, n: served })
    })
    const failing = paywall.protect({ price }, () => new Response('down', { status: 503 }))
    const metering = (method: typeof perToken) =>
      paywall.protect(
        { price: '0.05', methods: [...builtInMethods, method] },
        async (request, paid) => {
          const query = new URL(request.url).searchParams
          const n = Number(query.get('n') ?? '10')
          // `wait` ms before the answer starts (an upstream's time to its first byte); `plain`
          // answers without metering anything.
          const wait = Number(query.get('wait') ?? '0')
          if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
          if (query.has('plain')) return Response.json({ ok: true })
          const body =
            paid.payment.method === method.name
              ? method.stream(paid.payment, tokenEvents(n), { signal: request.signal })
              : tokenEvents(n)
          return new Response(body, { headers: { 'content-type': 'text/event-stream' } })
        },
      )
    const tokens = metering(perToken)
    const tokensAlone = metering(perTokenAlone)
    const slow = paywall.protect({ price }, async () => {
      await new Promise((resolve) => setTimeout(resolve, 300))
      served++
      return Response.json({ ok: true, n: served })
    })
    const routes: Record<string, (request: Request) => Promise<Response>> = {
      '/slow': slow,
      '/failing': failing,
      '/tokens': tokens,
      '/tokens-alone': tokensAlone,
    }
    const server = serve({
      port: 0,
      hostname: '127.0.0.1',
      fetch: (request) => {
        const { pathname } = new URL(request.url)
        if (pathname === '/openapi.json') return Response.json(openApiOf(price))
        return (routes[pathname] ?? call)(request)
      },
    })
    await new Promise((resolve) => server.once('listening', resolve))
    const address = server.address()
    const port = typeof address === 'object' && address !== null ? address.port : 0
    started = { base: `http://127.0.0.1:${port}`, payee, channels, close: () => server.close() }
  })
  afterAll(() => started?.close())
  const running = () => {
    if (started === undefined) throw new Error('useSessionSeller: readable from beforeAll on')
    return started
  }
  return {
    get base() {
      return running().base
    },
    get payee() {
      return running().payee
    },
    get channels() {
      return running().channels
    },
    get served() {
      return served
    },
  }
}

/**
 * A buyer of sessions on `chain`: a fresh wallet (5 USDC, 1 SUI) and its session `fetch`, pinned to
 * the ledger's channel package, deposits up to 1 USDC, its book in a fresh folder.
 */
export async function sessionBuyer(chain: TestLedger) {
  const { wallet, options } = pinnedBuyer(chain)
  const folder = await mkdtemp(join(tmpdir(), 'tollgate-session-buyer-'))
  const sessions = createSessionFetch({
    ...options,
    maxDeposit: 1_000_000n,
    book: createChannelBook(join(folder, 'book.json')),
  })
  return { wallet, sessions }
}

/** The seller's OpenAPI document: its two routes, paid per call at `price`. */
function openApiOf(price: string) {
  const paid = (operationId: string) => ({
    post: { operationId, summary: operationId, 'x-payment-info': { price } },
  })
  return { openapi: '3.1.0', paths: { '/call': paid('call'), '/failing': paid('failing') } }
}
