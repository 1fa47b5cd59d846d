import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { escrowFee } from './job.js'
import { deliveryHash, EscrowTermsSchema, termsHash } from './terms.js'

const valid = {
  package: '0x70116a7e',
  config: `0x${'c'.repeat(64)}`,
  seller: `0x${'5'.repeat(64)}`,
  amount: '2000001',
  asset: '0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC',
  feeBps: 500,
  deliverByMs: 1_800_000_000_000,
  reviewMs: 3_600_000,
  terms: 'a'.repeat(64),
}

describe('escrow terms', () => {
  it('accepts well-formed terms and normalises the addresses', () => {
    const parsed = EscrowTermsSchema.parse(valid)
    expect(parsed.package).toBe(`0x${'0'.repeat(56)}70116a7e`)
  })

  it('refuses a zero or negative amount, a fee over 10 000 bps, a zero window, unknown fields', () => {
    for (const bad of [
      { amount: '0' },
      { amount: '-1' },
      { amount: '1.5' },
      { feeBps: 10_001 },
      { reviewMs: 0 },
      { terms: 'A'.repeat(64) },
      { seller: 'not an address' },
      { extra: 1 },
    ]) {
      expect(EscrowTermsSchema.safeParse({ ...valid, ...bad }).success, JSON.stringify(bad)).toBe(
        false,
      )
    }
  })

  it('never throws on arbitrary input (property)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(() => EscrowTermsSchema.safeParse(value)).not.toThrow()
      }),
    )
    fc.assert(
      fc.property(
        fc.record({ amount: fc.string(), feeBps: fc.integer(), seller: fc.string() }),
        (patch) => {
          const result = EscrowTermsSchema.safeParse({ ...valid, ...patch })
          if (result.success) expect(BigInt(result.data.amount)).toBeGreaterThan(0n)
        },
      ),
    )
  })

  it('hashes an offer independently of key order, and delivered text as its UTF-8 bytes', () => {
    expect(termsHash({ a: 1, b: [2, { c: 3, d: 4 }] })).toBe(
      termsHash({ b: [2, { d: 4, c: 3 }], a: 1 }),
    )
    expect(termsHash({ a: 1 })).not.toBe(termsHash({ a: 2 }))
    expect(deliveryHash('abc')).toBe(
      'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    )
    expect(deliveryHash(new TextEncoder().encode('abc'))).toBe(deliveryHash('abc'))
  })
})

describe('the escrow fee', () => {
  it('is floor(amount × bps / 10 000); the seller gets the rest, no base unit lost (property)', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
        fc.bigInt({ min: 0n, max: 10_000n }),
        (amount, bps) => {
          const fee = escrowFee(amount, bps)
          const seller = amount - fee
          expect(seller + fee).toBe(amount)
          expect(fee * 10_000n).toBeLessThanOrEqual(amount * bps)
          expect((fee + 1n) * 10_000n).toBeGreaterThan(amount * bps)
        },
      ),
    )
    expect(escrowFee(1_000_001n, 500n)).toBe(50_000n)
    expect(escrowFee(39n, 500n)).toBe(1n)
    expect(escrowFee(19n, 500n)).toBe(0n)
    expect(() => escrowFee(1n, 10_001n)).toThrow()
  })
})
