/**
 * Five-star reviews for dust do not make a rating, on SQLite and PostgreSQL: fifty sock-puppet
 * buyers who each paid 1 base unit and gave five stars count for nothing under the minimum value
 * (default 0.10 USDC); of each buyer only the latest counted review counts; the average weighs each
 * counted review by what its purchase paid; the rating says how many distinct buyers it is made of,
 * and every review stays listed.
 */
import { afterAll, describe, expect, it } from 'vitest'
import type { GatewayDatabase } from '../db/database.js'
import { testEngines } from '../db/testHelpers.js'
import { createReviewStore, defaultReviewMinValue, type ReviewStore } from './reviews.js'

const seller = `0x${'5e'.repeat(32)}`
const address = (n: number) => `0x${n.toString(16).padStart(64, '0')}`
let clock = Date.parse('2026-11-26T00:00:00Z')

async function add(reviews: ReviewStore, buyer: string, rating: number, value: bigint) {
  clock += 1_000
  const added = await reviews.add({
    seller,
    buyer,
    purchase: `purchase-${clock}`,
    rating,
    text: '',
    createdAt: new Date(clock).toISOString(),
    value,
  })
  expect(added).toBeDefined()
}

for (const engine of testEngines('ratings')) {
  describe.skipIf(engine.skip)(`ratings on ${engine.name}`, () => {
    let database: GatewayDatabase | undefined
    afterAll(async () => {
      await database?.close()
      await engine.cleanup()
    })

    it('counts one latest review per buyer from the minimum value, weighted by value', async () => {
      database = await engine.open()
      const reviews = createReviewStore(database.db)
      expect(reviews.minValue).toBe(defaultReviewMinValue)
      expect(defaultReviewMinValue).toBe(100_000n)

      // Fifty sock puppets: 1 base unit each (gas only), five stars each.
      for (let i = 1; i <= 50; i++) await add(reviews, address(i), 5, 1n)
      // One puppet also pays just under the minimum.
      await add(reviews, address(1), 5, 99_999n)
      // A real buyer: 1 star for 1 USDC, then 2 stars for 2 USDC (its latest counts).
      await add(reviews, address(100), 1, 1_000_000n)
      await add(reviews, address(100), 2, 2_000_000n)
      // Another buyer at exactly the minimum: 5 stars; then a dust review that does not replace it.
      await add(reviews, address(101), 5, 100_000n)
      await add(reviews, address(101), 1, 1n)

      // (2 × 2 000 000 + 5 × 100 000) / 2 100 000 = 2.142…
      const expected = { average: 2.14, buyers: 2, count: 55 }
      expect((await reviews.of(seller, { limit: 5, offset: 0 })).rating).toEqual(expected)
      expect((await reviews.of(seller, { limit: 5, offset: 0 })).total).toBe(55)
      expect((await reviews.ratings([seller, address(7)])).get(seller)).toEqual(expected)
      expect((await reviews.ratings([seller, address(7)])).has(address(7))).toBe(false)

      // The minimum is the operator's: at 1 base unit, the puppets count (one latest each).
      const lax = createReviewStore(database.db, { minValue: 1n })
      const all = (await lax.of(seller, { limit: 1, offset: 0 })).rating
      expect(all.buyers).toBe(52)
      expect(all.count).toBe(55)
    })

    it('shows a seller whose every review is dust as not rated, with its reviews counted', async () => {
      database ??= await engine.open()
      const reviews = createReviewStore(database.db)
      const other = `0x${'6f'.repeat(32)}`
      clock += 1_000
      await reviews.add({
        seller: other,
        buyer: address(1),
        purchase: `dust-${clock}`,
        rating: 5,
        text: '',
        createdAt: new Date(clock).toISOString(),
        value: 1n,
      })
      expect((await reviews.of(other, { limit: 1, offset: 0 })).rating).toEqual({
        average: null,
        buyers: 0,
        count: 1,
      })
    })
  })
}
