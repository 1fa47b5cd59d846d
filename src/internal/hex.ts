/**
 * Hex without a `0x` prefix, through the runtime's `Buffer` when it has one (a voucher's signature
 * and key are decoded on every paid session call: 1 µs natively, 5–15 in JavaScript), else in
 * JavaScript. Both accept the same input and give the same bytes.
 *
 * @module
 * @internal
 */
import { fromHex, toHex } from '@mysten/sui/utils'
import { nativeBuffer } from './runtime.js'

const hexPattern = /^(?:[0-9a-fA-F]{2})*$/

/**
 * Decodes hex (an even number of hex digits, no prefix).
 *
 * @throws {TypeError} on anything else.
 */
export function hexToBytes(hex: string): Uint8Array {
  if (nativeBuffer === undefined) {
    if (!hexPattern.test(hex)) throw new TypeError('not hex')
    return fromHex(hex)
  }
  const bytes = nativeBuffer.from(hex, 'hex')
  // `Buffer` stops at the first character that is not a hex pair: a short result is a refusal.
  if (bytes.length * 2 !== hex.length) throw new TypeError('not hex')
  // A plain view of the same memory: callers see a `Uint8Array`, not a `Buffer`.
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length)
}

/** Encodes bytes as lowercase hex, without prefix. */
export function bytesToHex(bytes: Uint8Array): string {
  return nativeBuffer === undefined
    ? toHex(bytes)
    : nativeBuffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex')
}
