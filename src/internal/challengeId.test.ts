import { hmac } from '@noble/hashes/hmac.js'
import { sha256 } from '@noble/hashes/sha2.js'
import { describe, expect, it } from 'vitest'
import { keyRing, mac } from './challengeId.js'

describe('challenge MACs', () => {
  it("on Node, the runtime's HMAC gives the bytes of the portable one", () => {
    const secret = 'a challenge secret of at least thirty-two bytes'
    const [key] = keyRing([secret])
    expect(key !== undefined && 'native' in key).toBe(true)
    for (const input of [
      '',
      'realm|sui|charge|eyJhbW91bnQiOiIxIn0|2026-11-28T00:00:00Z||',
      'é✓𝄞',
    ]) {
      const portable = hmac(
        sha256,
        new TextEncoder().encode(secret),
        new TextEncoder().encode(input),
      )
      expect(Buffer.from(mac(key as never, input)).toString('hex')).toBe(
        Buffer.from(portable).toString('hex'),
      )
    }
  })
})
