/**
 * Strict base64 (RFC 4648 §4, padded) and base64url (RFC 4648 §5, unpadded) for untrusted headers.
 *
 * "Strict" means: only the alphabet, no whitespace, correct padding, and canonical trailing bits
 * (the unused low bits of the last character are zero), so every byte string has exactly one
 * accepted text form. `@scure/base` enforces the same rules but decodes an 8 KiB header about 30×
 * slower than `Buffer` on this machine (≈190 µs vs ≈6 µs), which matters on the payment hot path;
 * here a linear regular expression and one character check guard the native decoder.
 *
 * Web-standard: nothing is imported from Node. Where the runtime has a global `Buffer` (Node,
 * Bun) its native codec does the work; elsewhere (workerd, browsers) `atob`/`btoa` do, about ten
 * times slower on Node but still native. Both give the same bytes: the text was checked first.
 *
 * @module
 * @internal
 */

import { nativeBuffer } from './runtime.js'

const utf8Encoder = new TextEncoder()

const base64Pattern = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/
// One character class, its length checked apart: a repeated group of four costs the regex engine
// several times as much on a credential of a few KB.
const base64urlPattern = /^[A-Za-z0-9_-]*$/

const sextet = new Int8Array(128).fill(-1)
for (const [i, c] of [
  ...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789',
].entries()) {
  sextet[c.charCodeAt(0)] = i
}
sextet['+'.charCodeAt(0)] = 62
sextet['/'.charCodeAt(0)] = 63
sextet['-'.charCodeAt(0)] = 62
sextet['_'.charCodeAt(0)] = 63

/** Whether the last data character of a group of `dataChars` (2 or 3) has zero unused bits. */
function canonicalTail(text: string, lastIndex: number, dataChars: number): boolean {
  const value = sextet[text.charCodeAt(lastIndex)] ?? -1
  // 2 data chars carry 12 bits for 8 (4 unused); 3 carry 18 bits for 16 (2 unused).
  const unusedMask = dataChars === 2 ? 0b1111 : 0b11
  return value >= 0 && (value & unusedMask) === 0
}

/** Whether `text` is canonical, padded standard base64. */
export function isStrictBase64(text: string): boolean {
  if (!base64Pattern.test(text)) return false
  if (text.endsWith('==')) return canonicalTail(text, text.length - 3, 2)
  if (text.endsWith('=')) return canonicalTail(text, text.length - 2, 3)
  return true
}

/** Whether `text` is canonical, unpadded base64url. */
export function isStrictBase64url(text: string): boolean {
  const tail = text.length % 4
  if (tail === 1 || !base64urlPattern.test(text)) return false
  if (tail === 0) return true
  return canonicalTail(text, text.length - 1, tail)
}

/** Decodes canonical padded base64, or returns `undefined`. */
export function decodeBase64(text: string): Uint8Array | undefined {
  if (!isStrictBase64(text)) return undefined
  return nativeBuffer === undefined ? webBase64.decode(text) : nativeBuffer.from(text, 'base64')
}

/** Decodes canonical unpadded base64url, or returns `undefined`. */
export function decodeBase64url(text: string): Uint8Array | undefined {
  if (!isStrictBase64url(text)) return undefined
  return nativeBuffer === undefined
    ? webBase64.decodeUrl(text)
    : nativeBuffer.from(text, 'base64url')
}

/** Encodes bytes as unpadded base64url. */
export function bytesToBase64url(bytes: Uint8Array): string {
  return nativeBuffer === undefined
    ? webBase64.encodeUrl(bytes)
    : nativeBuffer.from(bytes).toString('base64url')
}

/** Encodes a UTF-8 string as padded base64. */
export function encodeBase64(text: string): string {
  return nativeBuffer === undefined
    ? webBase64.encode(utf8Encoder.encode(text))
    : nativeBuffer.from(text, 'utf8').toString('base64')
}

/** Encodes a UTF-8 string as unpadded base64url. */
export function encodeBase64url(text: string): string {
  return nativeBuffer === undefined
    ? webBase64.encodeUrl(utf8Encoder.encode(text))
    : nativeBuffer.from(text, 'utf8').toString('base64url')
}

/**
 * The codec of runtimes without a `Buffer`, over `atob`/`btoa`. It does not check its input: the
 * functions above give it only text that passed the strict checks. Exported for its tests.
 */
export const webBase64 = {
  /** Padded base64 to bytes. */
  decode: (text: string): Uint8Array => fromBinary(atob(text)),
  /** Unpadded base64url to bytes. */
  decodeUrl: (text: string): Uint8Array =>
    fromBinary(atob(text.replaceAll('-', '+').replaceAll('_', '/'))),
  /** Bytes to padded base64. */
  encode: (bytes: Uint8Array): string => btoa(toBinary(bytes)),
  /** Bytes to unpadded base64url. */
  encodeUrl: (bytes: Uint8Array): string =>
    btoa(toBinary(bytes)).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, ''),
}

/** The bytes of a binary string (one byte per character, as `atob` returns). */
function fromBinary(binary: string): Uint8Array {
  const bytes = new Uint8Array(binary.length)
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i)
  return bytes
}

/** A binary string of bytes (what `btoa` takes), built in slices to bound the argument count. */
function toBinary(bytes: Uint8Array): string {
  let binary = ''
  for (let i = 0; i < bytes.length; i += 0x2000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x2000))
  }
  return binary
}
