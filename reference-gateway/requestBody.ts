/**
 * The one capped reader of the gateway's own request bodies (the marketplace, reviews, the activity
 * report, escrowed jobs): the declared length is checked first, then the body is read through the
 * core's `Body.readCappedStream`, which stops at the cap — so a body that never ends costs at most
 * the cap plus one chunk of memory, and the answer is a 413 that closes the connection (the rest
 * of the body is never read). Paid routes have their own capped reader in the paywall.
 *
 * @module
 */
import { Body, PaymentError } from 'tollgate'
import type { z } from 'zod'
import { problem, schemaProblem } from './problem.js'

/** The result of {@link readJsonBody}. */
export type JsonBodyRead =
  | { status: 'ok'; json: unknown }
  | { status: 'too_large'; limit: number }
  | { status: 'not_json' }

/** Request bodies are read as UTF-8 (a malformed sequence becomes U+FFFD). */
const utf8 = new TextDecoder('utf-8')

/**
 * Reads a request's body as JSON, at most `maxBytes` of it.
 *
 * @param request - the incoming request; its body is consumed.
 * @param maxBytes - the largest body accepted, in bytes. Security: the bound on the memory one
 *   request can make the gateway hold.
 * @returns `ok` with the parsed value, `too_large` (answer {@link bodyTooLarge}), or `not_json`
 *   (an empty body included).
 * @example
 * ```ts
 * const read = await readJsonBody(c.req.raw, 64 * 1024)
 * if (read.status === 'too_large') return bodyTooLarge(read.limit)
 * ```
 */
export async function readJsonBody(request: Request, maxBytes: number): Promise<JsonBodyRead> {
  const declared = Number(request.headers.get('content-length') ?? '0')
  if (!Number.isFinite(declared) || declared > maxBytes) {
    return { status: 'too_large', limit: maxBytes }
  }
  if (request.body === null) return { status: 'not_json' }
  const bytes = await Body.readCappedStream(request.body, maxBytes)
  if (bytes === undefined) return { status: 'too_large', limit: maxBytes }
  try {
    return { status: 'ok', json: JSON.parse(utf8.decode(bytes)) }
  } catch {
    return { status: 'not_json' }
  }
}

/**
 * The 413 answer to a body over `limit` (an RFC 9457 problem, code `request_body_too_large`). It
 * closes the connection: the rest of the body is never read.
 *
 * @example
 * ```ts
 * return bodyTooLarge(64 * 1024)
 * ```
 */
export function bodyTooLarge(limit: number): Response {
  const error = new PaymentError(
    'request_body_too_large',
    `The request body is over ${limit} bytes.`,
    { details: { limit } },
  )
  return Response.json(error.toProblem(), {
    status: 413,
    headers: { 'content-type': 'application/problem+json', connection: 'close' },
  })
}

/**
 * Reads a request's JSON body (at most `maxBytes`) and checks it with `schema`: the value, or the
 * answer to send — 413 over the cap, 400 `invalid_request_body` when it is not JSON or fails the
 * schema (naming the first issue).
 */
export async function readBodyWith<T>(
  request: Request,
  schema: z.ZodType<T>,
  maxBytes: number,
): Promise<{ ok: true; value: T } | { ok: false; response: Response }> {
  const read = await readJsonBody(request, maxBytes)
  if (read.status === 'too_large') return { ok: false, response: bodyTooLarge(read.limit) }
  if (read.status === 'not_json') {
    return { ok: false, response: problem('invalid_request_body', 'The body is not JSON.') }
  }
  const parsed = schema.safeParse(read.json)
  if (!parsed.success) return { ok: false, response: schemaProblem(parsed.error, '') }
  return { ok: true, value: parsed.data }
}
