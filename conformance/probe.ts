/**
 * SSRF-safe HTTP for probing sellers: the host is resolved here with `node:dns`, every address is
 * checked against loopback, private, link-local, metadata, unique-local and other internal ranges
 * (unless `allowPrivateNetwork`), the connection goes to the checked address (no second lookup that
 * could rebind), redirects are followed by hand with the same check on every hop, the body is read
 * with a size cap, and the whole exchange has a timeout.
 *
 * @module
 */
import { lookup as dnsLookup } from 'node:dns/promises'
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { BlockList, isIP } from 'node:net'

/** Ranges no probe may reach unless private networks are allowed. */
const blocked = new BlockList()
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this" network
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata (169.254.169.254)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  blocked.addSubnet(net, prefix, 'ipv4')
}
for (const [net, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
  ['fd00:ec2::254', 128], // AWS metadata (inside fc00::/7 too)
  ['64:ff9b::', 96], // NAT64 of IPv4 (judged by the embedded address below)
] as const) {
  blocked.addSubnet(net, prefix, 'ipv6')
}

/**
 * Whether an IP address is internal: loopback, private, link-local, metadata, unique-local,
 * multicast or reserved. IPv4-mapped IPv6 (`::ffff:10.0.0.1`) is judged as its IPv4 address.
 *
 * @example
 * ```ts
 * isInternalAddress('169.254.169.254') // true
 * isInternalAddress('93.184.216.34') // false
 * ```
 */
export function isInternalAddress(address: string): boolean {
  const family = isIP(address)
  if (family === 4) return blocked.check(address, 'ipv4')
  if (family !== 6) return true
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address)
  if (mapped?.[1] !== undefined) return isInternalAddress(mapped[1])
  const hexMapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address)
  if (hexMapped?.[1] !== undefined && hexMapped[2] !== undefined) {
    const hi = Number.parseInt(hexMapped[1], 16)
    const lo = Number.parseInt(hexMapped[2], 16)
    return isInternalAddress(`${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`)
  }
  return blocked.check(address, 'ipv6')
}

/** Why a probe could not be made. */
export class ProbeError extends Error {
  override readonly name = 'ProbeError'
  /** `blocked_address`, `bad_url`, `timeout`, `too_large`, `too_many_redirects` or `network`. */
  readonly code:
    | 'blocked_address'
    | 'bad_url'
    | 'timeout'
    | 'too_large'
    | 'too_many_redirects'
    | 'network'
  constructor(code: ProbeError['code'], message: string) {
    super(message)
    this.code = code
  }
}

/** Options of {@link probe}. */
export type ProbeOptions = {
  method?: string | undefined
  headers?: Record<string, string> | undefined
  body?: string | undefined
  /** Allow loopback/private/link-local targets (local tests). Default false. Security: SSRF. */
  allowPrivateNetwork?: boolean | undefined
  /** Timeout of the whole exchange, all redirects included. Default 15 000 ms. */
  timeoutMs?: number | undefined
  /** Body size cap in bytes. Default 256 KiB; a longer body is an error. */
  maxBodyBytes?: number | undefined
  /**
   * Decides which resolved addresses may be reached; default: anything not internal (see
   * {@link isInternalAddress}), or everything with `allowPrivateNetwork`.
   */
  allowAddress?: ((address: string) => boolean) | undefined
  /** Redirects followed (each hop checked). Default 5. */
  maxRedirects?: number | undefined
}

/** A probe's answer. Header names are lowercase; repeated headers are joined with `, `. */
export type ProbeResponse = {
  status: number
  headers: Record<string, string>
  body: string
  /** The URL that answered (after redirects). */
  url: string
}

type Resolved = { address: string; family: 4 | 6 }

async function resolveChecked(
  hostname: string,
  allowed: (address: string) => boolean,
): Promise<Resolved> {
  const host = hostname.replace(/^\[|\]$/g, '')
  let addresses: Resolved[]
  const literal = isIP(host)
  if (literal !== 0) {
    addresses = [{ address: host, family: literal as 4 | 6 }]
  } else {
    try {
      const found = await dnsLookup(host, { all: true, verbatim: true })
      addresses = found.map((a) => ({ address: a.address, family: a.family as 4 | 6 }))
    } catch (error) {
      throw new ProbeError('network', `cannot resolve ${host}: ${(error as Error).message}`)
    }
  }
  if (addresses.length === 0) throw new ProbeError('network', `cannot resolve ${host}`)
  {
    const bad = addresses.find((a) => !allowed(a.address))
    if (bad !== undefined) {
      throw new ProbeError(
        'blocked_address',
        `${host} resolves to ${bad.address}, an internal address (pass allowPrivateNetwork to probe local sellers)`,
      )
    }
  }
  return addresses[0] as Resolved
}

function once(
  url: URL,
  target: Resolved,
  options: ProbeOptions,
  signal: AbortSignal,
  maxBytes: number,
): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...(options.headers ?? {}) }
    if (options.body !== undefined) {
      headers['content-length'] = String(Buffer.byteLength(options.body))
    }
    const req = send(
      url,
      {
        method: options.method ?? 'GET',
        headers,
        signal,
        // The connection goes to the address checked above: no second resolution.
        lookup: (_host, opts, callback) => {
          if ((opts as { all?: boolean }).all) {
            ;(callback as (e: null, a: { address: string; family: number }[]) => void)(null, [
              target,
            ])
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
        res.on('data', (chunk: Buffer) => {
          size += chunk.length
          if (size > maxBytes) {
            res.destroy()
            reject(new ProbeError('too_large', `the response body is over ${maxBytes} bytes`))
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
          resolve({
            status: res.statusCode ?? 0,
            headers: out,
            body: Buffer.concat(chunks).toString('utf8'),
          })
        })
        res.on('error', (error) => reject(error))
      },
    )
    req.on('error', (error) => reject(error))
    if (options.body !== undefined) req.write(options.body)
    req.end()
  })
}

/**
 * Sends one request the SSRF-safe way (see the module description).
 *
 * @param url - `http:` or `https:` only.
 * @throws {ProbeError} for a refused target, a timeout, an oversized body or a network failure.
 * @example
 * ```ts
 * const answer = await probe('https://api.example.com/v1/x', { method: 'POST', body: '{}' })
 * ```
 */
export async function probe(url: string, options: ProbeOptions = {}): Promise<ProbeResponse> {
  const timeoutMs = options.timeoutMs ?? 15_000
  const maxBytes = options.maxBodyBytes ?? 256 * 1024
  const maxRedirects = options.maxRedirects ?? 5
  const signal = AbortSignal.timeout(timeoutMs)
  const allowed =
    options.allowAddress ??
    (options.allowPrivateNetwork === true ? () => true : (a: string) => !isInternalAddress(a))
  let current: URL
  try {
    current = new URL(url)
  } catch {
    throw new ProbeError('bad_url', `not a URL: ${url.slice(0, 200)}`)
  }
  let method = options.method ?? 'GET'
  let body = options.body
  let headers = options.headers ?? {}
  for (let hop = 0; ; hop++) {
    if (current.protocol !== 'http:' && current.protocol !== 'https:') {
      throw new ProbeError(
        'bad_url',
        `only http and https URLs can be probed, not ${current.protocol}`,
      )
    }
    if (current.username !== '' || current.password !== '') {
      throw new ProbeError('bad_url', 'URLs with credentials are not probed')
    }
    const target = await resolveChecked(current.hostname, allowed)
    let answer: Awaited<ReturnType<typeof once>>
    try {
      answer = await once(current, target, { ...options, method, body, headers }, signal, maxBytes)
    } catch (error) {
      if (error instanceof ProbeError) throw error
      if (signal.aborted) throw new ProbeError('timeout', `no answer within ${timeoutMs} ms`)
      throw new ProbeError('network', (error as Error).message)
    }
    const location = answer.headers.location
    if (answer.status >= 300 && answer.status < 400 && location !== undefined) {
      if (hop >= maxRedirects) throw new ProbeError('too_many_redirects', 'too many redirects')
      const next = new URL(location, current)
      if (next.origin !== current.origin) headers = withoutCredentials(headers)
      current = next
      if (
        answer.status === 303 ||
        ((answer.status === 301 || answer.status === 302) && method === 'POST')
      ) {
        method = 'GET'
        body = undefined
      }
      continue
    }
    return { ...answer, url: current.href }
  }
}

/** Payment and authorization headers are not carried to another origin on a redirect. */
function withoutCredentials(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (!/^(authorization|x-payment|cookie)$/i.test(name)) out[name] = value
  }
  return out
}
