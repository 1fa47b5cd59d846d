/**
 * ACI receipts ("aci/1"): the wire schema, the exact bytes that are signed, and
 * {@link verifyReceipt}, which checks a receipt's signature with a key from an ATTESTED keyset
 * (never a key the receipt names for itself) and its hashes against the bytes a caller relayed.
 *
 * Two signature forms are accepted: `signature: { algo, key_id, value }` over
 * JCS(receipt without `signature.value`), and the newer flat `key_id` + hex `signature` over
 * JCS(receipt without `signature`). Ed25519 signs the JCS bytes directly; the legacy
 * `ecdsa-secp256k1` algorithm signs their sha256 (65 bytes r‖s‖v, the key hex SEC1).
 *
 * @module
 */
import { secp256k1 } from '@noble/curves/secp256k1.js'
import { z } from 'zod'
import { hexToBytes, jcsBytes, sha256Tag } from './digest.js'
import type { ReceiptSigningKey } from './report.js'

const Hash = z.string().regex(/^sha256:[0-9a-f]{64}$/)
const HexSignature = z
  .string()
  .max(260)
  .regex(/^(?:[0-9a-f]{2})+$/)

/** One event of a receipt's event log. */
export const AciReceiptEventSchema = z.looseObject({
  seq: z.number().int().nonnegative(),
  type: z.enum(['request.received', 'request.forwarded', 'upstream.verified', 'response.returned']),
  body_hash: Hash.optional(),
  cleartext_hash: Hash.optional(),
  wire_hash: Hash.optional(),
})

const ReceiptFields = {
  api_version: z.literal('aci/1'),
  receipt_id: z.string().min(1).max(128),
  chat_id: z.string().max(128),
  model: z.string().max(256),
  workload_id: z.string().max(80),
  workload_keyset_digest: z.string().max(80),
  endpoint: z.string().max(256),
  method: z.string().max(16),
  served_at: z.iso.datetime(),
  event_log: z.array(AciReceiptEventSchema).min(1).max(64),
}

/** An ACI receipt in either signature form (size-limited schema of untrusted input). */
export const AciReceiptSchema = z.union([
  z.looseObject({
    ...ReceiptFields,
    signature: z.object({
      algo: z.enum(['ed25519', 'ecdsa-secp256k1']),
      key_id: z.string().min(1).max(128),
      value: HexSignature,
    }),
  }),
  z.looseObject({ ...ReceiptFields, key_id: z.string().min(1).max(128), signature: HexSignature }),
])
/** An ACI receipt. */
export type AciReceipt = z.infer<typeof AciReceiptSchema>

/** Stable codes of a receipt that did not verify. */
export type ReceiptFailureCode =
  | 'receipt_malformed'
  | 'workload_mismatch'
  | 'key_not_attested'
  | 'signature_invalid'
  | 'request_hash_mismatch'
  | 'response_hash_mismatch'
  | 'model_mismatch'

/** Result of {@link verifyReceipt}. */
export type ReceiptVerification =
  | { status: 'verified'; receipt: AciReceipt; keyId: string }
  | { status: 'failed'; code: ReceiptFailureCode; message: string }

/** Options of {@link verifyReceipt}: what the receipt must match. */
export type VerifyReceiptOptions = {
  /** Receipt keys of a keyset whose attestation VERIFIED; the signing key must be one of them. */
  receiptKeys: readonly ReceiptSigningKey[]
  /** The attested workload id and keyset digest the receipt must name. */
  workloadId: string
  keysetDigest: string
  /** Exact request bytes sent to the workload; checked against `request.received` when given. */
  requestBytes?: Uint8Array | undefined
  /** Exact response bytes relayed (raw SSE, framing included, for a stream); checked when given. */
  responseBytes?: Uint8Array | undefined
  /** The model the caller asked for; the receipt must name exactly it when given. */
  model?: string | undefined
}

/**
 * The bytes a receipt's signature covers: JCS of the receipt without `signature.value` (nested
 * form) or without `signature` (flat form).
 */
export function receiptSigningInput(receipt: AciReceipt): Uint8Array {
  if (typeof receipt.signature === 'string') {
    const { signature: _, ...rest } = receipt
    return jcsBytes(rest)
  }
  const { value: _, ...signature } = receipt.signature
  return jcsBytes({ ...receipt, signature })
}

/**
 * Verifies a receipt: schema, workload and keyset named, signature by an attested receipt key,
 * then the request and response hashes and the model against what the caller knows.
 *
 * @param input - the receipt as received (untrusted JSON).
 * @example
 * ```ts
 * const result = await verifyReceipt(json, { ...attested, responseBytes })
 * if (result.status === 'failed') console.log(result.code)
 * ```
 */
export async function verifyReceipt(
  input: unknown,
  options: VerifyReceiptOptions,
): Promise<ReceiptVerification> {
  const fail = (code: ReceiptFailureCode, message: string): ReceiptVerification => ({
    status: 'failed',
    code,
    message,
  })
  const parsed = AciReceiptSchema.safeParse(input)
  if (!parsed.success) return fail('receipt_malformed', 'the receipt does not match aci/1')
  const receipt = parsed.data
  if (
    receipt.workload_id !== options.workloadId ||
    receipt.workload_keyset_digest !== options.keysetDigest
  ) {
    return fail('workload_mismatch', 'the receipt names another workload or keyset')
  }
  const flat = typeof receipt.signature === 'string'
  const keyId = flat ? String(receipt.key_id) : (receipt.signature as { key_id: string }).key_id
  const value = flat
    ? (receipt.signature as string)
    : (receipt.signature as { value: string }).value
  const key = options.receiptKeys.find((k) => k.key_id === keyId)
  if (!key) return fail('key_not_attested', `key ${keyId} is not in the attested keyset`)
  if (!flat && (receipt.signature as { algo: string }).algo !== key.algo) {
    return fail('signature_invalid', 'the signature algorithm is not the key’s')
  }
  if (!(await signatureValid(key, receiptSigningInput(receipt), value))) {
    return fail('signature_invalid', 'the signature does not verify')
  }
  const received = receipt.event_log.find((e) => e.type === 'request.received')
  if (options.requestBytes !== undefined) {
    const hash = received?.body_hash ?? received?.cleartext_hash
    if (hash !== sha256Tag(options.requestBytes)) {
      return fail('request_hash_mismatch', 'the request hash does not match the bytes sent')
    }
  }
  if (options.responseBytes !== undefined) {
    const returned = receipt.event_log.find((e) => e.type === 'response.returned')
    if (returned?.wire_hash !== sha256Tag(options.responseBytes)) {
      return fail('response_hash_mismatch', 'the response hash does not match the bytes relayed')
    }
  }
  if (options.model !== undefined && receipt.model !== options.model) {
    return fail('model_mismatch', `the receipt names model ${receipt.model}`)
  }
  return { status: 'verified', receipt, keyId }
}

async function signatureValid(
  key: ReceiptSigningKey,
  message: Uint8Array,
  value: string,
): Promise<boolean> {
  if (key.algo === 'ecdsa-secp256k1') {
    if (typeof key.public_key !== 'string' || value.length !== 130) return false
    try {
      // r‖s is checked against the attested key; the recovery byte v is not needed for that.
      return secp256k1.verify(
        hexToBytes(value.slice(0, 128)),
        message,
        hexToBytes(key.public_key),
        {
          prehash: true,
        },
      )
    } catch {
      return false
    }
  }
  if (typeof key.public_key === 'string') return false
  try {
    const publicKey = await crypto.subtle.importKey('jwk', key.public_key, 'Ed25519', false, [
      'verify',
    ])
    return await crypto.subtle.verify(
      'Ed25519',
      publicKey,
      hexToBytes(value) as BufferSource,
      message as BufferSource,
    )
  } catch {
    return false
  }
}
