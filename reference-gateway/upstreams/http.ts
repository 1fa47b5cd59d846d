/**
 * Helpers the family modules share: bounded body reads, JSON results, media downloads with an SSRF
 * guard, base64 file decoding.
 *
 * @module
 */
import { Body } from 'tollgate'
import { type HostResolver, safeFetch, takeBufferedBody } from 'tollgate/node'
import type { UpstreamFailed, UpstreamOk, UpstreamResult } from './upstream.js'

/** Largest JSON answer read from an upstream: 32 MiB. */
export const maxJsonBytes = 32 * 1024 * 1024
/** Largest media file downloaded (re-hosted results, transcription inputs): 64 MiB. */
export const maxMediaBytes = 64 * 1024 * 1024

/** A failure result. */
export function failed(reason: string, retryable = false): UpstreamFailed {
  return { status: 'failed', reason, retryable }
}

/** A 200 JSON answer (an object's answer carries its text and value: {@link UpstreamOk.json}). */
export function jsonResult(value: unknown): UpstreamResult {
  const text = JSON.stringify(value)
  const response = new Response(text, {
    status: 200,
    headers: { 'content-type': 'application/json; charset=utf-8' },
  })
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? { status: 'ok', response, json: { text, value: value as Record<string, unknown> } }
    : { status: 'ok', response }
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
  return (await Body.readCappedStream(response.body, max)) as Uint8Array<ArrayBuffer> | undefined
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

/** Options of {@link fetchMedia}. */
export type FetchMediaOptions = {
  signal?: AbortSignal | undefined
  /** Largest download. Default {@link maxMediaBytes}. */
  maxBytes?: number | undefined
  /** Timeout of the download, redirects included. Default 60 000 ms. */
  timeoutMs?: number | undefined
  /**
   * Allow loopback/private hosts (the stub upstreams in tests). Default `false`. Security: with
   * `true` a buyer's URL can reach anything the gateway can.
   */
  allowInternalHosts?: boolean | undefined
  /** Resolver of host names (tests). Default `node:dns`. */
  resolveHost?: HostResolver | undefined
}

/** Downloaded media. */
export type Media = { bytes: Uint8Array<ArrayBuffer>; contentType: string }

/** The one reason of every download that did not answer 2xx (see {@link fetchMedia}). */
export const mediaUnavailable = 'media URL could not be downloaded'

/**
 * Downloads a media file from an http(s) URL through the SSRF-safe {@link safeFetch}: no
 * credentials sent, every resolved address and every redirect hop judged (internal ones refused
 * unless allowed), the connection pinned to the judged address, size and time bounded. Every
 * failure but a bad URL and an oversized file has ONE reason, {@link mediaUnavailable}, not
 * retried: a buyer whose call is refunded learns nothing about what the gateway can reach.
 */
export async function fetchMedia(
  url: string,
  options: FetchMediaOptions = {},
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
  const result = await safeFetch(parsed, {
    allowPrivateNetwork: options.allowInternalHosts === true,
    resolve: options.resolveHost,
    signal: options.signal,
    timeoutMs: options.timeoutMs ?? 60_000,
    maxBodyBytes: options.maxBytes ?? maxMediaBytes,
  })
  if (result.status === 'failed') {
    return failed(result.code === 'too_large' ? 'media file is too large' : mediaUnavailable)
  }
  const { response } = result
  if (response.status < 200 || response.status > 299) return failed(mediaUnavailable)
  const contentType = response.headers['content-type'] ?? 'application/octet-stream'
  return { status: 'ok', media: { bytes: response.body, contentType } }
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
