/**
 * A seller still settling a payment — 402 `settlement_pending` with `Retry-After`, its answer while
 * another process may hold the payment — is followed: the paying fetch waits, presents the SAME
 * payment again and is served; nothing is signed or paid a second time. A payment held past the
 * client's `pendingWaitMs` is reported `PAYMENT_REJECTED` with `details.code` `settlement_pending`
 * and its digest. A real proxy on loopback in front of the real seller (the paywall) answers the
 * pending 402s; balances are read from the ledger emulator.
 */
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { describe, expect, it } from 'vitest'
import { isPaymentError } from '../errors.js'
import { createPayingFetch, paymentOf } from './fetch.js'
import { useSellers } from './testHelpers.js'

const sellers = useSellers()

const price = 20_000n

/** A paying fetch that records its warnings; real waits (the seller's `Retry-After`). */
function client(signer: Ed25519Keypair, prefer: 'x402' | 'mpp', pendingWaitMs?: number) {
  const warnings: Record<string, unknown>[] = []
  const pay = createPayingFetch({
    signer,
    ledger: sellers.chain.url,
    limits: false,
    prefer,
    ...(pendingWaitMs === undefined ? {} : { pendingWaitMs }),
    logger: { warn: (fields) => void warnings.push(fields) },
  })
  return { pay, warnings }
}

/** Calls `path` and returns what happened and the payment credentials the proxy saw meanwhile. */
async function call(pay: ReturnType<typeof client>['pay'], path: string) {
  const seenBefore = sellers.seen.get(path)?.length ?? 0
  const outcome = await pay(`${sellers.base}${path}`, { method: 'POST', body: '{"q":1}' }).catch(
    (error: unknown) => error,
  )
  const presented = (sellers.seen.get(path) ?? [])
    .slice(seenBefore)
    .map((r) => r.paymentSignature ?? r.xPayment ?? r.authorization)
    .filter((credential) => credential !== null)
  return { outcome, presented }
}

describe.each(['x402', 'mpp'] as const)('%s: a payment the seller is still settling', (prefer) => {
  it('is presented again after Retry-After and served; the buyer pays one price', async () => {
    const buyer = sellers.chain.createTestWallet({ usdc: '1' })
    const { pay, warnings } = client(buyer, prefer)
    const before = await sellers.usdcOf(buyer.toSuiAddress())
    const handled = sellers.calls.get('/pending-once') ?? 0

    const { outcome, presented } = await call(pay, '/pending-once')

    if (outcome instanceof Error) throw outcome // the failure names the error's code
    const response = outcome as Response
    expect(response.status).toBe(200)
    expect(await response.json()).toMatchObject({ ok: true, path: '/pending-once' })
    const payment = paymentOf(response)
    expect(payment?.dialect).toBe(prefer)
    // The same payment twice: answered pending, then forwarded and served once.
    expect(presented).toHaveLength(2)
    expect(presented[1]).toBe(presented[0])
    expect(sellers.calls.get('/pending-once')).toBe(handled + 1)
    expect(before - (await sellers.usdcOf(buyer.toSuiAddress()))).toBe(price)
    // Told at warn, with the payment's digest and the seller's wait.
    expect(warnings).toEqual([
      expect.objectContaining({ digest: payment?.digest, attempt: 1, waitMs: 1000 }),
    ])
  })

  it('past pendingWaitMs: PAYMENT_REJECTED settlement_pending with the digest; paid once at most', async () => {
    const buyer = sellers.chain.createTestWallet({ usdc: '1' })
    const { pay, warnings } = client(buyer, prefer, 1_500)
    const before = await sellers.usdcOf(buyer.toSuiAddress())

    const { outcome, presented } = await call(pay, '/pending-always')

    expect(isPaymentError(outcome) && outcome.code).toBe('PAYMENT_REJECTED')
    const error = outcome as { details: Record<string, unknown> }
    expect(error.details).toMatchObject({ code: 'settlement_pending', dialect: prefer })
    expect(error.details.digest).toMatch(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/)
    // Presented, waited 1 s, presented again; the next wait would pass the 1.5 s budget.
    expect(presented).toHaveLength(2)
    expect(presented[1]).toBe(presented[0])
    expect(warnings).toEqual([expect.objectContaining({ digest: error.details.digest })])
    expect(sellers.calls.get('/pending-always')).toBeUndefined()
    // Never a second payment. x402: the seller submits, and the proxy never let it through, so
    // nothing moved; MPP: the buyer submitted its one payment before presenting it.
    const spent = before - (await sellers.usdcOf(buyer.toSuiAddress()))
    expect(spent).toBe(prefer === 'x402' ? 0n : price)
  })
})
