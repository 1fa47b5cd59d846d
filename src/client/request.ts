/**
 * The request side of the paying fetch: a request made replayable (its body read once, JSON text
 * typed `application/json` unless the caller chose a type), and bounded reads of the answers it
 * inspects.
 *
 * @module
 * @internal
 */
import { readCappedStream } from '../body.js'
import { maxChallengeBodyBytes } from './select.js'

/** Whether `text` is a JSON object or array. */
export function isJsonText(text: string): boolean {
  const first = text.trimStart()[0]
  if (first !== '{' && first !== '[') return false
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}

/** The request, made replayable: its body read once, so each attempt is a fresh `Request`. */
export async function template(input: string | URL | Request, init: RequestInit | undefined) {
  const callerHeaders = new Headers(
    init?.headers ?? (input instanceof Request ? input.headers : undefined),
  )
  const original = new Request(input, init)
  const body = original.body === null ? undefined : new Uint8Array(await original.arrayBuffer())
  const headers = new Headers(original.headers)
  if (
    !callerHeaders.has('content-type') &&
    typeof init?.body === 'string' &&
    isJsonText(init.body)
  ) {
    headers.set('content-type', 'application/json')
  }
  const make = (extra: Record<string, string> = {}) => {
    const h = new Headers(headers)
    for (const [name, value] of Object.entries(extra)) {
      const existing = name === 'authorization' ? h.get('authorization') : null
      h.set(name, existing ? `${existing}, ${value}` : value)
    }
    return new Request(original.url, {
      method: original.method,
      headers: h,
      ...(body === undefined ? {} : { body }),
      signal: original.signal,
      redirect: original.redirect,
    })
  }
  return { url: original.url, method: original.method, signal: original.signal, make }
}

/** The seller's stated reason in a 402 body (`code`, and `detail`/`error`/`title`), truncated. */
export function reasonOf(bodyText: string): { code?: string; reason?: string } {
  try {
    const body = JSON.parse(bodyText) as Record<string, unknown>
    const code = typeof body.code === 'string' ? body.code.slice(0, 64) : undefined
    const text = [body.detail, body.error, body.title].find((v) => typeof v === 'string')
    return {
      ...(code === undefined ? {} : { code }),
      ...(typeof text === 'string' ? { reason: text.slice(0, 300) } : {}),
    }
  } catch {
    return {}
  }
}

/** The refund a seller reports on a `replay` 402 of a payment whose paid call failed. */
export type RefundReport = { status: 'owed' } | { status: 'refunded'; refundDigest?: string }

/** The `refund` member of a 402 body (see {@link RefundReport}), if it has a valid one. */
export function refundReportOf(bodyText: string): RefundReport | undefined {
  try {
    const refund = (JSON.parse(bodyText) as { refund?: unknown }).refund
    if (typeof refund !== 'object' || refund === null) return undefined
    const { status, refundDigest } = refund as { status?: unknown; refundDigest?: unknown }
    if (status === 'owed') return { status }
    if (status !== 'refunded') return undefined
    return typeof refundDigest === 'string' && /^[1-9A-HJ-NP-Za-km-z]{32,44}$/.test(refundDigest)
      ? { status, refundDigest }
      : { status }
  } catch {
    return undefined
  }
}

/** Reads a body of at most {@link maxChallengeBodyBytes}; a larger one reads as empty. */
export async function readBounded(response: Response): Promise<string> {
  const length = Number(response.headers.get('content-length') ?? '0')
  if (length > maxChallengeBodyBytes) {
    await response.body?.cancel()
    return ''
  }
  if (response.body === null) return ''
  // Capped as it is read: a body without a length (chunked) is not read past the cap either.
  const bytes = await readCappedStream(response.body, maxChallengeBodyBytes)
  return bytes === undefined ? '' : new TextDecoder().decode(bytes)
}
