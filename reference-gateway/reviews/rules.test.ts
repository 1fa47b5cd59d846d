import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { type PurchaseRecord, reviewEligibility } from './rules.js'

const buyer = `0x${'b'.repeat(64)}`
const seller = `0x${'5'.repeat(64)}`
const ok: PurchaseRecord = {
  kind: 'job',
  id: `0x${'1'.repeat(64)}`,
  buyer,
  seller,
  outcome: 'released',
  reviewer: buyer,
  rating: 5,
  alreadyReviewed: false,
}
const reason = (p: Partial<PurchaseRecord>) => {
  const verdict = reviewEligibility({ ...ok, ...p })
  return verdict.status === 'allowed' ? 'allowed' : verdict.reason
}

describe('review eligibility', () => {
  it('allows the buyer of a released job, and of a served call, 1 to 5 stars', () => {
    for (const rating of [1, 2, 3, 4, 5]) expect(reason({ rating })).toBe('allowed')
    expect(reason({ kind: 'call', outcome: 'served' })).toBe('allowed')
    expect(reason({ reviewer: buyer.toUpperCase().replace('0X', '0x') })).toBe('allowed')
  })

  it('refuses ratings out of range or fractional', () => {
    for (const rating of [0, 6, -1, 2.5, Number.NaN])
      expect(reason({ rating })).toBe('invalid_rating')
  })

  it('refuses anyone but the buyer, self-purchases, refunds, unfinished purchases and a second review', () => {
    expect(reason({ reviewer: seller })).toBe('not_buyer')
    expect(reason({ seller: buyer })).toBe('self_purchase')
    expect(reason({ outcome: 'refunded' })).toBe('refunded')
    expect(reason({ kind: 'call', outcome: 'refunded' })).toBe('refunded')
    expect(reason({ outcome: 'pending' })).toBe('not_completed')
    // A job is complete when released, a call when served: not the other way round.
    expect(reason({ kind: 'job', outcome: 'served' })).toBe('not_completed')
    expect(reason({ kind: 'call', outcome: 'released' })).toBe('not_completed')
    expect(reason({ alreadyReviewed: true })).toBe('already_reviewed')
  })

  it('allows a review exactly when every rule holds (property)', () => {
    const address = fc.constantFrom(buyer, seller, `0x${'c'.repeat(64)}`)
    fc.assert(
      fc.property(
        fc.record({
          kind: fc.constantFrom('job' as const, 'call' as const),
          id: fc.constant(ok.id),
          buyer: address,
          seller: address,
          reviewer: address,
          outcome: fc.constantFrom(
            'released' as const,
            'served' as const,
            'refunded' as const,
            'pending' as const,
          ),
          rating: fc.oneof(fc.integer({ min: -2, max: 8 }), fc.double()),
          alreadyReviewed: fc.boolean(),
        }),
        (p) => {
          const allowed =
            Number.isInteger(p.rating) &&
            p.rating >= 1 &&
            p.rating <= 5 &&
            p.reviewer === p.buyer &&
            p.buyer !== p.seller &&
            p.outcome === (p.kind === 'job' ? 'released' : 'served') &&
            !p.alreadyReviewed
          expect(reviewEligibility(p).status === 'allowed').toBe(allowed)
        },
      ),
    )
  })
})
