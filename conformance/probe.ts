/**
 * SSRF-safe HTTP for probing sellers: {@link safeFetch} of `tollgate/node` (the same client the
 * reference gateway downloads media with) — every resolved address judged, the connection pinned to
 * the judged address, every redirect hop judged, body and time capped — with the answer read as text.
 * A probe follows redirects on the same host only.
 *
 * @module
 */
import { PaymentError } from 'tollgate'
import { type HostResolver, isInternalAddress, type SafeResponse, safeFetch } from 'tollgate/node'

export { isInternalAddress }

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
   * Decides which resolved address may be reached on which hop (0 = the URL given); default:
   * anything not internal (see {@link isInternalAddress}), or everything with `allowPrivateNetwork`.
   */
  allowAddress?: ((address: string, hop: number) => boolean) | undefined
  /** Redirects followed, on the same host only (each hop checked). Default 5. */
  maxRedirects?: number | undefined
  /** Resolver of host names (tests). Default `node:dns`. */
  resolve?: HostResolver | undefined
}

/** A probe's answer. Header names are lowercase; repeated headers are joined with `, `. */
export type ProbeResponse = {
  status: number
  headers: Record<string, string>
  body: string
  /** The URL that answered (after redirects). */
  url: string
}

/**
 * Sends one request the SSRF-safe way (see the module description). Redirects are followed on the
 * same host only (`host[:port]` of the URL; `http` to `https` included), each hop judged again: a
 * seller cannot send the probe to another host — an internal service, a metadata address — by
 * answering with a redirect.
 *
 * @param url - `http:` or `https:` only.
 * @throws {PaymentError} when no answer could be had, with the `FetchErrorCode` saying why:
 *   `unreachable` (does not resolve, is an internal address, refuses the connection — one code on
 *   purpose, so a probe's answer never maps what is reachable inside), `bad_url` (not http(s), or
 *   a redirect to another host), `timeout`, `too_large`, `too_many_redirects` or `aborted`.
 * @example
 * ```ts
 * const answer = await probe('https://api.example.com/v1/x', { method: 'POST', body: '{}' })
 * ```
 */
export async function probe(url: string, options: ProbeOptions = {}): Promise<ProbeResponse> {
  const timeoutMs = options.timeoutMs ?? 15_000
  const maxRedirects = options.maxRedirects ?? 5
  const deadline = Date.now() + timeoutMs
  let current = url
  let method = options.method
  let body = options.body
  for (let hop = 0; ; hop++) {
    const result = await safeFetch(current, {
      method,
      headers: options.headers,
      body,
      allowPrivateNetwork: options.allowPrivateNetwork,
      allowAddress:
        options.allowAddress === undefined
          ? undefined
          : (address, at) =>
              (options.allowAddress as NonNullable<typeof options.allowAddress>)(address, hop + at),
      resolve: options.resolve,
      timeoutMs: Math.max(1, deadline - Date.now()),
      maxBodyBytes: options.maxBodyBytes ?? 256 * 1024,
      // Redirects are followed here, on the same host only.
      maxRedirects: 0,
    })
    if (result.status === 'failed') {
      const message =
        result.code === 'unreachable'
          ? `${result.message}; a seller on this machine or a private network needs allowPrivateNetwork (--allow-private-network)`
          : result.message
      throw new PaymentError(result.code, message)
    }
    const { response } = result
    const location = response.headers.location
    if (response.status >= 300 && response.status < 400 && location !== undefined) {
      if (hop >= maxRedirects) {
        if (maxRedirects === 0) return answerOf(response)
        throw new PaymentError('too_many_redirects', `more than ${maxRedirects} redirects`)
      }
      let next: URL
      try {
        next = new URL(location, response.url)
      } catch {
        throw new PaymentError('bad_url', 'the redirect location is not a URL')
      }
      if (next.host !== new URL(response.url).host) {
        throw new PaymentError(
          'bad_url',
          'the answer redirects to another host; a probe follows redirects on the same host only',
        )
      }
      if (
        response.status === 303 ||
        ((response.status === 301 || response.status === 302) && method === 'POST')
      ) {
        method = 'GET'
        body = undefined
      }
      current = next.href
      continue
    }
    return answerOf(response)
  }
}

function answerOf(response: SafeResponse): ProbeResponse {
  return {
    status: response.status,
    headers: response.headers,
    body: new TextDecoder().decode(response.body),
    url: response.url,
  }
}
