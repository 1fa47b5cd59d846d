/**
 * The paying fetch end to end: real sellers (the paywall) on loopback, the ledger emulator driven by
 * the real SuiGrpcClient, real keys. Each error code is produced by a seller or wallet set up with
 * exactly its condition.
 */
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { describe, expect, it } from 'vitest'
import { hasCode, PaymentError } from '../errors.js'
import { createLedger } from '../ledger/index.js'
import { WORMHOLE_USDC_TYPE } from '../testing/index.js'
import { decodeXPayment } from '../x402.js'
import { decodePaymentSignature } from '../x402v2.js'
import { createPayingFetch, type PayingFetchOptions, paymentOf } from './fetch.js'
import { dayMs } from './limits.js'
import { useSellers } from './testHelpers.js'

const sellers = useSellers()

const spendingFile = () => join(mkdtempSync(join(tmpdir(), 'tollgate-client-')), 'spending.json')

function client(signer: Ed25519Keypair, options: Partial<PayingFetchOptions> = {}) {
  return createPayingFetch({
    signer,
    ledger: sellers.chain.url,
    limits: { file: spendingFile() },
    sleep: async () => {},
    ...options,
  })
}

async function refusal(promise: Promise<unknown>): Promise<PaymentError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(PaymentError)
  return error as PaymentError
}

const post = (body?: unknown): RequestInit => ({
  method: 'POST',
  ...(body === undefined ? {} : { body: JSON.stringify(body) }),
})

describe('paying fetch against local sellers', () => {
  it('pays an x402 402 with the gasless form, does not submit itself, and exposes the receipt', async () => {
    const buyer = sellers.chain.createTestWallet({ usdc: '1', into: 'addressBalance' })
    const pay = client(buyer)
    const before = await sellers.usdcOf(sellers.payTo)
    const response = await pay(`${sellers.base}/paid`, post({ q: 1 }))
    expect(response.status).toBe(200)
    expect(await response.json()).toMatchObject({ ok: true, body: { q: 1 } })
    const payment = paymentOf(response)
    expect(payment).toMatchObject({
      dialect: 'x402',
      amount: 20_000n,
      form: 'gasless',
      payer: buyer.toSuiAddress(),
      receipt: { dialect: 'x402', value: { success: true, payer: buyer.toSuiAddress() } },
    })
    // The seller settled the digest we computed from the bytes we signed.
    expect(payment?.receipt?.dialect === 'x402' && payment.receipt.value.transaction).toBe(
      payment?.digest,
    )
    expect(await sellers.usdcOf(sellers.payTo)).toBe(before + 20_000n)
    expect(await sellers.usdcOf(buyer.toSuiAddress())).toBe(1_000_000n - 20_000n)
    // One unpaid request, one paid retry (x402 version 2, offered beside version 1), nothing else.
    const seen = sellers.seen.get('/paid') ?? []
    expect(seen.filter((r) => r.paymentSignature !== null)).toHaveLength(1)
    expect(seen.filter((r) => r.xPayment !== null)).toHaveLength(0)
  })

  it('calls onChallenge and onPaid once each, and logs no key, signature or payment header', async () => {
    const buyer = sellers.chain.createTestWallet({ usdc: '1' })
    const logged: string[] = []
    const record = (fields: Record<string, unknown>, message: string) =>
      void logged.push(message + JSON.stringify(fields))
    const challenges: string[] = []
    const paid: bigint[] = []
    const pay = client(buyer, {
      logger: { debug: record, info: record, warn: record },
      onChallenge: (event) => void challenges.push(event.selected.dialect),
      onPaid: (payment) => void paid.push(payment.amount),
    })
    const response = await pay(`${sellers.base}/paid`, post())
    expect(challenges).toEqual(['x402'])
    expect(paid).toEqual([20_000n])
    const header = (sellers.seen.get('/paid') ?? []).at(-1)?.paymentSignature ?? ''
    const { transaction, signature } = decodePaymentSignature(header).payload
    expect(logged.length).toBeGreaterThan(0)
    for (const line of logged) {
      for (const secret of [header, signature, transaction, buyer.getSecretKey()]) {
        expect(line).not.toContain(secret)
      }
    }
    expect(logged.join('\n')).toContain(paymentOf(response)?.digest ?? 'no digest')
  })

  it('pays x402 version 1 (X-PAYMENT) when the 402 offers no version 2', async () => {
    const buyer = sellers.chain.createTestWallet({ usdc: '1' })
    const response = await client(buyer)(`${sellers.base}/v1-only`, post())
    expect(response.status).toBe(200)
    const seen = sellers.seen.get('/v1-only') ?? []
    expect(seen.map((r) => [r.xPayment !== null, r.paymentSignature !== null])).toEqual([
      [false, false],
      [true, false],
    ])
    expect(decodeXPayment(seen[1]?.xPayment ?? '').network).toBe('sui:mainnet')
    expect(paymentOf(response)?.receipt).toMatchObject({
      dialect: 'x402',
      value: { success: true },
    })
  })

  it('pays with the coin form when the wallet holds USDC coins', async () => {
    const buyer = sellers.chain.createTestWallet({ usdc: '1' })
    const response = await client(buyer)(`${sellers.base}/x402-only`, post())
    expect(response.status).toBe(200)
    expect(paymentOf(response)).toMatchObject({ dialect: 'x402', form: 'coin' })
  })

  it('pays an MPP challenge: submits, waits, signs the proof, and exposes the receipt', async () => {
    const buyer = sellers.chain.createTestWallet({ usdc: '1', into: 'addressBalance' })
    const before = await sellers.usdcOf(sellers.payTo)
    const response = await client(buyer)(`${sellers.base}/mpp-only`, post())
    expect(response.status).toBe(200)
    const payment = paymentOf(response)
    expect(payment).toMatchObject({ dialect: 'mpp', amount: 20_000n })
    expect(payment?.receipt).toMatchObject({
      dialect: 'mpp',
      value: { status: 'success', method: 'sui', reference: payment?.digest },
    })
    const onChain = await createLedger({ url: sellers.chain.url }).getTransaction(
      payment?.digest ?? '',
    )
    expect(onChain).toMatchObject({
      status: 'found',
      transaction: { success: true, sender: buyer.toSuiAddress() },
    })
    expect(await sellers.usdcOf(sellers.payTo)).toBe(before + 20_000n)
  })

  // MPP: each built after the one before has executed. x402: each built after the seller has
  // answered the one before (built at once, two would be the same transaction: a replay).
  it.each([
    ['MPP', '/mpp-only'],
    ['x402', '/x402-only'],
  ])(
    '%s: concurrent payments from one coin-form wallet are distinct transactions, each served',
    async (_, path) => {
      const buyer = sellers.chain.createTestWallet({ usdc: '1' })
      const pay = client(buyer)
      const before = await sellers.usdcOf(sellers.payTo)
      const responses = await Promise.all(
        [1, 2, 3].map(() => pay(`${sellers.base}${path}`, post())),
      )
      expect(responses.map((r) => r.status)).toEqual([200, 200, 200])
      const digests = new Set(responses.map((r) => paymentOf(r)?.digest))
      expect(digests.size).toBe(3)
      expect(responses.map((r) => paymentOf(r)?.form)).toEqual(['coin', 'coin', 'coin'])
      expect(await sellers.usdcOf(sellers.payTo)).toBe(before + 3n * 20_000n)
    },
  )

  it('MPP: a ledger answer lost after commit is found by digest; it pays once and is served', async () => {
    const buyer = sellers.chain.createTestWallet({ usdc: '1', into: 'addressBalance' })
    sellers.chain.faults.loseNextResponses = 1
    const response = await client(buyer)(`${sellers.base}/mpp-only`, post())
    expect(response.status).toBe(200)
    expect(await sellers.usdcOf(buyer.toSuiAddress())).toBe(1_000_000n - 20_000n)
  })

  it('MPP: a submission with no outcome is settlement_pending, names the digest, stays counted', async () => {
    const buyer = sellers.chain.createTestWallet({ usdc: '1', into: 'addressBalance' })
    const calls = sellers.calls.get('/mpp-only') ?? 0
    const pay = client(buyer)
    sellers.chain.faults.failNextExecutions = 1
    const error = await refusal(pay(`${sellers.base}/mpp-only`, post()))
    expect(error.code).toBe('settlement_pending')
    expect(error.details.digest).toMatch(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/)
    // Not knowing whether money moved, the limits keep counting it; the seller served nothing.
    expect(await pay.limits?.spentToday()).toBe(20_000n)
    expect(sellers.calls.get('/mpp-only') ?? 0).toBe(calls)
  })

  it('uses the preferred dialect when a 402 offers both, and keeps an existing Authorization', async () => {
    const buyer = sellers.chain.createTestWallet({ usdc: '1' })
    const pay = client(buyer, { prefer: 'mpp' })
    const response = await pay(`${sellers.base}/dear`, {
      method: 'POST',
      headers: { authorization: 'Bearer my-key' },
    })
    expect(response.status).toBe(200)
    expect(paymentOf(response)?.dialect).toBe('mpp')
    const paid = (sellers.seen.get('/dear') ?? []).at(-1)
    expect(paid?.authorization).toMatch(/^Bearer my-key, Payment /)
  })

  it('sends JSON bodies as application/json by default, and keeps a caller’s content type', async () => {
    const buyer = sellers.chain.createTestWallet({ usdc: '1' })
    const pay = client(buyer)
    const response = await pay(`${sellers.base}/echo`, post({ text: 'hi' }))
    expect(await response.json()).toEqual({
      body: { text: 'hi' },
      contentType: 'application/json',
    })
    const plain = await pay(`${sellers.base}/echo`, {
      method: 'POST',
      body: '{"text":"hi"}',
      headers: { 'content-type': 'text/plain' },
    })
    expect(await plain.json()).toMatchObject({ contentType: 'text/plain' })
  })

  it('retries transient 503s before paying (Retry-After honoured), then pays once', async () => {
    const buyer = sellers.chain.createTestWallet({ usdc: '1' })
    const waits: number[] = []
    const pay = client(buyer, { sleep: async (ms) => void waits.push(ms) })
    const response = await pay(`${sellers.base}/flaky`, post())
    expect(response.status).toBe(200)
    expect(waits).toEqual([0, 0])
    expect((sellers.seen.get('/flaky') ?? []).map((r) => r.paymentSignature !== null)).toEqual([
      false,
      false,
      false,
      true,
    ])
  })

  it('re-sends the SAME payment when the paid request gets a 502, and pays only once', async () => {
    const buyer = sellers.chain.createTestWallet({ usdc: '1' })
    const before = await sellers.usdcOf(buyer.toSuiAddress())
    const response = await client(buyer)(`${sellers.base}/flaky-paid`, post())
    expect(response.status).toBe(200)
    const paid = (sellers.seen.get('/flaky-paid') ?? []).filter((r) => r.paymentSignature !== null)
    expect(paid).toHaveLength(2)
    expect(paid[0]?.paymentSignature).toBe(paid[1]?.paymentSignature)
    const spent = before - (await sellers.usdcOf(buyer.toSuiAddress()))
    // 0.02 USDC (gas is paid in SUI).
    expect(spent).toBe(20_000n)
  })
})

describe('refusals, each from exactly its condition', () => {
  it('PRICE_ABOVE_MAX: the seller asks more than maxPrice; nothing is signed', async () => {
    const buyer = sellers.chain.createTestWallet({ usdc: '1' })
    const pay = client(buyer, { maxPrice: '0.05' })
    const error = await refusal(pay(`${sellers.base}/dear`, post()))
    expect(error.code).toBe('PRICE_ABOVE_MAX')
    expect(error.details).toMatchObject({ amount: '100000', maxPrice: '50000' })
    expect(await sellers.usdcOf(buyer.toSuiAddress())).toBe(1_000_000n)
    expect(await pay.limits?.spentToday()).toBe(0n)
    // At or under the cap it pays.
    expect((await pay(`${sellers.base}/paid`, post())).status).toBe(200)
  })

  it('LIMIT_PER_TX: one payment above the per-transaction limit', async () => {
    const buyer = sellers.chain.createTestWallet({ usdc: '1' })
    const pay = client(buyer, { limits: { perTransaction: '0.05', file: spendingFile() } })
    const error = await refusal(pay(`${sellers.base}/dear`, post()))
    expect(error.code).toBe('LIMIT_PER_TX')
    expect(await sellers.usdcOf(buyer.toSuiAddress())).toBe(1_000_000n)
  })

  it('LIMIT_PER_DAY: persists across a restart and rolls over after 24 hours', async () => {
    const buyer = sellers.chain.createTestWallet({ usdc: '1' })
    const file = spendingFile()
    let now = Date.now()
    const make = () => client(buyer, { limits: { perDay: '0.05', file, now: () => now } })
    const first = make()
    expect((await first(`${sellers.base}/paid`, post())).status).toBe(200)
    expect((await first(`${sellers.base}/paid`, post())).status).toBe(200)
    expect((await refusal(first(`${sellers.base}/paid`, post()))).code).toBe('LIMIT_PER_DAY')

    // A new client on the same file (a restart) still knows the 0.04 spent today.
    const restarted = make()
    expect(await restarted.limits?.spentToday()).toBe(40_000n)
    const error = await refusal(restarted(`${sellers.base}/paid`, post()))
    expect(error.code).toBe('LIMIT_PER_DAY')
    expect(error.details).toMatchObject({ spent: '40000', limit: '50000' })
    const stored = JSON.parse(readFileSync(file, 'utf8')) as { spends: { digest?: string }[] }
    expect(stored.spends).toHaveLength(2)
    expect(stored.spends.every((s) => typeof s.digest === 'string')).toBe(true)

    // 24 hours after the first payment the window has rolled over.
    now += dayMs + 1
    expect((await restarted(`${sellers.base}/paid`, post())).status).toBe(200)
    expect(await sellers.usdcOf(buyer.toSuiAddress())).toBe(1_000_000n - 60_000n)
  })

  it('ESCROW_REQUIRED: a 402 whose requirement demands escrow is never instant-paid', async () => {
    const buyer = sellers.chain.createTestWallet({ usdc: '1' })
    const pay = client(buyer)
    expect((await refusal(pay(`${sellers.base}/escrow`, post()))).code).toBe('ESCROW_REQUIRED')
    // Not even through the MPP challenge that shares the escrow requirement's id.
    const mpp = client(buyer, { prefer: 'mpp' })
    expect((await refusal(mpp(`${sellers.base}/escrow`, post()))).code).toBe('ESCROW_REQUIRED')
    expect(await sellers.usdcOf(buyer.toSuiAddress())).toBe(1_000_000n)
  })

  it('DIALECT_UNSUPPORTED: a signer that cannot submit meets an MPP-only seller', async () => {
    const buyer = sellers.chain.createTestWallet({ usdc: '1' })
    const pay = client(buyer, { canSubmit: false })
    const error = await refusal(pay(`${sellers.base}/mpp-only`, post()))
    expect(error.code).toBe('DIALECT_UNSUPPORTED')
    // The same signer pays a seller offering both, in x402 (the seller submits).
    const ok = await pay(`${sellers.base}/paid`, post())
    expect(paymentOf(ok)?.dialect).toBe('x402')
  })

  it('INSUFFICIENT_BALANCE: the wallet holds less than the price', async () => {
    const buyer = sellers.chain.createTestWallet({ usdc: '0.01' })
    const pay = client(buyer)
    const error = await refusal(pay(`${sellers.base}/paid`, post()))
    expect(error.code).toBe('INSUFFICIENT_BALANCE')
    // Nothing moved, so nothing stays counted against the limits.
    expect(await pay.limits?.spentToday()).toBe(0n)
  })

  it('INSUFFICIENT_BALANCE explains the gasless floor when only the address balance could pay', async () => {
    // 0.025 in the address balance: paying 0.02 gaslessly would leave 0.005 (< 0.01), and there
    // are no USDC coins for the coin form.
    const buyer = sellers.chain.createTestWallet({ usdc: '0.025', into: 'addressBalance' })
    const error = await refusal(client(buyer)(`${sellers.base}/paid`, post()))
    expect(error.code).toBe('INSUFFICIENT_BALANCE')
    expect(error.message).toMatch(/leave at least 0\.01/)
    // With USDC coins as well, it pays in the coin form.
    sellers.chain.faucet({ address: buyer.toSuiAddress(), usdc: '1', sui: '1' })
    const response = await client(buyer)(`${sellers.base}/paid`, post())
    expect(paymentOf(response)?.form).toBe('coin')
  })

  it.each([
    ['wUSDC instead of USDC', '/wusdc', WORMHOLE_USDC_TYPE],
    ['another network', '/testnet', 'sui:testnet'],
  ])('NO_PAYABLE_REQUIREMENT: the seller asks for %s', async (_name, path, named) => {
    const buyer = sellers.chain.createTestWallet({
      usdc: '1',
      extra: { coinType: WORMHOLE_USDC_TYPE, amount: 1_000_000n },
    })
    const error = await refusal(client(buyer)(sellers.base + path, post()))
    expect(error.code).toBe('NO_PAYABLE_REQUIREMENT')
    expect(JSON.stringify(error.details)).toContain(named)
    expect(sellers.calls.get(path)).toBeUndefined()
  })

  it('PAYMENT_REJECTED: the seller answers the paid request with 402 again; no second payment', async () => {
    const buyer = sellers.chain.createTestWallet({ usdc: '1' })
    const earlier = (sellers.seen.get('/x402-only') ?? []).length
    const pay = client(buyer, {
      // The challenge expires between the 402 and the paid request.
      onChallenge: () => sellers.skew(100_000),
    })
    try {
      const error = await refusal(pay(`${sellers.base}/x402-only`, post()))
      expect(error.code).toBe('PAYMENT_REJECTED')
      expect(error.details).toMatchObject({ code: 'challenge_expired', dialect: 'x402' })
    } finally {
      sellers.skew(-100_000)
    }
    const sent = (sellers.seen.get('/x402-only') ?? []).slice(earlier)
    // The unpaid request and one paid request: never a second payment.
    expect(sent.map((r) => r.paymentSignature !== null)).toEqual([false, true])
    expect(decodePaymentSignature(sent[1]?.paymentSignature ?? '').accepted.network).toBe(
      'sui:mainnet',
    )
    // An x402 payment that the seller refused before settling moved nothing.
    expect(await sellers.usdcOf(buyer.toSuiAddress())).toBe(1_000_000n)
  })

  it('refuses before paying when onChallenge throws', async () => {
    const buyer = sellers.chain.createTestWallet({ usdc: '1' })
    const pay = client(buyer, {
      onChallenge: () => {
        throw new PaymentError('PRICE_ABOVE_MAX', 'not today')
      },
    })
    const error = await pay(`${sellers.base}/paid`, post()).catch((e: unknown) => e)
    expect(hasCode(error, 'PRICE_ABOVE_MAX')).toBe(true)
    expect(await pay.limits?.spentToday()).toBe(0n)
  })
})
