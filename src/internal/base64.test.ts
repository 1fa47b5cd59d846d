import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  decodeBase64,
  decodeBase64url,
  isStrictBase64,
  isStrictBase64url,
  webBase64,
} from './base64.js'

// 10 000-run property tests take about a second each on an idle machine; the time limit is generous
// so that a loaded CI machine does not fail them (timing goals live in bench/, not here).
const fuzzTime = { timeout: 60_000 }

describe('strict base64', fuzzTime, () => {
  it('accepts exactly the canonical encoding of every byte string', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        const b = Buffer.from(bytes)
        expect(decodeBase64(b.toString('base64'))).toEqual(b)
        expect(decodeBase64url(b.toString('base64url'))).toEqual(b)
      }),
      { numRuns: 2_000 },
    )
  })

  it('accepts nothing else: an accepted text re-encodes to itself', () => {
    const alphabet = fc.constantFrom(...'AQgw+/-_=Zz09 \n'.split(''))
    const text = fc.string({ unit: alphabet, maxLength: 12 })
    fc.assert(
      fc.property(text, (t) => {
        if (isStrictBase64(t)) expect(Buffer.from(t, 'base64').toString('base64')).toBe(t)
        if (isStrictBase64url(t)) expect(Buffer.from(t, 'base64url').toString('base64url')).toBe(t)
      }),
      { numRuns: 10_000 },
    )
  })

  it('rejects whitespace, missing or extra padding, and non-zero trailing bits', () => {
    for (const bad of ['QQ', 'QR==', 'QQ==\n', ' QQ==', 'Q Q==', 'QUJD=', '====', 'QQ=', 'QQ-_']) {
      expect(isStrictBase64(bad)).toBe(false)
    }
    for (const bad of ['QQ==', 'QR', 'Q', 'QUJ', 'Q+/A', 'QQ ']) {
      expect(isStrictBase64url(bad)).toBe(false)
    }
    expect(isStrictBase64('QQ==')).toBe(true)
    expect(isStrictBase64url('QQ')).toBe(true)
    expect(isStrictBase64url('QUI')).toBe(true)
  })
})

describe('the codec of runtimes without Buffer', fuzzTime, () => {
  it('gives the bytes and the text that Buffer gives', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 20_000 }), (bytes) => {
        const b = Buffer.from(bytes)
        expect(webBase64.encode(bytes)).toBe(b.toString('base64'))
        expect(webBase64.encodeUrl(bytes)).toBe(b.toString('base64url'))
        expect(webBase64.decode(b.toString('base64'))).toEqual(new Uint8Array(b))
        expect(webBase64.decodeUrl(b.toString('base64url'))).toEqual(new Uint8Array(b))
      }),
      { numRuns: 500 },
    )
  })
})
