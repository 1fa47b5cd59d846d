import { fromHex, toHex } from '@mysten/sui/utils'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { bytesToHex, hexToBytes } from './hex.js'

describe('hex', () => {
  it('round-trips any bytes, as the SDK writes and reads them', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 80 }), (bytes) => {
        expect(bytesToHex(bytes)).toBe(toHex(bytes))
        expect(hexToBytes(toHex(bytes))).toEqual(fromHex(toHex(bytes)))
        expect(hexToBytes(toHex(bytes).toUpperCase())).toEqual(bytes)
      }),
    )
  })

  it('encodes a view of a larger buffer as only its own bytes', () => {
    const whole = Uint8Array.from([1, 2, 3, 4, 5])
    expect(bytesToHex(whole.subarray(1, 3))).toBe('0203')
  })

  it.each(['0', 'abc', 'zz', '00zz', 'a b0', '0x00', '０１'])('refuses %j', (text) => {
    expect(() => hexToBytes(text)).toThrow(TypeError)
  })
})
