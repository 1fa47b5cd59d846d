import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { contentTypeOf, decodeRequest, encodeResponse, formatOf } from './codec.js'

function frame(message: Uint8Array): Buffer {
  const out = Buffer.alloc(5 + message.length)
  out.writeUInt32BE(message.length, 1)
  out.set(message, 5)
  return out
}

describe('grpc-web codec', () => {
  it('recognises both grpc-web content types and nothing else', () => {
    expect(formatOf('application/grpc-web-text')).toBe('text')
    expect(formatOf('application/grpc-web+proto')).toBe('binary')
    expect(formatOf('application/grpc-web; charset=utf-8')).toBe('binary')
    expect(formatOf('application/json')).toBeUndefined()
    expect(formatOf(undefined)).toBeUndefined()
    expect(contentTypeOf('text')).toBe('application/grpc-web-text')
  })

  it('round-trips any message in both formats', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2048 }), (message) => {
        expect(decodeRequest(frame(message), 'binary')).toEqual(message)
        expect(decodeRequest(Buffer.from(frame(message).toString('base64')), 'text')).toEqual(
          message,
        )
      }),
    )
  })

  it('never throws on arbitrary bodies, and refuses truncated or non-data frames', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 512 }),
        fc.constantFrom('text' as const, 'binary' as const),
        (body, format) => {
          const decoded = decodeRequest(Buffer.from(body), format)
          if (decoded) expect(decoded.length).toBeLessThanOrEqual(body.length)
        },
      ),
    )
    expect(decodeRequest(frame(Uint8Array.of(1, 2, 3)).subarray(0, 6), 'binary')).toBeUndefined()
    const trailer = frame(Uint8Array.of(1))
    trailer[0] = 0x80
    expect(decodeRequest(trailer, 'binary')).toBeUndefined()
  })

  it('encodes a data frame followed by an OK trailer', () => {
    const body = encodeResponse(Uint8Array.of(9, 8), 'binary')
    expect([...body.subarray(0, 7)]).toEqual([0, 0, 0, 0, 2, 9, 8])
    expect(body[7]).toBe(0x80)
    expect(body.subarray(12).toString()).toContain('grpc-status:0')
    expect(Buffer.from(encodeResponse(Uint8Array.of(9, 8), 'text').toString(), 'base64')).toEqual(
      body,
    )
  })
})
