/**
 * Request bodies of paid routes: read once with a size cap, parsed as JSON, and validated BEFORE any
 * payment is taken, so a request that could never succeed is a 400 (or 413) and costs nothing.
 *
 * Validators are Standard Schema v1 objects (zod 4, valibot, arktype … all implement it) or plain
 * functions.
 *
 * @module
 */

import { type EngineRequest, isRequestView } from './engine/requestView.js'
import { cappedBytes } from './internal/cappedBytes.js'

/** Request bodies are read as UTF-8 (a malformed sequence becomes U+FFFD, a BOM is kept). */
const utf8 = new TextDecoder('utf-8', { ignoreBOM: true })

/** A Standard Schema v1 validator (the subset used here). */
export type StandardSchema = {
  readonly '~standard': {
    readonly version: 1
    readonly validate: (value: unknown) => StandardResult | Promise<StandardResult>
  }
}
/** What a Standard Schema's `validate` returns: the value, or its issues. */
export type StandardResult =
  | { readonly value: unknown; readonly issues?: undefined }
  | {
      readonly issues: ReadonlyArray<{
        readonly message: string
        readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined
      }>
    }

/** The result of validating a body. */
export type BodyCheck =
  | { status: 'valid'; body: unknown }
  | { status: 'invalid'; field: string | null; message: string }

/** A body validator: a Standard Schema, or a function. */
export type BodyValidator = StandardSchema | ((body: unknown) => BodyCheck | Promise<BodyCheck>)

/** The result of {@link readBody}. */
export type BodyRead =
  | { status: 'ok'; body: unknown; text: string }
  | { status: 'too_large'; limit: number }
  | { status: 'invalid'; field: string | null; message: string }

/** Default body size limit: 1 MiB. */
export const defaultMaxBodyBytes = 1024 * 1024

/**
 * Reads a request's body (from a clone, so the original stays readable), enforcing `maxBytes` on the
 * declared length and on the bytes actually read, parses it as JSON and validates it.
 *
 * @param request - the incoming request (a `Request`'s body is not consumed: a clone is read), or
 *   an adapter's view with the body bytes it read.
 * @param validator - schema or function; without one the body is not read at all (only its declared
 *   length is checked), so unvalidated routes pay nothing for bodies on the 402 path.
 * @param maxBytes - limit in bytes; default {@link defaultMaxBodyBytes}.
 */
export async function readBody(
  request: EngineRequest,
  validator: BodyValidator | undefined,
  maxBytes = defaultMaxBodyBytes,
): Promise<BodyRead> {
  const declared = Number(request.headers.get('content-length') ?? '0')
  if (declared > maxBytes) return { status: 'too_large', limit: maxBytes }
  // Without a validator nothing needs the body before payment: leave it to the handler.
  if (validator === undefined) return { status: 'ok', body: undefined, text: '' }
  let text = ''
  if (isRequestView(request)) {
    const bytes = request.bodyBytes
    if (bytes !== undefined && bytes.byteLength > maxBytes)
      return { status: 'too_large', limit: maxBytes }
    text = bytes === undefined ? '' : utf8.decode(bytes)
  } else if (request.body !== null) {
    const read = await readCappedStream(
      request.clone().body as ReadableStream<Uint8Array>,
      maxBytes,
    )
    if (read === undefined) return { status: 'too_large', limit: maxBytes }
    text = utf8.decode(read)
  }
  let body: unknown
  if (text.trim() === '') {
    body = undefined
  } else {
    try {
      body = JSON.parse(text)
    } catch {
      return { status: 'invalid', field: null, message: 'The request body is not valid JSON.' }
    }
  }
  if (body === undefined) {
    return { status: 'invalid', field: null, message: 'A JSON request body is required.' }
  }
  const check = await validate(validator, body)
  return check.status === 'valid' ? { status: 'ok', body: check.body, text } : check
}

/**
 * Reads a Web byte stream whole, up to `maxBytes`: the one capped reader of request and answer
 * bodies (the core's paid-route bodies, the reference gateway's upstream answers). When the stream
 * carries more, reading stops, the stream is cancelled (not awaited: cancelling one branch of a
 * cloned, teed body settles only when the other branch is cancelled too) and the answer is
 * `undefined`, so at most `maxBytes` plus one chunk is ever held.
 *
 * @param stream - the body to read; it is locked and consumed.
 * @param maxBytes - the largest body accepted, in bytes. Security: the bound on memory an untrusted
 *   peer can make this read hold.
 * @returns the bytes (a single chunk as it came, several joined), or `undefined` when over the cap.
 *
 * @example
 * ```ts
 * const bytes = await readCappedStream(response.body, 1024 * 1024)
 * if (bytes === undefined) return new Response('too large', { status: 413 })
 * ```
 */
export async function readCappedStream(
  stream: ReadableStream<Uint8Array>,
  maxBytes: number,
): Promise<Uint8Array | undefined> {
  const reader = stream.getReader()
  const kept = cappedBytes(maxBytes)
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return kept.bytes()
    if (!kept.push(value)) {
      void reader.cancel().catch(() => {})
      return undefined
    }
  }
}

/** Runs a validator and reduces its answer to a {@link BodyCheck} naming the first bad field. */
export async function validate(validator: BodyValidator, body: unknown): Promise<BodyCheck> {
  if (typeof validator === 'function') return validator(body)
  const result = await validator['~standard'].validate(body)
  if (result.issues === undefined) return { status: 'valid', body: result.value }
  const issue = result.issues[0]
  const path = (issue?.path ?? []).map((p) => (typeof p === 'object' ? p.key : p))
  return {
    status: 'invalid',
    field: path.length === 0 ? null : path.map(String).join('.'),
    message: (issue?.message ?? 'Invalid request body.').slice(0, 300),
  }
}
