/**
 * Helpers the family modules share: bounded body reads, JSON results, media downloads with an SSRF
 * guard, base64 file decoding.
 *
 * @module
 */
import { isIP } from 'node:net'
import { takeBufferedBody } from '../../src/internal/nodeFetch.js'
import type { UpstreamFailed, UpstreamResult } from './upstream.js'

/** Largest JSON answer read from an upstream: 32 MiB. */
export const maxJsonBytes = 32 * 1024 * 1024
/** Largest media file downloaded (re-hosted results, transcription inputs): 64 MiB. */
export const maxMediaBytes = 64 * 1024 * 1024

/** A failure result. */
export function failed(reason: string, retryable = false): UpstreamFailed {
  return { status: 'failed', reason, retryable }
}

/** A 200 JSON answer. */
export function jsonResult(value: unknown): UpstreamResult {
  return {
    status: 'ok',
    response: new Response(JSON.stringify(value), {
      status: 200,
      headers: { 'content-type': 'application/json; charset=utf-8' },
    }),
  }
}

/** Reads a body up to `max` bytes; `undefined` when it is larger (the stream is cancelled). */
export async function readLimited(
  response: Response,
  max: number,
): Promise<Uint8Array<ArrayBuffer> | undefined> {
  const declared = Number(response.headers.get('content-length') ?? Number.NaN)
  if (Number.isFinite(declared) && declared > max) {
    await response.body?.cancel().catch(() => {})
    return undefined
  }
  const whole = takeBufferedBody(response)
  if (whole !== undefined) {
    if (whole.byteLength > max) return undefined
    return new Uint8Array(
      whole.buffer,
      whole.byteOffset,
      whole.byteLength,
    ) as Uint8Array<ArrayBuffer>
  }
  if (!response.body) return new Uint8Array(0)
  const reader = response.body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > max) {
      await reader.cancel().catch(() => {})
      return undefined
    }
    chunks.push(value)
  }
  const out = new Uint8Array(total)
  let offset = 0
  for (const chunk of chunks) {
    out.set(chunk, offset)
    offset += chunk.byteLength
  }
  return out
}

/** Reads a JSON object answer; a failure when it is too large, not JSON, or not an object. */
export async function readJson(
  response: Response,
): Promise<{ status: 'ok'; value: Record<string, unknown> } | UpstreamFailed> {
  const bytes = await readLimited(response, maxJsonBytes)
  if (!bytes) return failed('upstream answer is too large')
  let value: unknown
  try {
    value = JSON.parse(new TextDecoder().decode(bytes))
  } catch {
    return failed('upstream answered something other than JSON')
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return failed('upstream answered JSON that is not an object')
  }
  return { status: 'ok', value: value as Record<string, unknown> }
}

/** Maps a 2xx JSON answer through unchanged (as a fresh JSON response). */
export async function passJson(response: Response): Promise<UpstreamResult> {
  const read = await readJson(response)
  return read.status === 'ok' ? jsonResult(read.value) : read
}

/**
 * Whether a host name is loopback, private, link-local or otherwise internal (literal addresses and
 * well-known internal names; DNS answers are not resolved here).
 */
export function isInternalHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase()
  if (host === 'localhost' || host.endsWith('.localhost') || host.endsWith('.local')) return true
  if (host.endsWith('.internal') || host === 'metadata.google.internal') return true
  const kind = isIP(host)
  if (kind === 4) {
    const [a = 0, b = 0] = host.split('.').map(Number)
    return (
      a === 0 ||
      a === 10 ||
      a === 127 ||
      (a === 100 && b >= 64 && b <= 127) ||
      (a === 169 && b === 254) ||
      (a === 172 && b >= 16 && b <= 31) ||
      (a === 192 && b === 168) ||
      a >= 224
    )
  }
  if (kind === 6) {
    if (host === '::' || host === '::1') return true
    if (/^f[cd]/.test(host) || /^fe[89ab]/.test(host)) return true
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(host)
    return mapped ? isInternalHost(mapped[1] as string) : false
  }
  return false
}

/** Options of {@link fetchMedia}. */
export type FetchMediaOptions = {
  fetch: typeof globalThis.fetch
  signal?: AbortSignal | undefined
  /** Largest download. Default {@link maxMediaBytes}. */
  maxBytes?: number | undefined
  /** Allow loopback/private hosts (the stub upstreams in tests). Default `false`. */
  allowInternalHosts?: boolean | undefined
}

/** Downloaded media. */
export type Media = { bytes: Uint8Array<ArrayBuffer>; contentType: string }

/**
 * Downloads a media file from an http(s) URL: no credentials sent, internal hosts refused (unless
 * allowed), redirects not followed, size bounded.
 */
export async function fetchMedia(
  url: string,
  options: FetchMediaOptions,
): Promise<{ status: 'ok'; media: Media } | UpstreamFailed> {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return failed('media URL is not a URL')
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
    return failed('media URL is not http(s)')
  }
  if (!options.allowInternalHosts && isInternalHost(parsed.hostname)) {
    return failed('media URL points at an internal host')
  }
  let response: Response
  try {
    response = await options.fetch(parsed, { redirect: 'manual', signal: options.signal ?? null })
  } catch (error) {
    return failed(`media download failed: ${errorName(error)}`, true)
  }
  if (response.status < 200 || response.status > 299) {
    await response.body?.cancel().catch(() => {})
    return failed(`media download answered ${response.status}`, response.status >= 500)
  }
  const bytes = await readLimited(response, options.maxBytes ?? maxMediaBytes)
  if (!bytes) return failed('media file is too large')
  const contentType = response.headers.get('content-type') ?? 'application/octet-stream'
  return { status: 'ok', media: { bytes, contentType } }
}

/** Decodes a base64 file (raw, or a `data:<type>;base64,` URL). */
export function decodeBase64File(value: string): Media {
  const match = /^data:([a-z0-9.+/-]+)(?:;[a-z0-9=.-]+)*;base64,/i.exec(value)
  const body = match ? value.slice(match[0].length) : value
  const bytes = new Uint8Array(Buffer.from(body, 'base64'))
  return { bytes, contentType: match?.[1] ?? 'application/octet-stream' }
}

/** A short, secret-free name for a thrown value (never its message: it may quote a URL or header). */
export function errorName(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: { code?: unknown } }).cause
    const code = typeof cause?.code === 'string' ? ` ${cause.code}` : ''
    return `${error.name}${code}`
  }
  return 'unknown error'
}
