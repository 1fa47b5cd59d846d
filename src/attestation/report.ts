/**
 * ACI attestation reports ("aci/1"): the wire schema and {@link verifyReport}, which checks a
 * report against a verifier's nonce, a quote verifier, a clock and a measurement allow-list, and
 * answers a tagged result with a stable failure code.
 *
 * @module
 */
import { z } from 'zod'
import {
  bytesToHex,
  endorsementMessage,
  hexToBytes,
  keysetDigestOf,
  reportDataOf,
  workloadIdOf,
} from './digest.js'
import type { GpuTokenVerifier } from './gpu.js'
import type { QuoteVerifier, TcbStatus } from './quote.js'

const Hex = (max: number) =>
  z
    .string()
    .max(max)
    .regex(/^(?:[0-9a-f]{2})*$/)
const Ed25519Jwk = z.object({
  kty: z.literal('OKP'),
  crv: z.literal('Ed25519'),
  x: z.string().regex(/^[A-Za-z0-9_-]{43}$/),
})

/** A receipt signing key of a keyset. `public_key` is a JWK (Ed25519) or hex (secp256k1). */
export const ReceiptSigningKeySchema = z.object({
  key_id: z.string().min(1).max(128),
  algo: z.enum(['ed25519', 'ecdsa-secp256k1']),
  public_key: z.union([Ed25519Jwk, Hex(130)]),
})
/** A receipt signing key of a keyset. */
export type ReceiptSigningKey = z.infer<typeof ReceiptSigningKeySchema>

/** A workload keyset: its identity key, epoch and receipt signing keys. */
export const KeysetSchema = z.object({
  workload_identity: z.object({ public_key: Ed25519Jwk }),
  keyset_epoch: z.object({ version: z.number().int().nonnegative(), not_after: z.iso.datetime() }),
  receipt_signing_keys: z.array(ReceiptSigningKeySchema).min(1).max(16),
})
/** A workload keyset. */
export type Keyset = z.infer<typeof KeysetSchema>

/** An ACI attestation report (size-limited schema of untrusted input). */
export const AttestationReportSchema = z.object({
  api_version: z.literal('aci/1'),
  workload_id: z.string().max(80),
  workload_keyset_digest: z.string().max(80),
  attestation: z.object({
    vendor: z.string().max(64),
    tee_type: z.string().max(64),
    workload_keyset: KeysetSchema,
    report_data: Hex(128),
    keyset_endorsement: z.object({ algo: z.literal('ed25519'), value: Hex(128) }),
    source_provenance: z
      .object({
        repo_url: z.string().max(512),
        repo_commit: z.string().max(64),
        image_digest: z.string().max(80),
      })
      .optional(),
    freshness: z.object({ fetched_at: z.iso.datetime(), stale_after: z.iso.datetime() }),
    evidence: z.looseObject({
      quote: Hex(64 * 1024),
      /** GPU attestation token (JWT), when the workload runs on attested GPUs. */
      gpu_token: z
        .string()
        .max(64 * 1024)
        .optional(),
    }),
  }),
})
/** An ACI attestation report. */
export type AttestationReport = z.infer<typeof AttestationReportSchema>

/** Stable codes of a report that did not verify. */
export type ReportFailureCode =
  | 'report_malformed'
  | 'workload_id_mismatch'
  | 'keyset_digest_mismatch'
  | 'endorsement_invalid'
  | 'tee_type_unsupported'
  | 'quote_invalid'
  | 'tcb_status_rejected'
  | 'nonce_mismatch'
  | 'report_stale'
  | 'keyset_expired'
  | 'measurement_not_allowed'
  | 'gpu_evidence_invalid'

/** Result of {@link verifyReport}. */
export type ReportVerification =
  | {
      status: 'verified'
      report: AttestationReport
      workloadId: string
      keysetDigest: string
      measurement: string
      /** The measurement registers behind `measurement`, when the quote has several. */
      registers?: Readonly<Record<string, string>> | undefined
      tcbStatus: TcbStatus
      receiptKeys: readonly ReceiptSigningKey[]
      /** When the report stops being fresh (ms since epoch). */
      staleAtMs: number
    }
  | { status: 'failed'; code: ReportFailureCode; message: string }

/** Options of {@link verifyReport}. */
export type VerifyReportOptions = {
  /** The nonce the verifier sent (hex); the report must be bound to exactly this nonce. */
  nonce: string
  /** Checks the hardware quote (its signature chain, TCB status and report data). */
  quoteVerifier: QuoteVerifier
  /** Measurements (hex) accepted. Security: an empty list accepts none. */
  allowedMeasurements: readonly string[]
  /**
   * Checks the GPU attestation token (`evidence.gpu_token`), which must then be present and bound
   * to the nonce. Absent: GPU evidence is not required (nor checked).
   */
  gpuVerifier?: GpuTokenVerifier | undefined
  /** Current time, ms since epoch. Default `Date.now()`. */
  now?: number | undefined
  /** Oldest `fetched_at` accepted, ms before `now`. Default 10 minutes. */
  maxAgeMs?: number | undefined
}

/**
 * Verifies an attestation report: schema, workload id and keyset digest recomputed from the
 * keyset, identity-key endorsement of the keyset, the hardware quote, TCB status, nonce-bound report
 * data (quote report data bytes 0..32 and the report's `report_data`), freshness, keyset epoch, the
 * measurement allow-list and, with a GPU verifier, the GPU token. Checks run in that order; the
 * first failure is answered. The quote's collateral must be valid at `now`.
 *
 * @param input - the report as received (untrusted JSON).
 * @example
 * ```ts
 * const result = await verifyReport(json, { nonce, quoteVerifier, allowedMeasurements: [m] })
 * if (result.status === 'failed') refuse(result.code)
 * ```
 */
export async function verifyReport(
  input: unknown,
  options: VerifyReportOptions,
): Promise<ReportVerification> {
  const fail = (code: ReportFailureCode, message: string): ReportVerification => ({
    status: 'failed',
    code,
    message,
  })
  const parsed = AttestationReportSchema.safeParse(input)
  if (!parsed.success) return fail('report_malformed', 'the report does not match aci/1')
  const report = parsed.data
  const { attestation } = report
  const keyset = attestation.workload_keyset
  const workloadId = workloadIdOf(keyset.workload_identity.public_key)
  if (workloadId !== report.workload_id) {
    return fail('workload_id_mismatch', 'workload_id is not the hash of the identity key')
  }
  const keysetDigest = keysetDigestOf(keyset)
  if (keysetDigest !== report.workload_keyset_digest) {
    return fail('keyset_digest_mismatch', 'workload_keyset_digest is not the hash of the keyset')
  }
  if (!(await endorsementValid(keyset, keysetDigest, attestation.keyset_endorsement.value))) {
    return fail('endorsement_invalid', 'the identity key did not endorse this keyset')
  }
  if (attestation.tee_type !== options.quoteVerifier.teeType) {
    return fail('tee_type_unsupported', `tee_type ${attestation.tee_type} is not accepted`)
  }
  const now = options.now ?? Date.now()
  const verdict = await options.quoteVerifier.verify(hexToBytes(attestation.evidence.quote), {
    now,
  })
  if (verdict.status === 'invalid') {
    const rejected = verdict.tcbStatus === 'Revoked' || verdict.tcbStatus === 'Unknown'
    return fail(rejected ? 'tcb_status_rejected' : 'quote_invalid', verdict.reason)
  }
  if (verdict.tcbStatus === 'Revoked' || verdict.tcbStatus === 'Unknown') {
    return fail('tcb_status_rejected', `TCB status ${verdict.tcbStatus}`)
  }
  const expected = bytesToHex(reportDataOf({ workloadId, keysetDigest, nonce: options.nonce }))
  if (
    bytesToHex(verdict.reportData.subarray(0, 32)) !== expected ||
    attestation.report_data.slice(0, 64) !== expected
  ) {
    return fail('nonce_mismatch', 'the report data is not bound to this nonce')
  }
  const fetchedAt = Date.parse(attestation.freshness.fetched_at)
  const staleAtMs = Date.parse(attestation.freshness.stale_after)
  if (now >= staleAtMs || now - fetchedAt > (options.maxAgeMs ?? 600_000)) {
    return fail('report_stale', 'the report is past its freshness window')
  }
  if (now >= Date.parse(keyset.keyset_epoch.not_after)) {
    return fail('keyset_expired', 'the keyset epoch has ended')
  }
  if (!options.allowedMeasurements.includes(verdict.measurement)) {
    return fail('measurement_not_allowed', 'the measurement is not on the allow-list')
  }
  if (options.gpuVerifier) {
    const token = attestation.evidence.gpu_token
    if (token === undefined) return fail('gpu_evidence_invalid', 'the report has no GPU token')
    const gpu = await options.gpuVerifier.verify(token, { nonce: options.nonce, now })
    if (gpu.status === 'invalid') return fail('gpu_evidence_invalid', gpu.reason)
  }
  return {
    status: 'verified',
    report,
    workloadId,
    keysetDigest,
    measurement: verdict.measurement,
    registers: verdict.registers,
    tcbStatus: verdict.tcbStatus,
    receiptKeys: keyset.receipt_signing_keys,
    staleAtMs,
  }
}

async function endorsementValid(keyset: Keyset, digest: string, value: string): Promise<boolean> {
  try {
    const key = await crypto.subtle.importKey(
      'jwk',
      keyset.workload_identity.public_key,
      'Ed25519',
      false,
      ['verify'],
    )
    return await crypto.subtle.verify(
      'Ed25519',
      key,
      hexToBytes(value) as BufferSource,
      endorsementMessage(digest) as BufferSource,
    )
  } catch {
    return false
  }
}
