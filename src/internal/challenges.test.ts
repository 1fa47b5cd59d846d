import { describe, expect, it } from 'vitest'
import { expiryText, keyRing } from './challengeId.js'
import { boundChallengeId, checkChallengeId } from './challenges.js'
import { prepareTerms } from './terms.js'

const terms = prepareTerms({
  price: 10_000n,
  payTo: `0x${'a'.repeat(64)}`,
  network: 'sui:mainnet',
  resource: 'https://api.example.com/v1/rates',
})
const now = Date.parse('2026-11-29T00:00:00Z')
const expires = expiryText(now / 1000 + 300)
const binding = { intent: 'session', request: 'eyJhbW91bnQiOiIxMCJ9' }

describe('checking a presented challenge id, again', () => {
  // A buyer presents one challenge for many calls: the second check of an id takes what the first
  // one found, and only for the same id with the same input.
  it('takes an id it verified before for the same input, and nothing else', () => {
    const keys = keyRing([new Uint8Array(32).fill(7)])
    const id = boundChallengeId(terms, keys[0] as (typeof keys)[number], expires, binding)
    const check = (input: {
      id?: string
      at?: number
      expires?: string
      binding?: typeof binding
    }) =>
      checkChallengeId(
        terms,
        keys,
        input.id ?? id,
        input.at ?? now,
        input.expires ?? expires,
        input.binding ?? binding,
      ).status
    expect(check({})).toBe('valid')
    expect(check({})).toBe('valid')
    // The same id with another request, intent or expiry was not verified: it is still refused.
    expect(check({ binding: { ...binding, request: 'eyJhbW91bnQiOiIxMDAifQ' } })).toBe('invalid')
    expect(check({ binding: { ...binding, intent: 'charge' } })).toBe('invalid')
    expect(check({ expires: expiryText(now / 1000 + 600) })).toBe('invalid')
    // Another route's terms are another input.
    const other = prepareTerms({ ...terms.source, resource: 'https://api.example.com/v1/other' })
    expect(checkChallengeId(other, keys, id, now, expires, binding).status).toBe('invalid')
    // A verified id still expires.
    expect(check({ at: now + 301_000 })).toBe('expired')
    // Another key ring has verified nothing.
    const rotated = keyRing([new Uint8Array(32).fill(8)])
    expect(checkChallengeId(terms, rotated, id, now, expires, binding).status).toBe('invalid')
    expect(check({})).toBe('valid')
  })
})
