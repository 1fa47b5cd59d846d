/**
 * A minimal DER encoder: just what the simulated enclave needs to build X.509 certificates and
 * CRLs of a test PKI (sequences, integers, object identifiers, strings, times, tags).
 *
 * @module
 */

/** Concatenates byte arrays. */
export function concat(...parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0))
  let offset = 0
  for (const part of parts) {
    out.set(part, offset)
    offset += part.byteLength
  }
  return out
}

function lengthOf(n: number): Uint8Array {
  if (n < 0x80) return Uint8Array.of(n)
  const bytes: number[] = []
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff)
  return Uint8Array.of(0x80 | bytes.length, ...bytes)
}

/** A tag-length-value of the given tag over the concatenated parts. */
export function tlv(tag: number, ...parts: readonly Uint8Array[]): Uint8Array {
  const body = concat(...parts)
  return concat(Uint8Array.of(tag), lengthOf(body.byteLength), body)
}

/** `SEQUENCE`. */
export const seq = (...parts: readonly Uint8Array[]) => tlv(0x30, ...parts)
/** `SET`. */
export const set = (...parts: readonly Uint8Array[]) => tlv(0x31, ...parts)
/** `[n] EXPLICIT` (constructed context tag). */
export const explicit = (n: number, ...parts: readonly Uint8Array[]) => tlv(0xa0 | n, ...parts)
/** `OCTET STRING`. */
export const octets = (bytes: Uint8Array) => tlv(0x04, bytes)
/** `BIT STRING` with no unused bits. */
export const bits = (bytes: Uint8Array) => tlv(0x03, Uint8Array.of(0), bytes)
/** `BOOLEAN`. */
export const bool = (value: boolean) => tlv(0x01, Uint8Array.of(value ? 0xff : 0))
/** `UTF8String`. */
export const utf8 = (text: string) => tlv(0x0c, new TextEncoder().encode(text))

function unsigned(value: number | Uint8Array): Uint8Array {
  let bytes: number[]
  if (typeof value === 'number') {
    bytes = []
    for (let v = value; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff)
    if (bytes.length === 0) bytes = [0]
  } else {
    bytes = Array.from(value)
    while (bytes.length > 1 && bytes[0] === 0) bytes.shift()
  }
  if ((bytes[0] ?? 0) & 0x80) bytes.unshift(0)
  return Uint8Array.from(bytes)
}

/** `INTEGER` (non-negative). */
export const int = (value: number | Uint8Array) => tlv(0x02, unsigned(value))
/** `ENUMERATED` (non-negative). */
export const enumerated = (value: number) => tlv(0x0a, unsigned(value))

/** `OBJECT IDENTIFIER` from its dotted form. */
export function oid(dotted: string): Uint8Array {
  const [first = 0, second = 0, ...rest] = dotted.split('.').map(Number)
  const out = [40 * first + second]
  for (const arc of rest) {
    const chunk: number[] = [arc & 0x7f]
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128))
      chunk.unshift(0x80 | (v & 0x7f))
    out.push(...chunk)
  }
  return tlv(0x06, Uint8Array.from(out))
}

/** `UTCTime` before 2050, `GeneralizedTime` from then on (RFC 5280 §4.1.2.5). */
export function time(date: Date): Uint8Array {
  const iso = date.toISOString()
  const digits = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}Z`
  const year = date.getUTCFullYear()
  return year < 2050
    ? tlv(0x17, new TextEncoder().encode(digits.slice(2)))
    : tlv(0x18, new TextEncoder().encode(digits))
}
