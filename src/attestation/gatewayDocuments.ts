/**
 * The public documents a gateway serves about a confidential answer (`/v1/aci/receipts/{id}`,
 * `/v1/aci/sessions/{id}`, `/v1/aci/anchor/{id}`, its receipt JWKS and `/healthz`), as
 * size-limited zod schemas of untrusted input, and a bounded JSON fetch that reads them.
 *
 * @module
 */
import { z } from 'zod'

const Hash = z.string().regex(/^sha256:[0-9a-f]{64}$/)
const Id = z.string().min(1).max(160)

/** A stored receipt as `GET /v1/aci/receipts/{id}` answers it (the enclave receipt unparsed). */
export const StoredReceiptDocumentSchema = z.looseObject({
  id: Id,
  model: z.string().max(256),
  session_id: Id,
  relayed: z.object({ request_hash: Hash, response_hash: Hash }),
  /** Checked later by `AciReceiptSchema`. */
  receipt: z.unknown(),
  gateway_receipt: z
    .string()
    .max(16 * 1024)
    .nullable(),
})
/** A stored receipt document. */
export type StoredReceiptDocument = z.infer<typeof StoredReceiptDocumentSchema>

/** The trust policy a gateway publishes with a session (what it verified the report against). */
export const PublishedTrustPolicySchema = z.looseObject({
  tee_type: z.string().max(64),
  /** Checked by `quoteVerifierOfPolicy` (a TDX verifier policy: root CA, collateral). */
  quote_verifier: z.unknown().optional(),
  allowed_measurements: z.array(z.string().max(256)).max(256).optional(),
})
/** The trust policy a gateway publishes with a session. */
export type PublishedTrustPolicy = z.infer<typeof PublishedTrustPolicySchema>

/** An attested session as `GET /v1/aci/sessions/{id}` answers it (the report unparsed). */
export const StoredSessionDocumentSchema = z.looseObject({
  id: Id,
  nonce: z.string().max(256),
  attested_at: z.iso.datetime(),
  policy: PublishedTrustPolicySchema,
  /** Checked later by `verifyReport`. */
  report: z.unknown(),
})
/** A stored session document. */
export type StoredSessionDocument = z.infer<typeof StoredSessionDocumentSchema>

/** A receipt's anchor as `GET /v1/aci/anchor/{id}` answers it. */
export const AnchorDocumentSchema = z.looseObject({
  state: z.enum(['pending', 'signed', 'anchored']),
  digest: z.string().max(64).nullable(),
})

/** The gateway's receipt keys (`/.well-known/tollgate-receipt-keys.json`). */
export const ReceiptKeysDocumentSchema = z.object({
  keys: z
    .array(
      z.looseObject({
        kty: z.string().max(16),
        kid: z.string().max(128).optional(),
        crv: z.string().max(16).optional(),
        x: z.string().max(128).optional(),
      }),
    )
    .max(32),
})

/** What the verifier reads of `/healthz`: the ledger the gateway names. */
export const HealthDocumentSchema = z.looseObject({
  ledger: z.looseObject({ url: z.string().max(2048).optional() }).optional(),
})

const Amount = z.string().regex(/^\d{1,30}$/)

/** The claims of a gateway receipt (the JWS payload), as the verifier checks them. */
export const GatewayReceiptClaimsSchema = z.looseObject({
  sub: Id,
  enclave_receipt: z.looseObject({ id: Id, hash: Hash }),
  request_hash: Hash,
  response_hash: Hash,
  attestation: z.looseObject({ session_id: Id, workload_id: z.string().max(80) }),
  payment: z.union([
    z.looseObject({
      kind: z.literal('credit'),
      key_id: z.string().max(128),
      entry_id: z.string().max(128),
      amount: Amount,
    }),
    z.looseObject({ kind: z.literal('payment'), digest: z.string().max(64), amount: Amount }),
    z.looseObject({ kind: z.literal('none') }),
  ]),
})
/** The checked claims of a gateway receipt. */
export type GatewayReceiptClaimsDocument = z.infer<typeof GatewayReceiptClaimsSchema>

/** Largest document read, bytes (a report with its quote is the largest). Default 512 KiB. */
export const maxDocumentBytes = 512 * 1024

/**
 * GETs `url` and parses its JSON with `schema`; `undefined` for a non-2xx status, a body over
 * `maxBytes`, a body that is not JSON or does not match. Never throws.
 */
export async function fetchDocument<T>(
  doFetch: typeof globalThis.fetch,
  url: string,
  schema: z.ZodType<T>,
  maxBytes = maxDocumentBytes,
): Promise<T | undefined> {
  try {
    const response = await doFetch(url, { headers: { accept: 'application/json' } })
    if (!response.ok) {
      await response.body?.cancel()
      return undefined
    }
    const declared = Number(response.headers.get('content-length') ?? '0')
    if (declared > maxBytes) {
      await response.body?.cancel()
      return undefined
    }
    const text = await readBounded(response, maxBytes)
    if (text === undefined) return undefined
    const parsed = schema.safeParse(JSON.parse(text))
    return parsed.success ? parsed.data : undefined
  } catch {
    return undefined
  }
}

/** The body as text, or `undefined` once it passes `maxBytes` (the rest is not read). */
async function readBounded(response: Response, maxBytes: number): Promise<string | undefined> {
  if (response.body === null) return ''
  const reader = response.body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > maxBytes) {
      await reader.cancel()
      return undefined
    }
    chunks.push(value)
  }
  const bytes = new Uint8Array(total)
  let at = 0
  for (const chunk of chunks) {
    bytes.set(chunk, at)
    at += chunk.byteLength
  }
  return new TextDecoder().decode(bytes)
}
