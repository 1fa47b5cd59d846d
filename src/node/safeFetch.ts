/**
 * An SSRF-safe HTTP(S) client for URLs that someone else chose (a buyer's media URL, a seller URL
 * under conformance test, a provider's result URL):
 *
 * - the host name is resolved here (an injectable resolver; `node:dns` by default) and EVERY address
 *   it resolves to is judged with `ipaddr.js` — loopback, private, link-local (cloud metadata
 *   `169.254.169.254`), carrier-grade NAT, multicast, reserved, unspecified, unique-local (AWS
 *   `fd00:ec2::254`), and IPv6 forms that embed an IPv4 address (IPv4-mapped `::ffff:…`, NAT64
 *   `64:ff9b::/96`, 6to4) judged by the embedded address; decimal, octal, hex and short IPv4
 *   spellings are judged by the address they mean;
 * - the connection goes to the address that was judged (a `lookup` pinned to it; `Host` and TLS SNI
 *   stay the name), so a second DNS answer cannot rebind it; no pooled connection is reused;
 * - redirects are followed by hand, each hop judged the same way, at most `maxRedirects`;
 * - the body is capped, the whole exchange has a timeout;
 * - link-local and cloud metadata addresses are refused even when the caller allows private ones;
 * - a refused, unresolvable, blocked or unreachable target is ONE failure (`unreachable`) with one
 *   message, so the answer never tells a caller what exists inside the network.
 *
 * @module
 */
import { lookup as dnsLookup } from 'node:dns/promises'
import { request as httpRequest, type IncomingMessage, maxHeaderSize } from 'node:http'
import { request as httpsRequest } from 'node:https'
import ipaddr from 'ipaddr.js'

/** One address a host name resolves to. */
export type ResolvedAddress = { address: string; family?: 4 | 6 | undefined }

/**
 * Resolves a host name to all of its addresses. Default: `node:dns` `lookup` with `all: true`.
 * Tests inject one that answers fixed addresses.
 */
export type HostResolver = (hostname: string) => Promise<readonly ResolvedAddress[]>

/** Options of {@link safeFetch}. */
export type SafeFetchOptions = {
  /** Default `GET`. */
  method?: string | undefined
  /** Request headers. `authorization`, `x-payment` and `cookie` are not carried to another origin. */
  headers?: Record<string, string> | undefined
  body?: string | Uint8Array | undefined
  /**
   * Allow loopback, private and other internal addresses. Default `false`. Security: with `true`
   * the caller can reach almost anything this host can; only for local tests and operator-run
   * probes. Link-local and cloud metadata addresses (`169.254.169.254`, `fe80::/10`,
   * `fd00:ec2::254`, `100.100.100.200`) stay refused even then.
   */
  allowPrivateNetwork?: boolean | undefined
  /**
   * Decides which resolved address may be reached on which hop (0 = the first URL); replaces the
   * default rule (anything but {@link isInternalAddress}, or everything but link-local and cloud
   * metadata addresses with `allowPrivateNetwork`). Link-local and metadata addresses are refused
   * whatever it answers.
   */
  allowAddress?: ((address: string, hop: number) => boolean) | undefined
  /** Resolver of host names. Default `node:dns` lookup (all addresses). */
  resolve?: HostResolver | undefined
  /** Timeout of the whole exchange, redirects and body included. Default 15 000 ms. */
  timeoutMs?: number | undefined
  /** Largest body read; a longer one is a `too_large` failure. Default 1 MiB. */
  maxBodyBytes?: number | undefined
  /** Redirects followed (each hop judged). Default 5; 0 answers the redirect itself. */
  maxRedirects?: number | undefined
  /** Aborts the exchange (an `aborted` failure). */
  signal?: AbortSignal | undefined
}

/** An answer. Header names are lowercase; repeated headers are joined with `, `. */
export type SafeResponse = {
  status: number
  headers: Record<string, string>
  body: Uint8Array<ArrayBuffer>
  /** The URL that answered (after redirects). */
  url: string
}

/**
 * Why no answer: `unreachable` (the name does not resolve, resolves to an address that may not be
 * reached, refuses or drops the connection — deliberately one code), `bad_url`, `timeout`,
 * `too_large`, `too_many_redirects`, `aborted`.
 */
export type SafeFetchFailureCode =
  | 'unreachable'
  | 'bad_url'
  | 'timeout'
  | 'too_large'
  | 'too_many_redirects'
  | 'aborted'

/** The result of {@link safeFetch}. */
export type SafeFetchResult =
  | { status: 'answered'; response: SafeResponse }
  | { status: 'failed'; code: SafeFetchFailureCode; message: string }

/** The one message of every `unreachable` failure. */
export const unreachableMessage =
  'the host could not be reached (it does not resolve, refuses the connection, or is not a public address)'

/**
 * Whether an IP address must not be reached from a request someone else chose: anything but a
 * global unicast address. IPv6 forms that embed an IPv4 address (IPv4-mapped, SIIT, NAT64
 * `64:ff9b::/96`, 6to4) are judged by the embedded address; the local-use NAT64 prefix, IPv4-
 * compatible `::a.b.c.d`, Teredo, documentation and benchmarking ranges are internal. A string
 * that is not an address (after `ipaddr.js` reads decimal, octal, hex and short IPv4 forms) is
 * internal.
 *
 * @example
 * ```ts
 * isInternalAddress('169.254.169.254') // true
 * isInternalAddress('::ffff:7f00:1') // true (127.0.0.1)
 * isInternalAddress('64:ff9b::a00:1') // true (10.0.0.1 through NAT64)
 * isInternalAddress('93.184.216.34') // false
 * ```
 */
export function isInternalAddress(address: string): boolean {
  const parsed = parseAddress(address)
  return parsed === undefined || !isPublic(parsed)
}

function parseAddress(address: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  const text = address.replace(/^\[|\]$/g, '')
  try {
    if (ipaddr.IPv6.isValid(text)) return ipaddr.IPv6.parse(text)
    if (ipaddr.IPv4.isValid(text)) return ipaddr.IPv4.parse(text)
  } catch {
    return undefined
  }
  return undefined
}

function embeddedIPv4(parts: number[], first: number): ipaddr.IPv4 {
  const hi = parts[first] ?? 0
  const lo = parts[first + 1] ?? 0
  return new ipaddr.IPv4([hi >> 8, hi & 255, lo >> 8, lo & 255])
}

function isPublic(address: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  if (address.kind() === 'ipv4') return (address as ipaddr.IPv4).range() === 'unicast'
  const v6 = address as ipaddr.IPv6
  if (v6.zoneId !== undefined) return false
  const parts = v6.parts
  const range = v6.range()
  if (range === 'ipv4Mapped' || range === 'rfc6145') return isPublic(embeddedIPv4(parts, 6))
  if (range === 'rfc6052') {
    // 64:ff9b::/96 carries a public IPv4 address; the local-use 64:ff9b:1::/48 is internal.
    return parts[2] === 0 && isPublic(embeddedIPv4(parts, 6))
  }
  if (range === '6to4') return isPublic(embeddedIPv4(parts, 1))
  // IPv4-compatible ::a.b.c.d (deprecated; ::, ::1 included) is never public.
  if (parts.slice(0, 6).every((part) => part === 0)) return false
  // Documentation 2001:db8::/32 is not in ipaddr.js's special ranges.
  if (parts[0] === 0x2001 && parts[1] === 0x0db8) return false
  return range === 'unicast'
}

/**
 * Cloud metadata services outside the link-local ranges: AWS over IPv6 (`fd00:ec2::254`), Alibaba
 * Cloud (`100.100.100.200`), Oracle Cloud's secondary address (`192.0.0.192`).
 */
const metadataAddresses = new Set(['fd00:ec2::254', '100.100.100.200', '192.0.0.192'])

/**
 * Whether an address is link-local (`169.254.0.0/16`, `fe80::/10`; the usual cloud metadata
 * address `169.254.169.254` among them) or another cloud metadata address — directly or embedded in
 * an IPv6 form (IPv4-mapped, SIIT, NAT64, 6to4). These are never reached, `allowPrivateNetwork`
 * and `allowAddress` notwithstanding: a local stack has no use for them, and they hold credentials.
 */
function isLinkLocalOrMetadata(address: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  if (
    metadataAddresses.has(address.toNormalizedString()) ||
    metadataAddresses.has(address.toString())
  )
    return true
  if (address.kind() === 'ipv4') return (address as ipaddr.IPv4).range() === 'linkLocal'
  const v6 = address as ipaddr.IPv6
  const parts = v6.parts
  const range = v6.range()
  if (range === 'linkLocal' || v6.zoneId !== undefined) return true
  if (range === 'ipv4Mapped' || range === 'rfc6145' || range === 'rfc6052')
    return isLinkLocalOrMetadata(embeddedIPv4(parts, 6))
  if (range === '6to4') return isLinkLocalOrMetadata(embeddedIPv4(parts, 1))
  // IPv4-compatible ::a.b.c.d.
  if (parts.slice(0, 6).every((part) => part === 0))
    return isLinkLocalOrMetadata(embeddedIPv4(parts, 6))
  return false
}

const defaultResolver: HostResolver = async (hostname) => {
  const found = await dnsLookup(hostname, { all: true, verbatim: true })
  return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }))
}

type Target = { address: string; family: 4 | 6 }

class Failure extends Error {
  constructor(
    readonly code: SafeFetchFailureCode,
    message: string,
  ) {
    super(message)
  }
}

async function resolveChecked(
  hostname: string,
  hop: number,
  allowed: (address: string, hop: number) => boolean,
  resolve: HostResolver,
): Promise<Target> {
  const host = hostname.replace(/^\[|\]$/g, '')
  let candidates: readonly ResolvedAddress[]
  if (ipaddr.IPv6.isValid(host) || ipaddr.IPv4.isValidFourPartDecimal(host)) {
    candidates = [{ address: host }]
  } else {
    try {
      candidates = await resolve(host)
    } catch {
      throw new Failure('unreachable', unreachableMessage)
    }
  }
  const targets: Target[] = []
  for (const candidate of candidates) {
    const parsed = parseAddress(candidate.address)
    // Every address must pass: a name with one internal address is refused whole.
    if (parsed === undefined) throw new Failure('unreachable', unreachableMessage)
    const normal =
      parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()
        ? (parsed as ipaddr.IPv6).toIPv4Address().toString()
        : parsed.toString()
    // Link-local and cloud metadata addresses are refused whatever the caller allows.
    if (isLinkLocalOrMetadata(parsed) || !allowed(normal, hop)) {
      throw new Failure('unreachable', unreachableMessage)
    }
    targets.push({ address: normal, family: normal.includes(':') ? 6 : 4 })
  }
  const first = targets[0]
  if (first === undefined) throw new Failure('unreachable', unreachableMessage)
  return first
}

type Sent = {
  method: string
  headers: Record<string, string>
  body: string | Uint8Array | undefined
}

function once(
  url: URL,
  target: Target,
  sent: Sent,
  signal: AbortSignal,
  maxBytes: number,
): Promise<{ status: number; headers: Record<string, string>; body: Uint8Array<ArrayBuffer> }> {
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...sent.headers }
    if (sent.body !== undefined) {
      headers['content-length'] = String(
        typeof sent.body === 'string' ? Buffer.byteLength(sent.body) : sent.body.byteLength,
      )
    }
    const req = send(
      url,
      {
        method: sent.method,
        headers,
        signal,
        agent: false,
        // The connection goes to the address judged above: no second resolution.
        lookup: (_host, opts, callback) => {
          if ((opts as { all?: boolean }).all) {
            ;(callback as (e: null, a: Target[]) => void)(null, [target])
          } else {
            ;(callback as (e: null, a: string, f: number) => void)(
              null,
              target.address,
              target.family,
            )
          }
        },
      },
      (res: IncomingMessage) => {
        const chunks: Buffer[] = []
        let size = 0
        const declared = Number(res.headers['content-length'] ?? Number.NaN)
        if (Number.isFinite(declared) && declared > maxBytes) {
          res.destroy()
          reject(new Failure('too_large', `the response body is over ${maxBytes} bytes`))
          return
        }
        res.on('data', (chunk: Buffer) => {
          size += chunk.length
          if (size > maxBytes) {
            res.destroy()
            reject(new Failure('too_large', `the response body is over ${maxBytes} bytes`))
            return
          }
          chunks.push(chunk)
        })
        res.on('end', () => {
          const out: Record<string, string> = {}
          for (const [name, value] of Object.entries(res.headers)) {
            if (value === undefined) continue
            out[name] = Array.isArray(value) ? value.join(', ') : value
          }
          const whole = Buffer.concat(chunks)
          const body = new Uint8Array(whole.byteLength)
          body.set(whole)
          resolve({ status: res.statusCode ?? 0, headers: out, body })
        })
        res.on('error', (error) => reject(error))
      },
    )
    req.on('error', (error) => reject(error))
    if (sent.body !== undefined) req.write(sent.body)
    req.end()
  })
}

/**
 * Sends one request the SSRF-safe way (see the module description). Never throws.
 *
 * @param url - `http:` or `https:` only, no credentials in the URL.
 * @param options - see {@link SafeFetchOptions}; by default internal addresses are refused.
 * @returns `{ status: 'answered', response }` for any HTTP answer (a non-2xx one included), or
 *   `{ status: 'failed', code, message }`.
 * @example
 * ```ts
 * const result = await safeFetch('https://cdn.example.com/a.mp3', { maxBodyBytes: 25 << 20 })
 * if (result.status === 'answered' && result.response.status === 200) use(result.response.body)
 * ```
 */
export async function safeFetch(
  url: string | URL,
  options: SafeFetchOptions = {},
): Promise<SafeFetchResult> {
  const timeoutMs = options.timeoutMs ?? 15_000
  const maxBytes = options.maxBodyBytes ?? 1024 * 1024
  const maxRedirects = options.maxRedirects ?? 5
  const resolve = options.resolve ?? defaultResolver
  const timeout = AbortSignal.timeout(timeoutMs)
  const signal = options.signal === undefined ? timeout : AbortSignal.any([timeout, options.signal])
  const allowed =
    options.allowAddress ??
    (options.allowPrivateNetwork === true ? () => true : (a: string) => !isInternalAddress(a))
  let current: URL
  try {
    current = new URL(url)
  } catch {
    return { status: 'failed', code: 'bad_url', message: 'not a URL' }
  }
  let sent: Sent = {
    method: options.method ?? 'GET',
    headers: options.headers ?? {},
    body: options.body,
  }
  try {
    for (let hop = 0; ; hop++) {
      if (current.protocol !== 'http:' && current.protocol !== 'https:') {
        throw new Failure(
          'bad_url',
          `only http and https URLs are fetched, not ${current.protocol}`,
        )
      }
      if (current.username !== '' || current.password !== '') {
        throw new Failure('bad_url', 'URLs with credentials are not fetched')
      }
      const target = await raceSignal(
        resolveChecked(current.hostname, hop, allowed, resolve),
        signal,
      )
      const answer = await once(current, target, sent, signal, maxBytes)
      const location = answer.headers.location
      if (answer.status >= 300 && answer.status < 400 && location !== undefined) {
        if (hop >= maxRedirects) {
          if (maxRedirects === 0)
            return { status: 'answered', response: { ...answer, url: current.href } }
          throw new Failure('too_many_redirects', `more than ${maxRedirects} redirects`)
        }
        let next: URL
        try {
          next = new URL(location, current)
        } catch {
          throw new Failure('bad_url', 'the redirect location is not a URL')
        }
        if (next.origin !== current.origin)
          sent = { ...sent, headers: withoutCredentials(sent.headers) }
        if (
          answer.status === 303 ||
          ((answer.status === 301 || answer.status === 302) && sent.method === 'POST')
        ) {
          sent = { ...sent, method: 'GET', body: undefined }
        }
        current = next
        continue
      }
      return { status: 'answered', response: { ...answer, url: current.href } }
    }
  } catch (error) {
    if (error instanceof Failure)
      return { status: 'failed', code: error.code, message: error.message }
    if (options.signal?.aborted === true) {
      return { status: 'failed', code: 'aborted', message: 'the request was aborted' }
    }
    if (timeout.aborted) {
      return { status: 'failed', code: 'timeout', message: `no answer within ${timeoutMs} ms` }
    }
    // The host answered, with more header bytes than Node's HTTP client reads: say so, it is not
    // a host that could not be reached.
    if ((error as { code?: unknown } | null)?.code === 'HPE_HEADER_OVERFLOW') {
      return {
        status: 'failed',
        code: 'too_large',
        message: `the response headers are over ${maxHeaderSize / 1024} KiB (Node's HTTP client reads no more)`,
      }
    }
    // Refused, reset, TLS and the like: said the same way as a blocked address.
    return { status: 'failed', code: 'unreachable', message: unreachableMessage }
  }
}

/** Rejects when `signal` aborts first (a resolver that hangs must not outlive the timeout). */
function raceSignal<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason)
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort)
        resolve(value)
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort)
        reject(error)
      },
    )
  })
}

/** Payment and authorization headers are not carried to another origin on a redirect. */
function withoutCredentials(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (!/^(authorization|x-payment|cookie|proxy-authorization)$/i.test(name)) out[name] = value
  }
  return out
}
