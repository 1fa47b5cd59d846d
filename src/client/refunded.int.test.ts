/**
 * A paid call that fails at the seller is reported to the buyer as refunded, not as a rejected
 * (`replay`) payment: the reference gateway answers 502 when its upstream fails and refunds the
 * payment; the paying fetch re-sends the same payment once (such an answer may come from a proxy in front),
 * and the seller's 402 now says the call failed and the payment is refunded.
 */
import { describe, expect, it } from 'vitest'
import { useTestGateway } from '../../reference-gateway/server/testHelpers.js'
import { createLedger } from '../ledger/index.js'
import { createPayingFetch, isPaymentError, type PaymentError } from './index.js'

const gateway = useTestGateway({ config: { refundIntervalMs: 100 } })

describe('a paid call that failed and was refunded', () => {
  it('is reported as refunded, with the refund transaction, and the money is back', async () => {
    const emulator = gateway.emulator
    const buyer = emulator.createTestWallet({ usdc: '1', sui: '1' })
    const ledger = createLedger({ url: emulator.url })
    const usdcOf = async () =>
      (await ledger.getBalance(buyer.toSuiAddress(), emulator.usdcType)).total
    const before = await usdcOf()
    const pay = createPayingFetch({
      signer: buyer,
      ledger: emulator.url,
      limits: false,
      // One re-send of the same payment after the failure, a moment later (the refund is paid by then).
      retry: { retries: 1, baseDelayMs: 3_000, maxDelayMs: 3_000 },
      random: () => 1,
    })
    gateway.stubs?.failNext('/openai/', 500, 10)
    const error = await pay(`${gateway.url}/openai/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] }),
    }).then(
      () => undefined,
      (thrown: unknown) => thrown,
    )
    expect(isPaymentError(error)).toBe(true)
    const refused = error as PaymentError
    expect(refused.code).toBe('PAYMENT_REFUNDED')
    expect(refused.details).toMatchObject({ refund: 'refunded' })
    // The gateway's answer to its failed upstream: 502, or 504 for a transient failure.
    const status = refused.details.status
    expect([502, 504]).toContain(status)
    const refundDigest = refused.details.refundDigest as string
    expect(refundDigest).toMatch(/^[1-9A-HJ-NP-Za-km-z]{43,44}$/)
    expect(refused.message).toBe(
      `The paid call failed (HTTP ${status}); the seller refunded the payment (refund transaction ${refundDigest}).`,
    )
    // The refund named is the one on the ledger, and the buyer has its money back.
    expect(await ledger.getTransaction(refundDigest)).toMatchObject({ status: 'found' })
    expect(await usdcOf()).toBe(before)
  })
})
