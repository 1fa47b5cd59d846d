/**
 * HTTP authentication header grammar (RFC 9110 §11): lists of challenges / credentials, each an
 * auth-scheme followed by a token68 or by comma-separated auth-params (`name=token` or
 * `name="quoted string"`), several schemes in one header value.
 *
 * Quoting follows RFC 9110 quoted-strings plus the `\uXXXX` escape that `mppx` writes for characters
 * outside printable ASCII, so values round-trip with it; the serializer only ever emits printable
 * ASCII.
 *
 * @module
 * @internal
 */
import { PaymentError, type PaymentErrorCode } from '../errors.js'

/** One challenge or credential of an authentication header. */
export type AuthItem = {
  /** The scheme as written (compare case-insensitively). */
  scheme: string
  /** Parameters by lowercase name (empty when the item carries a token68). */
  params: Record<string, string>
  /** The token68, if the item carries one instead of parameters. */
  token68?: string
}

const isTchar = (c: number) =>
  (c >= 0x30 && c <= 0x39) || // 0-9
  (c >= 0x41 && c <= 0x5a) || // A-Z
  (c >= 0x61 && c <= 0x7a) || // a-z
  "!#$%&'*+-.^_`|~".includes(String.fromCharCode(c))

const token68Pattern = /[A-Za-z0-9\-._~+/]+=*/y
const hex4 = /^[0-9A-Fa-f]{4}$/

/**
 * Parses an authentication header value into its items.
 *
 * @throws {PaymentError} `code` (default `malformed_header`) on anything that is not well-formed.
 */
export function parseAuthItems(
  value: string,
  code: PaymentErrorCode = 'malformed_header',
): AuthItem[] {
  const fail = (why: string): never => {
    throw new PaymentError(code, `Malformed authentication header: ${why}.`)
  }
  const items: AuthItem[] = []
  let current: AuthItem | undefined
  let i = 0
  const n = value.length
  const skipWs = () => {
    while (i < n && (value[i] === ' ' || value[i] === '\t')) i++
  }
  const readToken = (): string => {
    const start = i
    while (i < n && isTchar(value.charCodeAt(i))) i++
    return value.slice(start, i)
  }
  const endOfItem = () => {
    skipWs()
    if (i < n && value[i] !== ',') fail(`unexpected character at ${i}`)
  }

  while (i < n) {
    while (i < n && (value[i] === ' ' || value[i] === '\t' || value[i] === ',')) i++
    if (i >= n) break
    const start = i
    const name = readToken()
    if (name === '') fail(`expected a token at ${i}`)
    skipWs()
    if (value[i] === '=' && current !== undefined && current.token68 === undefined) {
      i++
      skipWs()
      addParam(current, name.toLowerCase(), readValue())
      endOfItem()
      continue
    }
    if (value[i] === '=') fail(`parameter without a scheme at ${start}`)
    // A new scheme.
    current = { scheme: name, params: Object.create(null) as Record<string, string> }
    items.push(current)
    if (i >= n || value[i] === ',') continue
    // Optional token68 right after the scheme.
    token68Pattern.lastIndex = i
    const m = token68Pattern.exec(value)
    if (m !== null) {
      const after = i + m[0].length
      let j = after
      while (j < n && (value[j] === ' ' || value[j] === '\t')) j++
      if (j >= n || value[j] === ',') {
        current.token68 = m[0]
        i = j
        continue
      }
    }
    // Otherwise the first auth-param follows.
    const paramName = readToken()
    if (paramName === '') fail(`expected a parameter at ${i}`)
    skipWs()
    if (value[i] !== '=') fail(`expected "=" at ${i}`)
    i++
    skipWs()
    addParam(current, paramName.toLowerCase(), readValue())
    endOfItem()
  }
  return items

  function addParam(item: AuthItem, key: string, v: string): void {
    if (Object.hasOwn(item.params, key)) fail(`duplicate parameter ${key}`)
    item.params[key] = v
  }

  function readValue(): string {
    if (value[i] !== '"') {
      const token = readToken()
      if (token === '') fail(`expected a value at ${i}`)
      return token
    }
    i++
    let out = ''
    let segment = i
    while (i < n) {
      const c = value.charCodeAt(i)
      if (c === 0x22) {
        out += value.slice(segment, i)
        i++
        return out
      }
      if (c === 0x5c) {
        out += value.slice(segment, i)
        const next = value.charCodeAt(i + 1)
        if (Number.isNaN(next) || !isQdChar(next)) fail(`bad escape at ${i}`)
        const hex = value.slice(i + 2, i + 6)
        if (next === 0x75 && hex4.test(hex)) {
          out += String.fromCharCode(Number.parseInt(hex, 16))
          i += 6
        } else {
          out += value[i + 1]
          i += 2
        }
        segment = i
        continue
      }
      if (!isQdChar(c)) fail(`control character in a quoted string at ${i}`)
      i++
    }
    return fail('unterminated quoted string')
  }
}

/** HTAB, SP, VCHAR and obs-text: the characters a quoted string may hold. */
function isQdChar(c: number): boolean {
  return c === 0x09 || (c >= 0x20 && c <= 0x7e) || (c >= 0x80 && c <= 0xff)
}

const needsEscape = /[^\x20-\x21\x23-\x5b\x5d-\x7e]/

/**
 * Formats `name="value"`, escaping `\` and `"`, and writing every character outside printable ASCII
 * as `\uXXXX` (what `mppx` reads), so the result is always a legal header value.
 */
export function authParam(name: string, value: string): string {
  if (!needsEscape.test(value)) return `${name}="${value}"`
  let out = ''
  for (let k = 0; k < value.length; k++) {
    const c = value.charCodeAt(k)
    if (c === 0x22 || c === 0x5c) out += `\\${value[k]}`
    else if (c < 0x20 || c > 0x7e) out += `\\u${c.toString(16).padStart(4, '0')}`
    else out += value[k]
  }
  return `${name}="${out}"`
}

/**
 * Splits a header value at top-level commas (outside quoted strings) and returns the first piece
 * whose scheme is `scheme`, from the scheme on (a bare scheme without credentials counts, so that it
 * is rejected as malformed rather than ignored). Used for `Authorization` values that list several
 * credentials.
 */
export function findScheme(value: string, scheme: string): string | undefined {
  const lower = scheme.toLowerCase()
  let pieceStart = 0
  let k = 0
  // Jumps from one comma or quote to the next (a credential's token is a few KB without either).
  let quote = value.indexOf('"')
  for (;;) {
    const comma = value.indexOf(',', k)
    if (quote !== -1 && (comma === -1 || quote < comma)) {
      k = quote + 1
      while (k < value.length && value[k] !== '"') k += value[k] === '\\' ? 2 : 1
      // A quoted string left open: no piece ends after it.
      if (k >= value.length) return undefined
      k++
      quote = value.indexOf('"', k)
      continue
    }
    const end = comma === -1 ? value.length : comma
    const piece = value.slice(pieceStart, end).trim()
    const space = piece.search(/[ \t]/)
    const name = space > 0 ? piece.slice(0, space) : piece
    if (name.toLowerCase() === lower) return piece
    if (comma === -1) return undefined
    pieceStart = k = comma + 1
  }
}
