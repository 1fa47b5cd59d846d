/**
 * SSRF-safe HTTP for probing sellers: {@link safeFetch} of `tollgate/node` (the same client the
 * reference gateway downloads media with) — every resolved address judged, the connection pinned to
 * the judged address, every redirect hop judged, body and time capped — with the answer read as text.
 *
 * @module
 */
import { PaymentError } from 'tollgate'
import { type HostResolver, isInternalAddress, safeFetch } from 'tollgate/node'

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
  /** Redirects followed (each hop checked). Default 5. */
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
 * Sends one request the SSRF-safe way (see the module description).
 *
 * @param url - `http:` or `https:` only.
 * @throws {PaymentError} when no answer could be had, with the `FetchErrorCode` saying why:
 *   `unreachable` (does not resolve, is an internal address, refuses the connection — one code on
 *   purpose, so a probe's answer never maps what is reachable inside), `bad_url` (not http(s)),
 *   `timeout`, `too_large`, `too_many_redirects` or `aborted`.
 * @example
 * ```ts
 * const answer = await probe('https://api.example.com/v1/x', { method: 'POST', body: '{}' })
 * ```
 */
export async function probe(url: string, options: ProbeOptions = {}): Promise<ProbeResponse> {
  const result = await safeFetch(url, {
    method: options.method,
    headers: options.headers,
    body: options.body,
    allowPrivateNetwork: options.allowPrivateNetwork,
    allowAddress: options.allowAddress,
    resolve: options.resolve,
    timeoutMs: options.timeoutMs ?? 15_000,
    maxBodyBytes: options.maxBodyBytes ?? 256 * 1024,
    maxRedirects: options.maxRedirects,
  })
  if (result.status === 'failed') {
    const message =
      result.code === 'unreachable'
        ? `${result.message}; a seller on this machine or a private network needs allowPrivateNetwork (--allow-private-network)`
        : result.message
    throw new PaymentError(result.code, message)
  }
  const { response } = result
  return {
    status: response.status,
    headers: response.headers,
    body: new TextDecoder().decode(response.body),
    url: response.url,
  }
}
