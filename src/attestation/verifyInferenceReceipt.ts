/**
 * {@link verifyInferenceReceipt}: checks a confidential answer's receipt (its `x-receipt-id`) from a
 * gateway's public `/v1/aci` routes, step by step, for anyone who holds the id:
 *
 * 1. `receipt_fetched` — the stored receipt, for exactly this id;
 * 2. `session_fetched` — the attested session it references;
 * 3. `attestation_valid` — that session's report verified again (`verifyReport`: nonce, quote under
 *    the policy's quote verifier, measurement allow-list), as of when the gateway relied on it; a
 *    verifier made by {@link createInferenceReceiptVerifier} checks each session's report once and
 *    reuses the verdict for its other receipts while it holds (`sessionVerdicts.ts`). A quote under
 *    a root CA that is not Intel's (the simulated enclave's test root) fails here (`test_root`)
 *    unless the caller allows it (`allowTestRoot`): it proves nothing about the hardware;
 * 4. `workload` — the receipt names the attested workload and keyset;
 * 5. `signature` — signed by a receipt key of THAT attested keyset (`verifyReceipt`);
 * 6. `request_hash`, 7. `response_hash` — the receipt's hashes are those of the bytes the gateway
 *    says it sent and relayed, and (`responseBytes`) of the bytes the caller received;
 * 8. `gateway_receipt` — the gateway's own receipt (a JWS checked with its published JWKS) binds the
 *    payment to exactly this receipt, these hashes and this session, and (`expectPayment`) that
 *    payment is the caller's;
 * 9. `anchor` — the receipt's `ReceiptAnchored` event on the ledger commits its id, wire hash,
 *    workload, time and the sha256 of that gateway receipt (`anchor_pending` while the gateway has
 *    not anchored it yet).
 *
 * Without `expectPayment` and `responseBytes` the check says only that the receipt is genuine:
 * anyone who holds the id gets the same verdict. With them it says the answer is the caller's.
 *
 * The answer is a tagged result listing every step (`passed`, `failed` with a stable code, or
 * `skipped` after a failure) and what the signatures do NOT prove. It never throws for a bad answer.
 *
 * {@link verifyInferenceReceipt} is the one-shot form: a fresh verifier per call.
 *
 * Naming: `verifyReceipt` (in `receipt.ts`) stays the low-level check of one receipt's signature and
 * hashes against keys and bytes the caller already holds; this function is the whole check from a
 * receipt id and uses it.
 *
 * @module
 */
import { createLocalJWKSet, type JSONWebKeySet, jwtVerify } from 'jose'
import { createRecent, type Recent } from '../internal/recent.js'
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
import type { ReportFailureCode } from './report.js'
import { createSessionChecks, type SessionChecks } from './sessionVerdicts.js'
import { publishedRootOf } from './tdx.js'

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
  | 'test_root'
  | 'received_bytes_mismatch'
  | 'payment_mismatch'
  | 'anchor_pending'
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
  /**
   * `attestation_valid` only: `true` when the session's report was verified earlier by the same
   * verifier and its verdict reused (see {@link createInferenceReceiptVerifier}).
   */
  reused?: boolean | undefined
}

/** Result of {@link verifyInferenceReceipt}: every step, and what is not proven. */
export type InferenceReceiptVerification = {
  receiptId: string
  steps: InferenceReceiptStep[]
  /** Where the trust policy came from: pinned by the caller, or published by the gateway. */
  policySource: 'pinned' | 'gateway'
  /**
   * `true` when the quote chains to a test root CA (not Intel's) and the caller allowed it
   * (`allowTestRoot`): the attestation then proves nothing about the hardware.
   */
  testRoot: boolean
  /** What was checked against the caller's own records: its payment, the bytes it received. */
  bound: { payment: boolean; responseBytes: boolean }
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

/**
 * The payment a caller made for the answer (see {@link VerifyInferenceReceiptOptions.expectPayment}):
 * the settlement digest of a paid call, or the API key id (and, when known, the call id) of a call
 * on credit.
 */
export type ExpectedPayment = { digest: string } | { keyId: string; callId?: string | undefined }

/** Options of {@link verifyInferenceReceipt}. */
export type VerifyInferenceReceiptOptions = {
  /** The gateway's base URL (`http://127.0.0.1:4020`, with or without `/v1`). */
  inferenceUrl: string
  /** The ledger to look the anchor up on: a full-node URL or a `Ledger`. Default: the gateway's. */
  ledger?: string | Pick<Ledger, 'getTransaction'> | undefined
  policy?: InferenceReceiptPolicy | undefined
  /** The fetch for the gateway's documents. Default `globalThis.fetch`. */
  fetch?: typeof globalThis.fetch | undefined
  /**
   * The caller's payment for this answer: the gateway receipt must name exactly it
   * (`payment_mismatch` otherwise). Without it, any receipt's payment is accepted — also another
   * buyer's.
   */
  expectPayment?: ExpectedPayment | undefined
  /**
   * The exact bytes the caller received as the answer's body (raw SSE, framing included, for a
   * stream): the receipt's response hash must be their sha256 (`received_bytes_mismatch`
   * otherwise). Without them the hashes are the gateway's word for bytes the caller never compared.
   */
  responseBytes?: Uint8Array | undefined
  /**
   * Accept a quote under a root CA that is not Intel's (the simulated enclave's test root), for
   * tests and demos; the result then says `testRoot: true`. Default `false`: such a quote fails at
   * `attestation_valid` with `test_root`. Not checked for a `QuoteVerifier` object the caller
   * passes (`policy.quoteVerifier`): that verifier's root is the caller's own choice.
   */
  allowTestRoot?: boolean | undefined
}

/** What a verification does not prove, given what it was bound to and which root it accepted. */
function notProvenFor(
  bound: InferenceReceiptVerification['bound'],
  testRoot: boolean,
): readonly string[] {
  return [
    testRoot
      ? 'A TEST ROOT CA was accepted (allowTestRoot): the quote proves nothing about the hardware.'
      : 'The quote proves the hardware only as far as Intel’s root CA is trusted.',
    'The GPU attestation token is not checked again unless a GPU token verifier is given.',
    'The receipt signature proves the attested workload signed these hashes; not that the model is good.',
    bound.responseBytes
      ? 'The bytes you received are the ones the receipt hashes; nothing is said of what was done with them after.'
      : 'Not compared with the bytes you received (responseBytes, --response): the hashes are the gateway’s word.',
    bound.payment
      ? 'The gateway receipt names your payment; a settlement digest can be looked up on the ledger, a credit debit is the gateway’s word.'
      : 'Not bound to your payment (expectPayment, --payment): anyone who holds this receipt id gets the same verdict.',
    'The anchor proves when the gateway committed these hashes, not that they are true.',
  ]
}

/**
 * Verifies a confidential answer's receipt from the gateway's public routes (see the module
 * documentation); never throws for a bad answer. One-shot: to verify several receipts, make one
 * {@link createInferenceReceiptVerifier} and reuse it.
 *
 * @param receiptId - the answer's `x-receipt-id`.
 * @example
 * ```ts
 * const result = await verifyInferenceReceipt('rcpt_…', { inferenceUrl: 'http://127.0.0.1:4020' })
 * if (result.status === 'failed') console.log(result.failedStep, result.code)
 * ```
 */
export function verifyInferenceReceipt(
  receiptId: string,
  options: VerifyInferenceReceiptOptions,
): Promise<InferenceReceiptVerification> {
  return createInferenceReceiptVerifier(options).verify(receiptId)
}

/** A receipt verifier that remembers what it verified; see {@link createInferenceReceiptVerifier}. */
export type InferenceReceiptVerifier = {
  /** Verifies one receipt, as {@link verifyInferenceReceipt} does; never throws for a bad answer. */
  verify(receiptId: string): Promise<InferenceReceiptVerification>
}

/**
 * A verifier of many receipts from one gateway under one policy (a buyer auditing answers, an MCP
 * server, a CLI run on several ids). Per verifier and bounded, it builds the quote verifier of each
 * published trust policy once, and verifies each attested session's report once: the verdict is
 * remembered under the sha256 of the report's bytes (JCS), the nonce and the policy, and reused for
 * another receipt of the session only while the report is fresh, its keyset epoch open and the
 * quote's collateral valid at that receipt's verification time; otherwise it is checked again. A
 * reused step says so (`reused: true`, "verified earlier in this verifier, report sha256 …").
 * It also keeps the gateway's receipt keys imported, under the exact JSON of the JWKS document
 * they came from (another document is imported afresh). Everything else (the receipt, its
 * signature, hashes, the gateway receipt's signature and claims, and the anchor) is checked for
 * every receipt.
 *
 * @example
 * ```ts
 * const verifier = createInferenceReceiptVerifier({ inferenceUrl: 'http://127.0.0.1:4020' })
 * for (const id of receiptIds) console.log(id, (await verifier.verify(id)).status)
 * ```
 */
export function createInferenceReceiptVerifier(
  options: VerifyInferenceReceiptOptions,
): InferenceReceiptVerifier {
  const policy = options.policy ?? {}
  const memory: VerifierMemory = {
    sessions: createSessionChecks(policy),
    gatewayKeys: createRecent({ max: rememberedKeySets }),
  }
  return { verify: (receiptId) => verifyOne(receiptId, options, policy, memory) }
}

/** How many distinct gateway JWKS documents a verifier keeps imported. */
const rememberedKeySets = 16

/** What one verifier keeps between receipts. */
type VerifierMemory = {
  sessions: SessionChecks
  /**
   * The gateway's receipt keys, imported, under the exact JSON of the validated JWKS document they
   * were imported from: another document (a rotated key) is imported afresh.
   */
  gatewayKeys: Recent<string, ReturnType<typeof createLocalJWKSet>>
}

/** The imported key set of a JWKS document, remembered under its exact JSON. */
function gatewayKeysOf(
  memory: VerifierMemory,
  jwks: JSONWebKeySet,
): ReturnType<typeof createLocalJWKSet> {
  const json = JSON.stringify(jwks)
  return memory.gatewayKeys.get(json) ?? memory.gatewayKeys.remember(json, createLocalJWKSet(jwks))
}

async function verifyOne(
  receiptId: string,
  options: VerifyInferenceReceiptOptions,
  policy: InferenceReceiptPolicy,
  memory: VerifierMemory,
): Promise<InferenceReceiptVerification> {
  const { sessions } = memory
  const doFetch = options.fetch ?? globalThis.fetch
  const origin = options.inferenceUrl.replace(/\/+$/, '').replace(/\/v1$/, '')
  const base = `${origin}/v1/aci`
  const pinned = typeof policy.quoteVerifier === 'object' || policy.rootCaSha256 !== undefined
  const policySource: InferenceReceiptVerification['policySource'] = pinned ? 'pinned' : 'gateway'
  const bound = {
    payment: options.expectPayment !== undefined,
    responseBytes: options.responseBytes !== undefined,
  }
  let testRoot = false
  const verdict = () => ({
    receiptId,
    steps: done,
    policySource,
    testRoot,
    bound,
    notProven: notProvenFor(bound, testRoot),
  })
  const done: InferenceReceiptStep[] = []
  const label = () => inferenceReceiptSteps[done.length] ?? inferenceReceiptSteps[0]
  const pass = (detail: string, reused?: boolean) => {
    const [step, text] = label()
    const passed: InferenceReceiptStep = {
      step,
      status: 'passed',
      detail: detail === '' ? text : `${text}: ${detail}`,
    }
    done.push(reused === undefined ? passed : { ...passed, reused })
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
    return { status: 'failed', failedStep, code, ...verdict() }
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

  const measurementsPinned = policy.allowedMeasurements !== undefined
  // Checked as of when the gateway relied on it: a stored receipt outlives the report's freshness.
  const checked = await sessions.check(session, Date.parse(session.attested_at))
  if (checked.status === 'failed') return fail(checked.code, checked.message)
  const { report } = checked
  // The root is the published policy's unless the caller passed its own quote verifier.
  const root =
    typeof policy.quoteVerifier === 'object'
      ? undefined
      : await publishedRootOf(session.policy.quote_verifier)
  if (root !== undefined && !root.intel) {
    if (options.allowTestRoot !== true) {
      return fail(
        'test_root',
        `the quote chains to a TEST root CA (sha256 ${root.sha256.slice(0, 16)}…), not Intel’s: it proves nothing about the hardware (allowTestRoot / --allow-test-root accepts it, for tests only)`,
      )
    }
    testRoot = true
  }
  const source =
    policySource === 'pinned' && measurementsPinned
      ? 'pinned'
      : policySource === 'gateway' && !measurementsPinned
        ? 'trust policy published by the gateway'
        : 'partly pinned'
  const earlier = checked.reused
    ? `; verified earlier in this verifier, report sha256 ${checked.reportSha256.slice(0, 16)}…`
    : ''
  const test = testRoot
    ? ', TEST ROOT CA accepted (allowTestRoot): proves nothing about the hardware'
    : ''
  pass(
    `${report.report.attestation.tee_type}, measurement ${report.measurement.slice(0, 16)}…, TCB ${report.tcbStatus} (${source})${test}${earlier}`,
    checked.reused,
  )

  const signed = await verifyReceipt(stored.receipt, {
    receiptKeys: report.receiptKeys,
    workloadId: report.workloadId,
    keysetDigest: report.keysetDigest,
  })
  if (signed.status === 'failed') {
    if (signed.code === 'workload_mismatch' || signed.code === 'receipt_malformed') {
      return fail(signed.code, signed.message)
    }
    pass(report.workloadId)
    return fail(signed.code, signed.message)
  }
  pass(report.workloadId)
  pass(signed.keyId)

  const events = signed.receipt.event_log
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
  if (options.responseBytes !== undefined) {
    const receivedHash = sha256Tag(options.responseBytes)
    if (receivedHash !== wireHash) {
      return fail(
        'received_bytes_mismatch',
        `the bytes you received (${receivedHash}) are not the ones the receipt hashes`,
      )
    }
    pass(`${wireHash} = the bytes you received`)
  } else pass(wireHash)

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
      gatewayKeysOf(memory, (jwks ?? { keys: [] }) as JSONWebKeySet),
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
  if (options.expectPayment !== undefined && !isPayment(claims.payment, options.expectPayment)) {
    return fail(
      'payment_mismatch',
      `it names ${paymentOf(claims.payment)}, not your payment (${expectedOf(options.expectPayment)})`,
    )
  }
  pass(
    `${paymentOf(claims.payment)}${options.expectPayment === undefined ? '' : ' = your payment'}`,
  )

  const anchor = await fetchDocument(doFetch, `${base}/anchor/${receiptId}`, AnchorDocumentSchema)
  if (anchor !== undefined && anchor.state !== 'anchored') {
    return fail(
      'anchor_pending',
      `not anchored on the ledger yet (${anchor.state}); the gateway anchors it shortly`,
    )
  }
  if (anchor === undefined || anchor.digest === null) {
    return fail('anchor_missing', 'the gateway names no anchor for this receipt')
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
    fields.served_at_ms !== String(Date.parse(signed.receipt.served_at)) ||
    fields.gateway_receipt_hash !== gatewayReceiptHash(jws)
  ) {
    return fail('anchor_mismatch', `the event of ${anchor.digest} commits another receipt`)
  }
  pass(`${anchor.digest} on ${where}`)
  return { status: 'verified', ...verdict() }
}

function isPayment(
  payment: GatewayReceiptClaimsDocument['payment'],
  expected: ExpectedPayment,
): boolean {
  if ('digest' in expected) return payment.kind === 'payment' && payment.digest === expected.digest
  return (
    payment.kind === 'credit' &&
    payment.key_id === expected.keyId &&
    (expected.callId === undefined || payment.entry_id === expected.callId)
  )
}

function expectedOf(expected: ExpectedPayment): string {
  if ('digest' in expected) return `settlement ${expected.digest}`
  return expected.callId === undefined ? expected.keyId : `${expected.keyId}, ${expected.callId}`
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
