/**
 * A payment method of a third party's own, added without editing the engine or the client: "toy",
 * both halves written here with the package's public exports only. It is a real way to pay (the
 * buyer signs a USDC transfer, the seller settles it on the ledger emulator), on its own headers:
 *
 * - 402: `Toy-Offer: base64(JSON { id, amount, asset, payTo, network })`
 * - paid request: `Toy-Payment: base64(JSON { id, transaction, signature })`
 * - paid answer: `Toy-Receipt: <digest>`
 *
 * CONTRIBUTING.md ("Adding a payment method") points here as the example.
 */
import { serve } from '@hono/node-server'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { fromBase64, toBase64 } from '@mysten/sui/utils'
import { Hono } from 'hono'
import { createLedger, createMemoryStore, Methods, PaymentError, Settle } from 'tollgate'
import { createPayingFetch, paymentOf } from 'tollgate/client'
import { paywall } from 'tollgate/hono'
import { type StartedLedger, startLedger } from 'tollgate/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'

const offerSchema = z.object({
  id: z.string().max(128),
  amount: z.string().regex(/^[0-9]{1,39}$/),
  asset: z.string().max(256),
  payTo: z.string().max(128),
  network: z.string().max(64),
})
const paymentSchema = z.object({
  id: z.string().max(128),
  transaction: z.string().max(16_384),
  signature: z.string().max(1_024),
})

const json64 = (value: unknown) => toBase64(new TextEncoder().encode(JSON.stringify(value)))
function parse64<T>(schema: z.ZodType<T>, value: string): T {
  try {
    return schema.parse(JSON.parse(new TextDecoder().decode(fromBase64(value))))
  } catch {
    throw new PaymentError('malformed_credential', 'The Toy-Payment header is not a toy payment.')
  }
}

/** The toy method: both halves, one object. */
const toy: Methods.PaymentMethod = {
  name: 'toy',
  dialect: 'x402',
  buyerSubmits: false,
  server: {
    label: 'toy',
    how: 'Toy-Payment (toy)',
    unsupportedCode: 'unsupported_scheme',
    classify: (headers) => headers.get('toy-payment') ?? undefined,
    challenge: (parts, { terms, id }) => ({
      ...parts,
      headers: {
        ...parts.headers,
        'Toy-Offer': json64({
          id,
          amount: terms.amount,
          asset: terms.asset,
          payTo: terms.payTo,
          network: terms.network,
        }),
      },
    }),
    settle(credential, { settlement, checkChallenge, context }) {
      const payment = parse64(paymentSchema, credential)
      const verdict = checkChallenge(payment.id)
      if (verdict.status !== 'valid') return { status: 'rejected', error: verdict.error }
      return Settle.settleX402(payment, settlement, context)
    },
    successHeaders: ({ digest }) => {
      const headers = { 'Toy-Receipt': digest }
      return () => headers
    },
  },
  client: {
    label: 'toy',
    rank: 0,
    read({ headers }) {
      const value = headers.get('toy-offer')
      if (value === null) return { offers: [], unreadable: [] }
      try {
        const offer = parse64(offerSchema, value)
        return {
          offers: [
            {
              method: 'toy',
              dialect: 'x402',
              scheme: 'exact',
              network: offer.network,
              asset: offer.asset,
              amount: BigInt(offer.amount),
              payTo: offer.payTo,
              challengeId: offer.id,
              escrow: false,
            },
          ],
          unreadable: [],
        }
      } catch {
        return { offers: [], unreadable: ['malformed Toy-Offer'] }
      }
    },
    escrowTerms: () => undefined,
    async pay(offer, { bytes, signature }) {
      const id = offer.challengeId ?? ''
      return {
        status: 'ready',
        headers: { 'toy-payment': json64({ id, transaction: toBase64(bytes), signature }) },
      }
    },
    receipt: (response) => response.headers.get('toy-receipt') ?? undefined,
  },
}

let chain: StartedLedger
let base: string
let close: () => void
const payTo = new Ed25519Keypair().toSuiAddress()

beforeAll(async () => {
  chain = await startLedger()
  const app = new Hono()
  const paid = paywall({
    payTo,
    ledger: chain.url,
    store: createMemoryStore(),
    secrets: ['a-challenge-secret-of-at-least-32-bytes!'],
    // The toy method only on this paywall's routes; one route also takes the built-in methods.
    methods: [toy],
  })
  app.post('/toy', paid.pay('0.02'), (c) => c.json({ ok: true }))
  app.post(
    '/toy-or-builtin',
    paid.pay('0.02', { methods: [toy, ...Methods.builtInMethods] }),
    (c) => c.json({ ok: true }),
  )
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' })
  await new Promise<void>((resolve) => server.once('listening', () => resolve()))
  const address = server.address()
  base = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`
  close = () => server.close()
})

afterAll(async () => {
  close?.()
  await chain?.stop()
})

const usdcOf = (owner: string) => createLedger({ url: chain.url }).getBalance(owner, chain.usdcType)

describe('a payment method of your own', () => {
  it('is offered alone in the 402: its header, its words in the detail, no built-in offer', async () => {
    const response = await fetch(`${base}/toy`, { method: 'POST' })
    expect(response.status).toBe(402)
    expect(response.headers.get('www-authenticate')).toBeNull()
    expect(response.headers.get('payment-required')).toBeNull()
    const offer = parse64(offerSchema, response.headers.get('toy-offer') ?? '')
    expect(offer).toMatchObject({ amount: '20000', asset: chain.usdcType })
    const body = (await response.json()) as Record<string, unknown>
    expect(body.accepts).toBeUndefined()
    expect(body.detail).toBe(
      'This resource costs 0.020000 USDC on sui:mainnet. Pay with Toy-Payment (toy).',
    )
  })

  it('is paid by a client given the method: the money arrives, the receipt is read, a replay is refused', async () => {
    const buyer = chain.createTestWallet({ usdc: '1', into: 'addressBalance' })
    let presented: string | undefined
    const pay = createPayingFetch({
      signer: buyer,
      ledger: chain.url,
      methods: [toy],
      limits: false,
      fetch: (request) => {
        presented ??= request.headers.get('toy-payment') ?? undefined
        return fetch(request)
      },
    })
    const before = (await usdcOf(payTo)).total
    const response = await pay(`${base}/toy`, { method: 'POST' })
    expect(response.status).toBe(200)
    const payment = paymentOf(response)
    expect(payment).toMatchObject({ method: 'toy', dialect: 'x402', amount: 20_000n })
    expect(payment?.receipt?.value).toBe(payment?.digest)
    expect((await usdcOf(payTo)).total - before).toBe(20_000n)

    // The same toy payment presented again is refused by the engine, whatever the method.
    const replay = await fetch(`${base}/toy`, {
      method: 'POST',
      headers: { 'toy-payment': presented ?? '' },
    })
    expect(replay.status).toBe(402)
    expect(((await replay.json()) as { code?: string }).code).toBe('replay')
  })

  it('refuses a built-in credential at a route that takes only the toy method, by name', async () => {
    const response = await fetch(`${base}/toy`, {
      method: 'POST',
      headers: { authorization: 'Payment eyJ9' },
    })
    expect(response.status).toBe(400)
    expect(await response.json()).toMatchObject({
      code: 'method_unsupported',
      detail: 'This route takes toy payments only.',
    })
  })

  it('is unknown to a client without it: nothing is paid', async () => {
    const buyer = chain.createTestWallet({ usdc: '1', into: 'addressBalance' })
    const pay = createPayingFetch({ signer: buyer, ledger: chain.url, limits: false })
    const error = await pay(`${base}/toy`, { method: 'POST' }).catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'NO_PAYABLE_REQUIREMENT' })
    expect((await usdcOf(buyer.toSuiAddress())).total).toBe(1_000_000n)
  })

  it('sits beside the built-in methods on one route: each client pays in a method it has', async () => {
    const probe = await fetch(`${base}/toy-or-builtin`, { method: 'POST' })
    expect(probe.headers.get('toy-offer')).not.toBeNull()
    expect(probe.headers.get('www-authenticate')).not.toBeNull()
    expect(((await probe.json()) as { detail: string }).detail).toBe(
      'This resource costs 0.020000 USDC on sui:mainnet. Pay with Toy-Payment (toy) or X-PAYMENT (x402) or Authorization: Payment (MPP).',
    )
    for (const methods of [undefined, [toy]]) {
      const buyer = chain.createTestWallet({ usdc: '1', into: 'addressBalance' })
      const pay = createPayingFetch({ signer: buyer, ledger: chain.url, methods, limits: false })
      const response = await pay(`${base}/toy-or-builtin`, { method: 'POST' })
      expect(response.status).toBe(200)
      expect(paymentOf(response)?.method).toBe(methods === undefined ? 'x402v2' : 'toy')
    }
  })
})
