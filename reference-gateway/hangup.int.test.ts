/**
 * A buyer who hangs up on the gateway's side-effecting catalog routes (e-mail, postcards, letters,
 * push notifications) after the upstream request was sent: the provider acted, so the payment is
 * served and not refunded, and the upstream request is not aborted. Before it was sent (the buyer
 * left while the payment settled): refunded, and the provider never asked. Balances are read from
 * the ledger, the provider's side from the stub upstreams' own records. The embedded gateway:
 * SQLite, the ledger emulator, the stub upstreams.
 */
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { describe, expect, it } from 'vitest'
import { x402PaymentHeader } from '../src/testing/payments.js'
import { parsePaymentRequired, x402Headers } from '../src/x402.js'
import { examplePathOf, type PaidEndpoint, paidEntries, priceOf } from './catalog/catalog.js'
import { useTestGateway } from './server/testHelpers.js'

const gateway = useTestGateway()
const usdcOf = (address: string) => gateway.usdcBalance(address)

async function until(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out waiting')
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

function endpointAt(path: string): PaidEndpoint {
  const entry = paidEntries(gateway.catalog).find((e) => e.endpoint.path === path)
  if (entry === undefined) throw new Error(`no paid endpoint ${path}`)
  return entry.endpoint
}

/** Signs a payment for `endpoint`'s example request; returns what to send. */
async function paymentFor(endpoint: PaidEndpoint, payer: Ed25519Keypair) {
  const url = `${gateway.url}${examplePathOf(endpoint)}`
  const body = JSON.stringify(endpoint.shape.example)
  const headers = { 'content-type': 'application/json' }
  const challenge = await fetch(url, { method: 'POST', headers, body })
  expect(challenge.status).toBe(402)
  const requirement = parsePaymentRequired(await challenge.json()).accepts[0]
  if (requirement === undefined) throw new Error('no x402 requirement')
  const header = await x402PaymentHeader(gateway.ledgerClient, payer, requirement)
  return { url, body, headers: { ...headers, [x402Headers.payment]: header } }
}

describe('a buyer who hangs up after the upstream request was sent', () => {
  it.each([
    ['an e-mail', '/resend/v1/emails', '/resend/'],
    ['a batch of e-mails', '/resend/v1/emails/batch', '/resend/'],
    ['a postcard', '/lob/v1/postcards', '/lob/v1/postcards'],
    ['a letter', '/lob/v1/letters', '/lob/v1/letters'],
    ['a push notification', '/pushover/v1/push', '/pushover/'],
  ])(
    '%s: the provider acted, so the payment is served, not refunded, and the upstream request is not aborted',
    async (_what, path, providerPath) => {
      const endpoint = endpointAt(path)
      const price = priceOf(endpoint)
      const stubs = gateway.stubs
      if (stubs === undefined) throw new Error('the embedded gateway runs the stub upstreams')
      const payer = gateway.emulator.createTestWallet({ usdc: '5', sui: '1' })
      const start = await usdcOf(payer.toSuiAddress())
      const sellerStart = await usdcOf(gateway.payTo)
      const call = await paymentFor(endpoint, payer)
      const held = stubs.holdNext(providerPath)
      const callsBefore = stubs.calls.length
      const buyer = new AbortController()
      const answer = fetch(call.url, {
        method: 'POST',
        headers: call.headers,
        body: call.body,
        signal: buyer.signal,
      })
      // The provider has the request: it is acting on it now.
      await held.arrived
      buyer.abort()
      await expect(answer).rejects.toThrow()
      // Served once the handler is done: while the provider holds the request, the payment stays
      // in flight (its serve lease held), so that a process dying now would leave it refunded.
      await new Promise((resolve) => setTimeout(resolve, 300))
      expect(gateway.gateway.paidInFlight()).toBe(1)
      held.release()
      await until(() => gateway.gateway.paidInFlight() === 0)
      await until(() => stubs.calls.length > callsBefore)
      const provider = stubs.calls.slice(callsBefore)
      expect(provider).toHaveLength(1)
      expect(provider[0]).toMatchObject({ method: 'POST', answered: true })
      expect(provider[0]?.status).toBeLessThan(300)
      // No refund was owed: a refund run pays nothing back.
      await gateway.gateway.paywall.seller.refunder.runOnce()
      expect(await gateway.gateway.paywall.seller.refunder.owed()).toEqual([])
      expect(await usdcOf(payer.toSuiAddress())).toBe(start - price)
      expect(await usdcOf(gateway.payTo)).toBe(sellerStart + price)
    },
  )
})

describe('a buyer who hangs up before the upstream request was sent', () => {
  it('is refunded, and the provider is never asked', async () => {
    const endpoint = endpointAt('/resend/v1/emails')
    const stubs = gateway.stubs
    if (stubs === undefined) throw new Error('the embedded gateway runs the stub upstreams')
    const payer = gateway.emulator.createTestWallet({ usdc: '1', sui: '1' })
    const start = await usdcOf(payer.toSuiAddress())
    const call = await paymentFor(endpoint, payer)
    const callsBefore = stubs.calls.length
    const buyer = new AbortController()
    // Settlement is slow: the buyer leaves while its payment settles, before the handler runs.
    gateway.emulator.faults.slowMs = 1_500
    let settledAt = 0
    try {
      const answer = fetch(call.url, {
        method: 'POST',
        headers: call.headers,
        body: call.body,
        signal: buyer.signal,
      })
      await new Promise((resolve) => setTimeout(resolve, 300))
      buyer.abort()
      await expect(answer).rejects.toThrow()
      await until(async () => (await usdcOf(payer.toSuiAddress())) < start)
      settledAt = stubs.calls.length
    } finally {
      gateway.emulator.faults.slowMs = 0
    }
    await gateway.gateway.paywall.seller.refunder.runOnce()
    await until(async () => (await usdcOf(payer.toSuiAddress())) === start)
    expect(await usdcOf(payer.toSuiAddress())).toBe(start)
    expect(settledAt).toBe(callsBefore)
    expect(stubs.calls.slice(callsBefore).filter((c) => c.provider === 'resend')).toEqual([])
  })
})
