/**
 * Request and answer helpers the newer family modules share: query-string GETs, JSON POSTs with a
 * provider's own auth header, binary answers stored as `{ url }`, and media inputs given as a URL
 * or base64.
 *
 * @module
 */
import { isAudioUrl } from '../catalog/shapes.js'
import {
  decodeBase64File,
  failed,
  fetchMedia,
  jsonResult,
  type Media,
  maxJsonBytes,
  maxMediaBytes,
  readLimited,
} from './http.js'
import type { OperationContext, UpstreamFailed, UpstreamResult } from './upstream.js'

/** A query value: absent values are left out, arrays are comma-joined, booleans spelled out. */
export type QueryValue = string | number | boolean | readonly string[] | undefined

/** A query string from named values (absent values left out), without the leading `?`. */
export function queryString(values: Readonly<Record<string, QueryValue>>): string {
  const params = new URLSearchParams()
  for (const [name, value] of Object.entries(values)) {
    if (value === undefined) continue
    params.set(name, Array.isArray(value) ? value.join(',') : String(value))
  }
  return params.toString()
}

/**
 * A `GET <baseUrl><path>?<query>`. A key the provider wants in the query goes in `query` like any
 * other value: the request URL is never logged nor put in an error.
 */
export function getWithQuery(
  ctx: OperationContext,
  path: string,
  query: Readonly<Record<string, QueryValue>>,
  headers: Readonly<Record<string, string>> = {},
): Request {
  const search = queryString(query)
  return new Request(`${ctx.baseUrl}${path}${search === '' ? '' : `?${search}`}`, {
    method: 'GET',
    headers: { accept: 'application/json', ...headers },
  })
}

/** A JSON `POST <baseUrl><path>` with the given (auth) headers. */
export function postJsonWith(
  ctx: OperationContext,
  path: string,
  body: unknown,
  headers: Readonly<Record<string, string>>,
): Request {
  return new Request(`${ctx.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
    body: JSON.stringify(body),
  })
}

/** The body's fields without `undefined` values (for JSON bodies built from optional fields). */
export function defined(values: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined))
}

/**
 * A binary answer (audio, image, PDF) stored in the blob store and answered as
 * `{ url, content_type, ...extra }`. An empty or oversized answer is a failure (refunded).
 */
export async function blobAnswer(
  answer: Response,
  ctx: OperationContext,
  fallbackType: string,
  extra: Readonly<Record<string, unknown>> = {},
): Promise<UpstreamResult> {
  const contentType = answer.headers.get('content-type') ?? fallbackType
  if (/^application\/json\b/i.test(contentType)) {
    await answer.body?.cancel().catch(() => {})
    return failed('upstream answered JSON where a file was expected')
  }
  const bytes = await readLimited(answer, maxMediaBytes)
  if (!bytes) return failed('upstream file is too large')
  if (bytes.byteLength === 0) return failed('upstream answered an empty file')
  const stored = await ctx.blobs.put(bytes, contentType)
  return jsonResult({ url: stored.url, content_type: contentType, ...extra })
}

/**
 * A media input given as an http(s) URL (downloaded without credentials, internal hosts refused) or
 * base64 (raw or a `data:` URL), bounded to `maxBytes`.
 */
export async function mediaInput(
  value: string,
  ctx: OperationContext,
  maxBytes: number,
): Promise<Media | UpstreamFailed> {
  if (isAudioUrl(value)) {
    const download = await fetchMedia(value, {
      signal: ctx.signal,
      maxBytes,
      allowInternalHosts: ctx.allowInternalHosts,
      resolveHost: ctx.resolveHost,
    })
    return download.status === 'ok' ? download.media : download
  }
  const media = decodeBase64File(value)
  if (media.bytes.byteLength === 0) return failed('the file is empty')
  if (media.bytes.byteLength > maxBytes) return failed('the file is too large')
  return media
}

/** A JSON array answer, answered as the object `{ [key]: [...] }` (answers are JSON objects). */
export async function listAnswer(answer: Response, key: string): Promise<UpstreamResult> {
  const bytes = await readLimited(answer, maxJsonBytes)
  if (!bytes) return failed('upstream answer is too large')
  let value: unknown
  try {
    value = JSON.parse(new TextDecoder().decode(bytes))
  } catch {
    return failed('upstream answered something other than JSON')
  }
  if (!Array.isArray(value)) return failed('upstream answered JSON that is not a list')
  return jsonResult({ [key]: value })
}
