/**
 * The Hono adapter on a Web-standard runtime, for real: a seller's Worker (`webRuntime/worker.ts`:
 * Hono, `tollgate/hono`, the memory store, a ledger reached with the runtime's own `fetch`) is
 * bundled with esbuild and run by workerd through `miniflare`, without Node compatibility, so a
 * `node:` import or a Node global on the way would fail it. A real buyer pays it on the ledger
 * emulator on loopback: a 402 first, then a paid 200 with its receipt, in both dialects.
 */
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Miniflare } from 'miniflare'
import { mppAuthorization, useTestLedger, x402PaymentHeader } from 'tollgate/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { decodeReceipt, parseChallenge } from '../src/mpp.js'
import { decodeXPaymentResponse, parsePaymentRequired, x402Headers } from '../src/x402.js'
import { bundleForWeb } from './webRuntime/bundle.js'

const chain = useTestLedger({ beforeAll, afterAll })
let seller: Ed25519Keypair
let buyer: Ed25519Keypair
let worker: Miniflare
const base = 'https://seller.example'

const usdcOf = (address: string) => chain.usdcBalance(address)

/** A request to the Worker, answered by workerd (miniflare's `Response` read into a Web one). */
async function send(path: string, init: RequestInit = {}): Promise<Response> {
  const answer = await worker.dispatchFetch(`${base}${path}`, init as never)
  const body = await answer.arrayBuffer()
  return new Response(body.byteLength === 0 ? null : body, {
    status: answer.status,
    headers: [...answer.headers] as [string, string][],
  })
}

beforeAll(async () => {
  seller = chain.createTestWallet({ usdc: '0' })
  buyer = chain.createTestWallet({ usdc: '1' })
  const { code, nodeImports } = await bundleForWeb('adapters/webRuntime/worker.ts')
  expect(nodeImports).toEqual([])
  worker = new Miniflare({
    modules: true,
    script: code,
    // No `nodejs_compat` flag: no `node:` module and no `Buffer` or `process` global exist.
    compatibilityDate: '2025-09-01',
    bindings: {
      LEDGER_URL: chain.url,
      PAY_TO: seller.toSuiAddress(),
      SECRET: 'a-challenge-secret-of-at-least-32-bytes!',
    },
  })
  await worker.ready
})

afterAll(async () => {
  await worker?.dispose()
})

describe('the Hono adapter under workerd', () => {
  it('runs in workerd without Node: no Buffer and no process', async () => {
    const runtime = await send('/runtime')
    expect(await runtime.json()).toEqual({
      userAgent: 'Cloudflare-Workers',
      buffer: 'undefined',
      process: 'undefined',
    })
    const free = await send('/free')
    expect(free.status).toBe(200)
    expect(await free.text()).toBe('free')
  })

  it('answers a body that fails the route schema with a 400, before any charge', async () => {
    const response = await send('/v1/echo', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: 42 }),
    })
    expect(response.status).toBe(400)
  })

  it('pays an x402 route end to end: 402, then a paid 200 with its receipt', async () => {
    const body = JSON.stringify({ text: 'hello from workerd' })
    const post = (headers: Record<string, string> = {}) =>
      send('/v1/echo', {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body,
      })
    const challenge = await post()
    expect(challenge.status).toBe(402)
    expect(challenge.headers.get('www-authenticate')).toMatch(/^Payment /)
    const requirement = parsePaymentRequired(await challenge.json()).accepts[0]
    if (requirement === undefined) throw new Error('the 402 offers no x402 requirement')
    expect(requirement).toMatchObject({
      payTo: seller.toSuiAddress(),
      maxAmountRequired: '20000',
      resource: `${base}/v1/echo`,
    })

    const before = await usdcOf(seller.toSuiAddress())
    const header = await x402PaymentHeader(chain.client, buyer, requirement)
    const paid = await post({ [x402Headers.payment]: header })
    expect(paid.status).toBe(200)
    expect(await paid.json()).toEqual({
      text: 'hello from workerd',
      payer: buyer.toSuiAddress(),
    })
    const receipt = decodeXPaymentResponse(paid.headers.get(x402Headers.paymentResponse) ?? '')
    expect(receipt).toMatchObject({ success: true, payer: buyer.toSuiAddress() })
    expect(await usdcOf(seller.toSuiAddress())).toBe(before + 20_000n)

    const replayed = await post({ [x402Headers.payment]: header })
    expect(replayed.status).toBe(402)
    expect(replayed.headers.get(x402Headers.paymentResponse)).toBeNull()
  })

  it('pays an MPP route end to end: 402, then a paid 200 with its Payment-Receipt', async () => {
    const challenge = await send('/v1/quote')
    expect(challenge.status).toBe(402)
    const mpp = parseChallenge(challenge.headers.get('www-authenticate') ?? '')
    const { authorization, digest } = await mppAuthorization(chain.client, buyer, mpp)
    const paid = await send('/v1/quote', { headers: { authorization } })
    expect(paid.status).toBe(200)
    expect(await paid.json()).toEqual({ quote: 'paid', digest })
    expect(decodeReceipt(paid.headers.get('payment-receipt') ?? '')).toMatchObject({
      status: 'success',
      reference: digest,
    })
  })
})
