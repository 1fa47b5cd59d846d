/**
 * Test-only set-up of the client's integration tests (and `tollgate pay`'s), not part of
 * `tollgate/client`: local sellers, one loopback server with the real paywall over the ledger
 * emulator, and a route per condition the buyer must meet (both dialects, one dialect only, wUSDC,
 * another network, escrow, flaky answers, a payment still settling, an OpenAI-style chat route
 * buffered and streamed).
 *
 * @module
 * @internal
 */
import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { afterAll, beforeAll } from 'vitest'
import { z } from 'zod'
import { paymentRequiredResponse } from '../challenge.js'
import { createPaywall } from '../engine/paywall.js'
import type { PaidRoute } from '../engine/types.js'
import { PaymentError } from '../errors.js'
import { nodeFetch } from '../internal/nodeFetch.js'
import { createLedger } from '../ledger/index.js'
import { parseAmount } from '../money.js'
import { createMemoryStore } from '../stores/memory.js'
import { type StartedLedger, useTestLedger, WORMHOLE_USDC_TYPE } from '../testing/index.js'

/** The running sellers. */
export type Sellers = {
  chain: StartedLedger
  base: string
  payTo: string
  /** Handler calls (paid and served) by path. */
  calls: Map<string, number>
  /** Every request seen, by path: method, content type and payment headers. */
  seen: Map<
    string,
    {
      contentType: string | null
      xPayment: string | null
      paymentSignature: string | null
      authorization: string | null
    }[]
  >
  /** Moves the sellers' clock (challenge expiry) by `ms`. */
  skew(ms: number): void
  usdcOf(address: string): Promise<bigint>
}

const secret = 'a-challenge-secret-of-at-least-32-bytes!'

/** A chat.completion object as the OpenAI API returns it. */
export function chatCompletion(content: string) {
  return {
    id: 'chatcmpl-test',
    object: 'chat.completion',
    created: 1_700_000_000,
    model: 'test-model',
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content, refusal: null },
        finish_reason: 'stop',
        logprobs: null,
      },
    ],
    usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 },
  }
}

function chunk(content: string | null, finish: string | null) {
  return {
    id: 'chatcmpl-test',
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model: 'test-model',
    choices: [
      {
        index: 0,
        delta: content === null ? {} : { content },
        finish_reason: finish,
        logprobs: null,
      },
    ],
  }
}

/** The SSE stream of a chat completion, in pieces, ending with `[DONE]`. */
export function chatStream(pieces: readonly string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder()
  const events = [...pieces.map((p) => chunk(p, null)), chunk(null, 'stop')].map(
    (c) => `data: ${JSON.stringify(c)}\n\n`,
  )
  events.push('data: [DONE]\n\n')
  return new ReadableStream({
    async pull(controller) {
      const next = events.shift()
      if (next === undefined) controller.close()
      else {
        await new Promise((resolve) => setTimeout(resolve, 5))
        controller.enqueue(encoder.encode(next))
      }
    },
  })
}

const chatBody = z.looseObject({
  model: z.string().max(100),
  messages: z.array(z.looseObject({ role: z.string(), content: z.string() })).max(50),
  stream: z.boolean().optional(),
})

/** Whether a request carries an x402 payment of either version. */
const x402Paid = (request: Request) =>
  request.headers.has('x-payment') || request.headers.has('payment-signature')

/** The payment credential a request carries, in any dialect; null without one. */
const credentialOf = (request: Request) =>
  request.headers.get('payment-signature') ??
  request.headers.get('x-payment') ??
  (/^Payment /i.test(request.headers.get('authorization') ?? '')
    ? request.headers.get('authorization')
    : null)

/**
 * Starts a test ledger and the sellers on 127.0.0.1 before the file's tests and stops them after;
 * the handle is readable from `beforeAll` on.
 */
export function useSellers(): Sellers {
  const chain = useTestLedger({ beforeAll, afterAll })
  let started: { sellers: Sellers; close(): Promise<void> } | undefined
  beforeAll(async () => {
    started = await startSellers(chain.ledger)
  })
  afterAll(async () => {
    await started?.close()
  })
  const running = () => {
    if (!started) throw new Error('useSellers: the sellers are readable from beforeAll on')
    return started.sellers
  }
  return {
    get chain() {
      return running().chain
    },
    get base() {
      return running().base
    },
    get payTo() {
      return running().payTo
    },
    get calls() {
      return running().calls
    },
    get seen() {
      return running().seen
    },
    skew: (ms) => running().skew(ms),
    usdcOf: (address) => running().usdcOf(address),
  }
}

/** Starts the sellers on 127.0.0.1, paid on `chain`. */
async function startSellers(
  chain: StartedLedger,
): Promise<{ sellers: Sellers; close(): Promise<void> }> {
  const payTo = new Ed25519Keypair().toSuiAddress()
  let skew = 0
  const common = {
    payTo,
    ledger: createLedger({ url: chain.url, fetch: nodeFetch }),
    store: createMemoryStore(),
    secrets: [secret],
    now: () => Date.now() + skew,
  }
  const both = createPaywall(common)
  const mppOnly = createPaywall({ ...common, offer: 'mpp' })
  const x402Only = createPaywall({ ...common, offer: 'x402' })
  const wusdc = createPaywall({ ...common, asset: WORMHOLE_USDC_TYPE })
  const testnet = createPaywall({ ...common, network: 'sui:testnet' })
  const calls = new Map<string, number>()
  const seen: Sellers['seen'] = new Map()
  const count = (path: string) => calls.set(path, (calls.get(path) ?? 0) + 1)
  const answer = (path: string) => async (request: Request, paid: { body: unknown }) => {
    count(path)
    let body = paid.body
    if (body === undefined) {
      const text = await request.text().catch(() => '')
      body = text ? JSON.parse(text) : null
    }
    return Response.json({ ok: true, path, body: body ?? null })
  }
  const route = (price: string, extra: Partial<PaidRoute> = {}): PaidRoute => ({ price, ...extra })
  const cheap = route('0.02')
  const flakyCount = { unpaid: 0, paid: 0 }
  /** Payments the `/pending-once` proxy has answered `settlement_pending` once already. */
  const heldOnce = new Set<string>()
  /**
   * The seller's answer to a payment another process still holds (the engine's wire form): 402
   * `settlement_pending` with a fresh challenge and `Retry-After: 1`.
   */
  const settlementPending = (request: Request) => {
    const response = paymentRequiredResponse(
      { price: parseAmount(cheap.price), payTo, resource: request.url },
      {
        secrets: [secret],
        error: new PaymentError(
          'settlement_pending',
          'This payment is being processed by another request: present it again after Retry-After.',
        ),
      },
    )
    response.headers.set('retry-after', '1')
    return response
  }

  const handlers: Record<string, (request: Request) => Promise<Response>> = {
    '/paid': both.protect(cheap, answer('/paid')),
    '/dear': both.protect(route('0.10'), answer('/dear')),
    '/echo': both.protect(
      route('0.02', { body: z.object({ text: z.string().max(100) }) }),
      (request, paid) => {
        count('/echo')
        return Response.json({ body: paid.body, contentType: request.headers.get('content-type') })
      },
    ),
    '/mpp-only': mppOnly.protect(cheap, answer('/mpp-only')),
    '/x402-only': x402Only.protect(cheap, answer('/x402-only')),
    // A seller that offers x402 version 1 only: its 402 carries no PAYMENT-REQUIRED.
    '/v1-only': async (request) => {
      const response = await x402Only.protect(cheap, answer('/v1-only'))(request)
      if (response.status !== 402) return response
      const headers = new Headers(response.headers)
      headers.delete('payment-required')
      return new Response(response.body, { status: 402, headers })
    },
    '/wusdc': wusdc.protect(cheap, answer('/wusdc')),
    '/testnet': testnet.protect(cheap, answer('/testnet')),
    '/escrow': async (request) =>
      paymentRequiredResponse(
        {
          price: 20_000n,
          payTo,
          resource: request.url,
          escrow: { package: chain.modulesPackage, releaseAfterSeconds: 3600 },
        },
        { secrets: [secret] },
      ),
    '/flaky': async (request) => {
      if (flakyCount.unpaid < 2 && !x402Paid(request)) {
        flakyCount.unpaid++
        return new Response('busy', { status: 503, headers: { 'retry-after': '0' } })
      }
      return both.protect(cheap, answer('/flaky'))(request)
    },
    '/flaky-paid': async (request) => {
      if (flakyCount.paid < 1 && x402Paid(request)) {
        flakyCount.paid++
        return new Response('bad gateway', { status: 502 })
      }
      return both.protect(cheap, answer('/flaky-paid'))(request)
    },
    // A proxy in front of the seller: each payment's first presentation is answered as while
    // another process holds it (`settlement_pending`, Retry-After: 1); a later one is forwarded.
    '/pending-once': async (request) => {
      const credential = credentialOf(request)
      if (credential !== null && !heldOnce.has(credential)) {
        heldOnce.add(credential)
        return settlementPending(request)
      }
      return both.protect(cheap, answer('/pending-once'))(request)
    },
    // The same proxy for a payment held for good: every presentation is `settlement_pending`.
    '/pending-always': async (request) =>
      credentialOf(request) === null
        ? both.protect(cheap, answer('/pending-always'))(request)
        : settlementPending(request),
    '/v1/chat/completions': both.protect(route('0.05', { body: chatBody }), (_request, paid) => {
      count('/v1/chat/completions')
      const body = paid.body as z.infer<typeof chatBody>
      if (body.stream) {
        return new Response(chatStream(['Hello', ', ', 'buyer', '!']), {
          headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' },
        })
      }
      return Response.json(chatCompletion('Hello, buyer!'))
    }),
  }
  const server = serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch: (request) => {
      const path = new URL(request.url).pathname
      const log = seen.get(path) ?? []
      log.push({
        contentType: request.headers.get('content-type'),
        xPayment: request.headers.get('x-payment'),
        paymentSignature: request.headers.get('payment-signature'),
        authorization: request.headers.get('authorization'),
      })
      seen.set(path, log)
      const handler = handlers[path]
      return handler ? handler(request) : new Response('not found', { status: 404 })
    },
  })
  await new Promise((resolve) => server.once('listening', resolve))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const sellers: Sellers = {
    chain,
    base,
    payTo,
    calls,
    seen,
    skew: (ms) => {
      skew += ms
    },
    async usdcOf(address) {
      return (await common.ledger.getBalance(address, chain.usdcType)).total
    },
  }
  return { sellers, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}
