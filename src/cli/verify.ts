/**
 * `tollgate verify RECEIPT_ID`: checks a confidential answer's receipt from the gateway's public
 * `/v1/aci` routes, step by step, with the public verifiers of `tollgate` — the receipt and the
 * attested session it references are fetched, the session's attestation report is verified again
 * (its nonce, quote, measurement), then the receipt against the keys of THAT report only (workload,
 * signature) and its hashes against the hashes of the bytes the gateway sent and relayed, and the
 * gateway's own receipt (a JWS checked with its published JWKS) must bind the payment to exactly
 * that receipt, those hashes and that session, and the receipt's `ReceiptAnchored` event on the
 * ledger must commit its id, wire hash, workload and time. Each step
 * is printed with ✓ or ✗ (`--json` for machines); the exit code is 0 only when every step passed.
 *
 * @module
 */
import { Command } from 'commander'
import { createLocalJWKSet, jwtVerify } from 'jose'
import pc from 'picocolors'
import { Attestation, createLedger, formatAmount } from 'tollgate'

/** One step of a verification. */
export type VerifyStep = {
  step: string
  status: 'passed' | 'failed' | 'skipped'
  /** The stable failure code, when it failed. */
  code?: string
  detail: string
}

/** Result of {@link verifyStoredReceipt}. */
export type StoredReceiptVerification = {
  status: 'verified' | 'failed'
  receiptId: string
  steps: VerifyStep[]
  /** Where the trust policy (quote root, measurements) came from. */
  policySource: 'pinned' | 'gateway'
  notProven: string[]
}

/** Options of {@link verifyStoredReceipt}. */
export type VerifyStoredReceiptOptions = {
  /** The gateway's base URL (`http://127.0.0.1:4020`, with or without `/v1`). */
  inferenceUrl: string
  /** SHA-256 (hex) of the quote root CA to trust. Default: the one the gateway publishes. */
  rootKey?: string | undefined
  /** Measurements to trust (hex). Default: those the gateway publishes. */
  measurements?: readonly string[] | undefined
  /** The ledger's full-node URL, to look the anchor up. Default: the one the gateway names. */
  ledgerUrl?: string | undefined
  fetch?: typeof globalThis.fetch | undefined
}

const steps = [
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

const notProven = [
  'The simulated quote proves nothing about hardware: only a real TDX quote under a vendor root would.',
  'The receipt signature proves the attested workload signed these hashes; not that the model is good, nor what happened to the bytes after the gateway relayed them.',
  'The relayed hashes are the gateway’s own statement; compare them with the bytes you received.',
  'The gateway receipt is the gateway’s signed word on what was paid; a settlement digest can be looked up on the ledger, a credit debit cannot.',
]

type Json = Record<string, unknown>

/**
 * Verifies a stored receipt (see the module documentation); never throws for a bad answer.
 *
 * @example
 * ```ts
 * const result = await verifyStoredReceipt('rcpt_…', { inferenceUrl: 'http://127.0.0.1:4020' })
 * if (result.status !== 'verified') process.exitCode = 1
 * ```
 */
export async function verifyStoredReceipt(
  receiptId: string,
  options: VerifyStoredReceiptOptions,
): Promise<StoredReceiptVerification> {
  const doFetch = options.fetch ?? globalThis.fetch
  const base = `${options.inferenceUrl.replace(/\/+$/, '').replace(/\/v1$/, '')}/v1/aci`
  const done: VerifyStep[] = []
  const policySource = options.rootKey === undefined ? 'gateway' : 'pinned'
  const finish = (): StoredReceiptVerification => {
    for (const [step, label] of steps.slice(done.length)) {
      done.push({ step, status: 'skipped', detail: `${label}: not checked` })
    }
    const ok = done.every((s) => s.status === 'passed')
    return { status: ok ? 'verified' : 'failed', receiptId, steps: done, policySource, notProven }
  }
  const pass = (detail: string) => {
    const [step, label] = steps[done.length] ?? ['?', '?']
    done.push({ step, status: 'passed', detail: detail === '' ? label : `${label}: ${detail}` })
  }
  const fail = (code: string, detail: string) => {
    const [step, label] = steps[done.length] ?? ['?', '?']
    done.push({ step, status: 'failed', code, detail: `${label}: ${detail}` })
    return finish()
  }
  const get = async (path: string): Promise<Json | undefined> => {
    try {
      const response = await doFetch(`${base}/${path}`, { headers: { accept: 'application/json' } })
      if (!response.ok) return undefined
      const value = (await response.json()) as unknown
      return value !== null && typeof value === 'object' ? (value as Json) : undefined
    } catch {
      return undefined
    }
  }

  if (!/^[A-Za-z0-9_-]{1,140}$/.test(receiptId)) {
    return fail('receipt_malformed', 'not a receipt id')
  }
  const stored = await get(`receipts/${receiptId}`)
  if (stored === undefined) return fail('receipt_not_found', `no receipt ${receiptId} at ${base}`)
  const receipt = stored.receipt as Json | undefined
  if (receipt?.receipt_id !== receiptId) {
    return fail('receipt_malformed', 'the stored receipt is for another id')
  }
  pass(`${receiptId} (model ${String(stored.model)})`)

  const sessionId = String(stored.session_id)
  const session = await get(`sessions/${encodeURIComponent(sessionId)}`)
  if (session === undefined) return fail('session_not_found', `no session ${sessionId}`)
  pass(sessionId)

  const policy = (session.policy ?? {}) as {
    tee_type?: string
    quote_verifier?: unknown
    allowed_measurements?: string[]
  }
  if (policy.tee_type !== Attestation.TDX_TEE_TYPE) {
    return fail('tee_type_unsupported', `no quote verifier here for ${String(policy.tee_type)}`)
  }
  const quoteVerifier = await Attestation.quoteVerifierOfPolicy(
    policy.quote_verifier,
    options.rootKey,
  )
  if ('error' in quoteVerifier) return fail('quote_invalid', quoteVerifier.error)
  const report = await Attestation.verifyReport(session.report, {
    nonce: String(session.nonce),
    quoteVerifier,
    allowedMeasurements: options.measurements ?? policy.allowed_measurements ?? [],
    // Checked as of when the gateway relied on it: a stored receipt outlives the report's freshness.
    now: Date.parse(String(session.attested_at)),
  })
  if (report.status === 'failed') return fail(report.code, report.message)
  pass(
    `${policy.tee_type}, measurement ${report.measurement.slice(0, 16)}…, TCB ${report.tcbStatus}` +
      (policySource === 'gateway' ? ' (trust policy published by the gateway)' : ' (pinned)'),
  )

  const checked = await Attestation.verifyReceipt(receipt, {
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

  const events = (receipt.event_log ?? []) as {
    type?: string
    body_hash?: string
    wire_hash?: string
  }[]
  const relayed = (stored.relayed ?? {}) as { request_hash?: string; response_hash?: string }
  const received = events.find((e) => e.type === 'request.received')
  if (received?.body_hash === undefined || received.body_hash !== relayed.request_hash) {
    return fail('request_hash_mismatch', 'the receipt hashes another request')
  }
  pass('')
  const returned = events.find((e) => e.type === 'response.returned')
  if (returned?.wire_hash === undefined || returned.wire_hash !== relayed.response_hash) {
    return fail('response_hash_mismatch', 'the receipt hashes other response bytes')
  }
  pass(returned.wire_hash)

  const jws = stored.gateway_receipt
  if (typeof jws !== 'string') return fail('gateway_receipt_missing', 'the gateway signed none')
  const origin = base.replace(/\/v1\/aci$/, '')
  let claims: Json
  try {
    const jwksResponse = await doFetch(`${origin}/.well-known/tollgate-receipt-keys.json`)
    const jwks = (await jwksResponse.json()) as Parameters<typeof createLocalJWKSet>[0]
    const verified = await jwtVerify(jws, createLocalJWKSet(jwks), {
      typ: 'tollgate-receipt+jwt',
      algorithms: ['EdDSA'],
    })
    claims = verified.payload as Json
  } catch {
    return fail(
      'gateway_signature_invalid',
      'its signature does not verify with the gateway’s JWKS',
    )
  }
  const enclave = (claims.enclave_receipt ?? {}) as Json
  const attestation = (claims.attestation ?? {}) as Json
  if (
    claims.sub !== receiptId ||
    enclave.hash !== Attestation.sha256Tag(Attestation.jcsBytes(receipt)) ||
    claims.request_hash !== relayed.request_hash ||
    claims.response_hash !== relayed.response_hash ||
    attestation.session_id !== sessionId ||
    attestation.workload_id !== report.workloadId
  ) {
    return fail('gateway_receipt_mismatch', 'it binds another receipt, hashes or session')
  }
  pass(paymentOf(claims.payment as Json | undefined))

  const anchor = await get(`anchor/${receiptId}`)
  if (anchor?.state !== 'anchored' || typeof anchor.digest !== 'string') {
    return fail('anchor_missing', 'not anchored on the ledger yet (POST /v1/aci/anchor/{id})')
  }
  let ledgerUrl = options.ledgerUrl
  if (ledgerUrl === undefined) {
    try {
      const health = (await (await doFetch(`${origin}/healthz`)).json()) as {
        ledger?: { url?: string }
      }
      ledgerUrl = health.ledger?.url
    } catch {
      ledgerUrl = undefined
    }
  }
  if (ledgerUrl === undefined) return fail('anchor_unreachable', 'no ledger URL (--ledger-url)')
  const found = await createLedger({ url: ledgerUrl })
    .getTransaction(anchor.digest)
    .catch(() => ({ status: 'unknown' as const }))
  if (found.status !== 'found' || !found.transaction.success) {
    return fail('anchor_not_found', `transaction ${anchor.digest} not found on ${ledgerUrl}`)
  }
  const event = found.transaction.events.find((e) => e.eventType.endsWith('::ReceiptAnchored'))
  const fields = (event?.json ?? {}) as Json
  if (
    fields.receipt_id !== receiptId ||
    fields.wire_hash !== returned.wire_hash ||
    fields.workload_id !== report.workloadId ||
    fields.served_at_ms !== String(Date.parse(String(receipt.served_at)))
  ) {
    return fail('anchor_mismatch', `the event of ${anchor.digest} commits another receipt`)
  }
  pass(`${anchor.digest} on ${ledgerUrl}`)
  return finish()
}

function paymentOf(payment: Json | undefined): string {
  const amount = (value: unknown) =>
    typeof value === 'string' && /^\d{1,30}$/.test(value) ? formatAmount(BigInt(value)) : '?'
  if (payment?.kind === 'credit') {
    return `${amount(payment.amount)} USDC debited from ${String(payment.key_id)} (${String(payment.entry_id)})`
  }
  if (payment?.kind === 'payment') {
    return `${amount(payment.amount)} USDC paid, settlement ${String(payment.digest)}`
  }
  return 'no payment named'
}

/** The `verify` command. */
export function verifyCommand(): Command {
  return new Command('verify')
    .description(
      "Verify a confidential answer's receipt (its x-receipt-id) against the attestation it relied on, step by step; exit 0 only when verified",
    )
    .argument('<receipt-id>', 'the x-receipt-id of the answer')
    .option(
      '--inference-url <url>',
      'the gateway (inference API) base URL',
      'http://127.0.0.1:4020',
    )
    .option('--root-key <hex>', 'pin the quote root CA by its SHA-256 (default: the gateway’s)')
    .option('--measurement <hex...>', 'pin the measurements to trust (default: the gateway’s)')
    .option('--ledger-url <url>', 'the ledger full node for the anchor (default: the gateway’s)')
    .option('--json', 'print the result as JSON')
    .action(
      async (
        receiptId: string,
        flags: {
          inferenceUrl: string
          rootKey?: string
          measurement?: string[]
          ledgerUrl?: string
          json?: boolean
        },
      ) => {
        const result = await verifyStoredReceipt(receiptId, {
          inferenceUrl: flags.inferenceUrl,
          rootKey: flags.rootKey,
          measurements: flags.measurement,
          ledgerUrl: flags.ledgerUrl,
        })
        process.exitCode = result.status === 'verified' ? 0 : 1
        if (flags.json) {
          process.stdout.write(`${JSON.stringify(result, null, 2)}\n`)
          return
        }
        const lines = [`Receipt ${receiptId} at ${flags.inferenceUrl}`]
        for (const step of result.steps) {
          const mark =
            step.status === 'passed'
              ? pc.green('✓')
              : step.status === 'failed'
                ? pc.red('✗')
                : pc.dim('·')
          lines.push(`  ${mark} ${step.detail}${step.code === undefined ? '' : ` [${step.code}]`}`)
        }
        lines.push(
          result.status === 'verified' ? pc.green('Verified.') : pc.red('NOT verified.'),
          'What this does not prove:',
          ...result.notProven.map((line) => `  - ${line}`),
        )
        process.stdout.write(`${lines.join('\n')}\n`)
      },
    )
}
