/**
 * {@link verifyInferenceReceipt}: checks a confidential answer's receipt (its `x-receipt-id`) from a
 * gateway's public `/v1/aci` routes, step by step, for anyone who holds the id:
 *
 * 1. `receipt_fetched` — the stored receipt, for exactly this id;
 * 2. `session_fetched` — the attested session it references;
 * 3. `attestation_valid` — that session's report verified again (`verifyReport`: nonce, quote under
 *    the policy's quote verifier, measurement allow-list), as of when the gateway relied on it;
 * 4. `workload` — the receipt names the attested workload and keyset;
 * 5. `signature` — signed by a receipt key of THAT attested keyset (`verifyReceipt`);
 * 6. `request_hash`, 7. `response_hash` — the receipt's hashes are those of the bytes the gateway
 *    says it sent and relayed;
 * 8. `gateway_receipt` — the gateway's own receipt (a JWS checked with its published JWKS) binds the
 *    payment to exactly this receipt, these hashes and this session;
 * 9. `anchor` — the receipt's `ReceiptAnchored` event on the ledger commits its id, wire hash,
 *    workload, time and the sha256 of that gateway receipt.
 *
 * The answer is a tagged result listing every step (`passed`, `failed` with a stable code, or
 * `skipped` after a failure) and what the signatures do NOT prove. It never throws for a bad answer.
 *
 * Naming: `verifyReceipt` (in `receipt.ts`) stays the low-level check of one receipt's signature and
 * hashes against keys and bytes the caller already holds; this function is the whole check from a
 * receipt id and uses it.
 *
 * @module
 */
import { createLocalJWKSet, type JSONWebKeySet, jwtVerify } from 'jose'
import { createLedger } from '../ledger/ledger.js'
import type { Ledger } from '../ledger/types.js'
import { formatAmount } from '../money.js'
import { jcsBytes, sha256Tag } from './digest.js'
import {
  AnchorDocumentSchema,
  fetchDocument,
  type GatewayReceiptClaimsDocument,
  GatewayReceiptClaimsSchema,
  HealthDocumentSchema,
  type PublishedTrustPolicy,
  ReceiptKeysDocumentSchema,
  StoredReceiptDocumentSchema,
  StoredSessionDocumentSchema,
} from './gatewayDocuments.js'
import type { GpuTokenVerifier } from './gpu.js'
import type { QuoteVerifier } from './quote.js'
import { type ReceiptFailureCode, verifyReceipt } from './receipt.js'
import { type ReportFailureCode, verifyReport } from './report.js'
import { quoteVerifierOfPolicy, TDX_TEE_TYPE } from './tdx.js'

/** The steps of {@link verifyInferenceReceipt}, in order. */
export const inferenceReceiptSteps = [
  ['receipt_fetched', 'receipt fetched'],
  ['session_fetched', 'attested session fetched'],
  ['attestation_valid', 'attestation report verified'],
  ['workload', 'receipt names the attested workload'],
  ['signature', 'signed by an attested key'],
  ['request_hash', 'request hash matches the bytes the gateway sent'],
  ['response_hash', 'response hash matches the bytes the gateway relayed'],
  ['gateway_receipt', 'gateway receipt binds the payment to this answer'],
  ['anchor', 'ledger anchor event matches the receipt'],
] as const

/** A step's name. */
export type InferenceReceiptStepName = (typeof inferenceReceiptSteps)[number][0]

/** Stable codes of a step that failed. */
export type InferenceReceiptFailureCode =
  | 'receipt_not_found'
  | 'session_not_found'
  | ReportFailureCode
  | ReceiptFailureCode
  | 'gateway_receipt_missing'
  | 'gateway_signature_invalid'
  | 'gateway_receipt_mismatch'
  | 'anchor_missing'
  | 'anchor_unreachable'
  | 'anchor_not_found'
  | 'anchor_mismatch'

/** One step of a verification. */
export type InferenceReceiptStep = {
  step: InferenceReceiptStepName
  status: 'passed' | 'failed' | 'skipped'
  /** The stable failure code, when it failed. */
  code?: InferenceReceiptFailureCode
  /** Says what was checked (and found) in words. */
  detail: string
}

/** Result of {@link verifyInferenceReceipt}: every step, and what is not proven. */
export type InferenceReceiptVerification = {
  receiptId: string
  steps: InferenceReceiptStep[]
  /** Where the trust policy came from: pinned by the caller, or published by the gateway. */
  policySource: 'pinned' | 'gateway'
  /** What the signatures do NOT prove, in words. */
  notProven: readonly string[]
} & (
  | { status: 'verified' }
  | {
      status: 'failed'
      /** The first step that failed and its code. */
      failedStep: InferenceReceiptStepName
      code: InferenceReceiptFailureCode
    }
)

/** What to trust when verifying (see {@link VerifyInferenceReceiptOptions.policy}). */
export type InferenceReceiptPolicy = {
  /**
   * Checks the report's quote: a fixed verifier (pinned), or a function choosing one from the trust
   * policy the gateway published with the session (`undefined` when it has none for its TEE type,
   * `{ error }` when the policy is unusable). Default {@link publishedQuoteVerifier}. Security: a
   * published policy is the gateway's own word: pin its root CA with `rootCaSha256`.
   */
  quoteVerifier?:
    | QuoteVerifier
    | ((
        published: PublishedTrustPolicy,
        rootCaSha256: string | undefined,
      ) => Promise<QuoteVerifier | { error: string } | undefined>)
    | undefined
  /** SHA-256 (hex) of the quote root CA's DER the published policy must name (Intel's when absent). */
  rootCaSha256?: string | undefined
  /** Checks the report's GPU attestation token again. Default: not checked. */
  gpuVerifier?: GpuTokenVerifier | undefined
  /** Measurements (hex) to trust. Default: those the gateway published with the session. */
  allowedMeasurements?: readonly string[] | undefined
  /** The package of `receipt_anchor` the event must come from. Default: any package. */
  anchorPackage?: string | undefined
}

/** Options of {@link verifyInferenceReceipt}. */
export type VerifyInferenceReceiptOptions = {
  /** The gateway's base URL (`http://127.0.0.1:4020`, with or without `/v1`). */
  inferenceUrl: string
  /** The ledger to look the anchor up on: a full-node URL or a `Ledger`. Default: the gateway's. */
  ledger?: string | Pick<Ledger, 'getTransaction'> | undefined
  policy?: InferenceReceiptPolicy | undefined
  /** The fetch for the gateway's documents. Default `globalThis.fetch`. */
  fetch?: typeof globalThis.fetch | undefined
}

const notProven: readonly string[] = [
  'The quote proves the hardware only as far as its root CA is trusted: a test root (the simulated enclave’s) proves nothing; pin Intel’s root (rootCaSha256) to refuse any other.',
  'The GPU attestation token is not checked again unless a GPU token verifier is given.',
  'The receipt signature proves the attested workload signed these hashes; not that the model is good, nor what happened to the bytes after the gateway relayed them.',
  'The relayed hashes are the gateway’s own statement; compare them with the bytes you received.',
  'The gateway receipt is the gateway’s signed word on what was paid; a settlement digest can be looked up on the ledger, a credit debit cannot.',
  'The anchor proves when the gateway committed these hashes, not that they are true.',
]

/**
 * The default quote verifier choice: for Intel TDX, `quoteVerifierOfPolicy` over the verifier
 * policy (root CA, collateral) the gateway published, its root pinned when `rootCaSha256` is given;
 * none for any other TEE type.
 */
export async function publishedQuoteVerifier(
  published: PublishedTrustPolicy,
  rootCaSha256?: string | undefined,
): Promise<QuoteVerifier | { error: string } | undefined> {
  if (published.tee_type !== TDX_TEE_TYPE) return undefined
  return quoteVerifierOfPolicy(published.quote_verifier, rootCaSha256)
}

/**
 * Verifies a confidential answer's receipt from the gateway's public routes (see the module
 * documentation); never throws for a bad answer.
 *
 * @param receiptId - the answer's `x-receipt-id`.
 * @example
 * ```ts
 * const result = await verifyInferenceReceipt('rcpt_…', { inferenceUrl: 'http://127.0.0.1:4020' })
 * if (result.status === 'failed') console.log(result.failedStep, result.code)
 * ```
 */
export async function verifyInferenceReceipt(
  receiptId: string,
  options: VerifyInferenceReceiptOptions,
): Promise<InferenceReceiptVerification> {
  const doFetch = options.fetch ?? globalThis.fetch
  const origin = options.inferenceUrl.replace(/\/+$/, '').replace(/\/v1$/, '')
  const base = `${origin}/v1/aci`
  const policy = options.policy ?? {}
  const pinned = typeof policy.quoteVerifier === 'object' || policy.rootCaSha256 !== undefined
  const policySource = pinned ? 'pinned' : 'gateway'
  const done: InferenceReceiptStep[] = []
  const label = () => inferenceReceiptSteps[done.length] ?? inferenceReceiptSteps[0]
  const pass = (detail: string) => {
    const [step, text] = label()
    done.push({ step, status: 'passed', detail: detail === '' ? text : `${text}: ${detail}` })
  }
  const fail = (
    code: InferenceReceiptFailureCode,
    detail: string,
  ): InferenceReceiptVerification => {
    const [failedStep, text] = label()
    done.push({ step: failedStep, status: 'failed', code, detail: `${text}: ${detail}` })
    for (const [step, name] of inferenceReceiptSteps.slice(done.length)) {
      done.push({ step, status: 'skipped', detail: `${name}: not checked` })
    }
    return { status: 'failed', failedStep, code, receiptId, steps: done, policySource, notProven }
  }

  if (!/^[A-Za-z0-9_-]{1,140}$/.test(receiptId))
    return fail('receipt_malformed', 'not a receipt id')
  const stored = await fetchDocument(
    doFetch,
    `${base}/receipts/${receiptId}`,
    StoredReceiptDocumentSchema,
  )
  if (stored === undefined) return fail('receipt_not_found', `no receipt ${receiptId} at ${base}`)
  const receipt = stored.receipt as { receipt_id?: unknown } | null
  if (stored.id !== receiptId || receipt?.receipt_id !== receiptId) {
    return fail('receipt_malformed', 'the stored receipt is for another id')
  }
  pass(`${receiptId} (model ${stored.model})`)

  const sessionId = stored.session_id
  const session = await fetchDocument(
    doFetch,
    `${base}/sessions/${encodeURIComponent(sessionId)}`,
    StoredSessionDocumentSchema,
  )
  if (session === undefined || session.id !== sessionId) {
    return fail('session_not_found', `no session ${sessionId}`)
  }
  pass(sessionId)

  const chosen = policy.quoteVerifier ?? publishedQuoteVerifier
  const quoteVerifier =
    typeof chosen === 'function'
      ? await chosen(session.policy, policy.rootCaSha256).catch(() => ({
          error: 'the quote verifier could not be built',
        }))
      : chosen
  if (quoteVerifier === undefined) {
    return fail('tee_type_unsupported', `no quote verifier for ${session.policy.tee_type}`)
  }
  if ('error' in quoteVerifier) return fail('quote_invalid', quoteVerifier.error)
  const measurementsPinned = policy.allowedMeasurements !== undefined
  const report = await verifyReport(session.report, {
    nonce: session.nonce,
    quoteVerifier,
    allowedMeasurements: policy.allowedMeasurements ?? session.policy.allowed_measurements ?? [],
    gpuVerifier: policy.gpuVerifier,
    // Checked as of when the gateway relied on it: a stored receipt outlives the report's freshness.
    now: Date.parse(session.attested_at),
  })
  if (report.status === 'failed') return fail(report.code, report.message)
  const source =
    policySource === 'pinned' && measurementsPinned
      ? 'pinned'
      : policySource === 'gateway' && !measurementsPinned
        ? 'trust policy published by the gateway'
        : 'partly pinned'
  pass(
    `${report.report.attestation.tee_type}, measurement ${report.measurement.slice(0, 16)}…, TCB ${report.tcbStatus} (${source})`,
  )

  const checked = await verifyReceipt(stored.receipt, {
    receiptKeys: report.receiptKeys,
    workloadId: report.workloadId,
    keysetDigest: report.keysetDigest,
  })
  if (checked.status === 'failed') {
    if (checked.code === 'workload_mismatch' || checked.code === 'receipt_malformed') {
      return fail(checked.code, checked.message)
    }
    pass(report.workloadId)
    return fail(checked.code, checked.message)
  }
  pass(report.workloadId)
  pass(checked.keyId)

  const events = checked.receipt.event_log
  const received = events.find((e) => e.type === 'request.received')
  const requestHash = received?.body_hash ?? received?.cleartext_hash
  if (requestHash === undefined || requestHash !== stored.relayed.request_hash) {
    return fail('request_hash_mismatch', 'the receipt hashes another request')
  }
  pass('')
  const wireHash = events.find((e) => e.type === 'response.returned')?.wire_hash
  if (wireHash === undefined || wireHash !== stored.relayed.response_hash) {
    return fail('response_hash_mismatch', 'the receipt hashes other response bytes')
  }
  pass(wireHash)

  const jws = stored.gateway_receipt
  if (jws === null) return fail('gateway_receipt_missing', 'the gateway signed none')
  const jwks = await fetchDocument(
    doFetch,
    `${origin}/.well-known/tollgate-receipt-keys.json`,
    ReceiptKeysDocumentSchema,
    64 * 1024,
  )
  let claims: GatewayReceiptClaimsDocument | undefined
  try {
    const verified = await jwtVerify(
      jws,
      createLocalJWKSet((jwks ?? { keys: [] }) as JSONWebKeySet),
      {
        typ: 'tollgate-receipt+jwt',
        algorithms: ['EdDSA'],
      },
    )
    const parsed = GatewayReceiptClaimsSchema.safeParse(verified.payload)
    claims = parsed.success ? parsed.data : undefined
  } catch {
    return fail(
      'gateway_signature_invalid',
      'its signature does not verify with the gateway’s JWKS',
    )
  }
  if (
    claims === undefined ||
    claims.sub !== receiptId ||
    claims.enclave_receipt.hash !== sha256Tag(jcsBytes(stored.receipt)) ||
    claims.request_hash !== stored.relayed.request_hash ||
    claims.response_hash !== stored.relayed.response_hash ||
    claims.attestation.session_id !== sessionId ||
    claims.attestation.workload_id !== report.workloadId
  ) {
    return fail('gateway_receipt_mismatch', 'it binds another receipt, hashes or session')
  }
  pass(paymentOf(claims.payment))

  const anchor = await fetchDocument(doFetch, `${base}/anchor/${receiptId}`, AnchorDocumentSchema)
  if (anchor?.state !== 'anchored' || anchor.digest === null) {
    return fail('anchor_missing', 'not anchored on the ledger yet (POST /v1/aci/anchor/{id})')
  }
  let ledger = options.ledger
  if (ledger === undefined) {
    const health = await fetchDocument(
      doFetch,
      `${origin}/healthz`,
      HealthDocumentSchema,
      64 * 1024,
    )
    ledger = health?.ledger?.url
  }
  if (ledger === undefined) return fail('anchor_unreachable', 'no ledger to look the anchor up on')
  const where = typeof ledger === 'string' ? ledger : 'the ledger'
  const lookup = typeof ledger === 'string' ? createLedger({ url: ledger }) : ledger
  const found = await lookup
    .getTransaction(anchor.digest)
    .catch(() => ({ status: 'unknown' as const }))
  if (found.status !== 'found' || !found.transaction.success) {
    return fail('anchor_not_found', `transaction ${anchor.digest} not found on ${where}`)
  }
  const suffix =
    policy.anchorPackage === undefined
      ? '::receipt_anchor::ReceiptAnchored'
      : `${policy.anchorPackage}::receipt_anchor::ReceiptAnchored`
  const event = found.transaction.events.find((e) => e.eventType.endsWith(suffix))
  const fields = event?.json ?? {}
  if (
    fields.receipt_id !== receiptId ||
    fields.wire_hash !== wireHash ||
    fields.workload_id !== report.workloadId ||
    fields.served_at_ms !== String(Date.parse(checked.receipt.served_at)) ||
    fields.gateway_receipt_hash !== gatewayReceiptHash(jws)
  ) {
    return fail('anchor_mismatch', `the event of ${anchor.digest} commits another receipt`)
  }
  pass(`${anchor.digest} on ${where}`)
  return { status: 'verified', receiptId, steps: done, policySource, notProven }
}

/** The hash of a gateway receipt that its anchor commits: `sha256:` of the compact JWS's bytes. */
export function gatewayReceiptHash(jws: string): string {
  return sha256Tag(new TextEncoder().encode(jws))
}

function paymentOf(payment: GatewayReceiptClaimsDocument['payment']): string {
  if (payment.kind === 'credit') {
    const amount = formatAmount(BigInt(payment.amount))
    return `${amount} USDC debited from ${payment.key_id} (${payment.entry_id})`
  }
  if (payment.kind === 'payment') {
    return `${formatAmount(BigInt(payment.amount))} USDC paid, settlement ${payment.digest}`
  }
  return 'no payment named'
}
