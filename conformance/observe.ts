/**
 * What the suite sees of a seller: one probe recorded as redacted evidence, and the 402 read in
 * both dialects with the library's own decoders (leniently for x402, so that each rule is judged by
 * its own check).
 *
 * @module
 */

import { Mpp, Session, X402, X402V2 } from 'tollgate'
import { z } from 'zod'
import { type ProbeOptions, type ProbeResponse, probe } from './probe.js'
import type { Exchange } from './report.js'

/** Headers whose values are payment credentials or receipts: shortened in evidence. */
const secretHeaders =
  /^(x-payment|payment-signature|authorization|x-payment-response|payment-response|payment-receipt|cookie|set-cookie)$/i
const maxEvidenceBody = 2048

/** Shortens a credential to its first characters and length: enough to tell two apart, no more. */
export function redactValue(value: string): string {
  return value.length <= 16
    ? '[redacted]'
    : `${value.slice(0, 10)}…[redacted, ${value.length} chars]`
}

function redactHeaders(headers: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    out[name.toLowerCase()] = secretHeaders.test(name) ? redactValue(value) : value
  }
  return out
}

function clip(body: string): string {
  return body.length <= maxEvidenceBody
    ? body
    : `${body.slice(0, maxEvidenceBody)}…[${body.length - maxEvidenceBody} more chars]`
}

/** A probe and its redacted record. */
export type Observation = { exchange: Exchange; response?: ProbeResponse; error?: unknown }

/** Sends a request through {@link probe} and records it as redacted evidence (never throws). */
export async function observe(url: string, options: ProbeOptions): Promise<Observation> {
  const started = performance.now()
  const request = {
    method: options.method ?? 'GET',
    url,
    headers: redactHeaders(options.headers ?? {}),
    ...(options.body === undefined ? {} : { body: clip(options.body) }),
  }
  try {
    const response = await probe(url, options)
    return {
      response,
      exchange: {
        request,
        response: {
          status: response.status,
          headers: redactHeaders(response.headers),
          body: clip(response.body),
        },
        durationMs: Math.round(performance.now() - started),
      },
    }
  } catch (error) {
    return {
      error,
      exchange: {
        request,
        error: (error as Error).message ?? String(error),
        durationMs: Math.round(performance.now() - started),
      },
    }
  }
}

/** An x402 requirement read leniently: amount and timeout are judged by their own checks. */
export const lenientRequirementSchema = X402.paymentRequirementSchema.extend({
  maxAmountRequired: z.string().max(80),
  maxTimeoutSeconds: z.unknown().optional(),
})

/** An x402 requirement read leniently. */
export type LenientRequirement = z.infer<typeof lenientRequirementSchema>

const lenientEnvelopeSchema = X402.paymentRequiredSchema.extend({
  accepts: z.array(lenientRequirementSchema).min(1).max(32),
})

/** The x402 side of a 402. */
export type X402Reading =
  | { status: 'absent' }
  | { status: 'invalid'; reason: string }
  | { status: 'ok'; accepts: LenientRequirement[] }

/** The MPP side of a 402 (only `Payment` challenges of the `sui` method count). */
export type MppReading =
  | { status: 'absent' }
  | { status: 'invalid'; reason: string }
  | { status: 'ok'; challenges: Mpp.Challenge[] }

function issues(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
    .join('; ')
}

/** Reads the x402 envelope of a response body, if the body tries to be one. */
export function readX402(response: ProbeResponse): X402Reading {
  let json: unknown
  try {
    json = JSON.parse(response.body)
  } catch {
    return { status: 'absent' }
  }
  if (json === null || typeof json !== 'object') return { status: 'absent' }
  if (!('x402Version' in json) && !('accepts' in json)) return { status: 'absent' }
  const parsed = lenientEnvelopeSchema.safeParse(json)
  if (!parsed.success) return { status: 'invalid', reason: issues(parsed.error) }
  return { status: 'ok', accepts: parsed.data.accepts }
}

/** The x402 version 2 side of a 402 (the `PAYMENT-REQUIRED` header). */
export type X402V2Reading =
  | { status: 'absent' }
  | { status: 'invalid'; reason: string }
  | { status: 'ok'; required: X402V2.PaymentRequiredV2 }

/** Reads the x402 version 2 `PAYMENT-REQUIRED` header, if the 402 carries one. */
export function readX402V2(response: ProbeResponse): X402V2Reading {
  const header = response.headers['payment-required']
  if (header === undefined) return { status: 'absent' }
  try {
    return { status: 'ok', required: X402V2.decodePaymentRequiredV2(header) }
  } catch (error) {
    return { status: 'invalid', reason: (error as Error).message }
  }
}

/** Reads the MPP `Payment` challenges of `WWW-Authenticate`, with the `sui` charge request checked. */
export function readMpp(response: ProbeResponse): MppReading {
  const header = response.headers['www-authenticate']
  if (header === undefined || !/(^|[\s,])payment(\s|$)/i.test(header)) return { status: 'absent' }
  let challenges: Mpp.Challenge[]
  try {
    challenges = Mpp.parseChallenges(header)
  } catch (error) {
    return { status: 'invalid', reason: (error as Error).message }
  }
  // A session challenge is judged by the session checks (`session.challenge`), not as a charge.
  const sui = challenges.filter((c) => c.method === 'sui' && c.intent !== 'session')
  if (sui.length === 0) {
    return challenges.some((c) => c.method === 'sui')
      ? { status: 'absent' }
      : { status: 'invalid', reason: 'no challenge of the sui method' }
  }
  for (const c of sui) {
    const request = Mpp.suiChargeRequestSchema.safeParse(c.request)
    if (!request.success) return { status: 'invalid', reason: `request: ${issues(request.error)}` }
    if (c.intent !== 'charge')
      return { status: 'invalid', reason: `intent ${c.intent} is not charge` }
  }
  return { status: 'ok', challenges: sui }
}

/** The charge request of a checked MPP challenge. */
export function chargeOf(challenge: Mpp.Challenge): z.infer<typeof Mpp.suiChargeRequestSchema> {
  return Mpp.suiChargeRequestSchema.parse(challenge.request)
}

/** The decoded `request` of a session challenge. */
export type SessionRequest = z.infer<typeof Session.sessionRequestSchema>

/** The MPP session side of a 402: a `Payment` challenge with method `sui` and `intent="session"`. */
export type SessionReading =
  | { status: 'absent' }
  | { status: 'invalid'; reason: string }
  | { status: 'ok'; challenge: Mpp.Challenge; request: SessionRequest }

/** Reads the session challenge of `WWW-Authenticate` (the first `sui` one), its `request` checked. */
export function readSession(response: ProbeResponse): SessionReading {
  const header = response.headers['www-authenticate']
  if (header === undefined || !/intent\s*=\s*"?session/i.test(header)) return { status: 'absent' }
  let challenges: Mpp.Challenge[]
  try {
    challenges = Mpp.parseChallenges(header)
  } catch (error) {
    return { status: 'invalid', reason: (error as Error).message }
  }
  const challenge = challenges.find((c) => c.method === 'sui' && c.intent === 'session')
  if (challenge === undefined) {
    return { status: 'invalid', reason: 'no session challenge of the sui method parses' }
  }
  const request = Session.sessionRequestSchema.safeParse(challenge.request)
  if (!request.success) return { status: 'invalid', reason: `request: ${issues(request.error)}` }
  return { status: 'ok', challenge, request: request.data }
}
