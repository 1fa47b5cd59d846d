/**
 * The request side of the paying fetch: a request made replayable (its body read once, JSON text
 * typed `application/json` unless the caller chose a type), bounded reads of the answers it
 * inspects, and the error a 402 answer to the paid request becomes.
 *
 * @module
 * @internal
 */

import { z } from 'zod'
import { readCappedStream } from '../body.js'
import { PaymentError } from '../errors.js'
import type { Dialect } from '../negotiate.js'
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

/** A 402 body as far as its reason is read: any object. */
const reasonSchema = z.looseObject({})

/** The seller's stated reason in a 402 body (`code`, and `detail`/`error`/`title`), truncated. */
export function reasonOf(bodyText: string): { code?: string; reason?: string } {
  try {
    const parsed = reasonSchema.safeParse(JSON.parse(bodyText))
    if (!parsed.success) return {}
    const body = parsed.data
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

/**
 * The error for a 402 answer to the paid request: `PAYMENT_REFUNDED` when the seller says the paid
 * call failed and the payment is (being) refunded, else `PAYMENT_REJECTED` with the seller's reason.
 * `failed` is the status of the last failed answer that made this client re-send the payment.
 */
export function refusalOf(
  bodyText: string,
  paid: { digest: string; dialect: Dialect; failed: number | undefined },
): PaymentError {
  const { digest, dialect, failed } = paid
  const why = reasonOf(bodyText)
  const refund = why.code === 'replay' ? refundReportOf(bodyText) : undefined
  if (refund === undefined) {
    return new PaymentError(
      'PAYMENT_REJECTED',
      `The seller refused the payment${why.code ? ` (${why.code})` : ''}${why.reason ? `: ${why.reason}` : '.'}`,
      { details: { ...why, digest, dialect } },
    )
  }
  // This client sent the payment once, got a failure (re-sent the same payment), and the seller now
  // says the call failed and the payment is refunded: report that, not a replay.
  const call =
    failed === undefined ? 'The paid call failed' : `The paid call failed (HTTP ${failed})`
  const refundDigest = refund.status === 'refunded' ? refund.refundDigest : undefined
  return new PaymentError(
    'PAYMENT_REFUNDED',
    refund.status === 'refunded'
      ? `${call}; the seller refunded the payment${refundDigest === undefined ? '' : ` (refund transaction ${refundDigest})`}.`
      : `${call}; the seller owes the payment back and refunds it automatically.`,
    {
      details: {
        digest,
        dialect,
        refund: refund.status,
        ...(refundDigest === undefined ? {} : { refundDigest }),
        ...(failed === undefined ? {} : { status: failed }),
      },
    },
  )
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
