/**
 * The `confidential` upstream kind: an ACI ("aci/1") enclave that serves a model only while it
 * proves itself. Before anything is sent, the enclave's attestation must be VERIFIED (fresh random
 * nonce, quote under the configured verifier, measurement allow-list; attested again after
 * `refreshMs` and on a receipt key the session does not hold). Every answer must come with a
 * receipt signed by an attested key whose hashes match the exact bytes sent and relayed, naming the
 * model asked for. Anything else refuses the request (`attestation_failed`); nothing is ever sent to
 * another upstream.
 *
 * A buffered answer is held until its receipt verifies. A streamed answer is relayed byte for byte
 * as it arrives (its first event is checked for the model first), except its final `data: [DONE]`
 * event, which is released only once the receipt verifies; otherwise the stream fails with
 * `AttestationRefusal` (`confidentialStream.ts`, which relays the bytes) and the API ends it with
 * an `attestation_failed` error event.
 *
 * @module
 */
import { Attestation } from 'tollgate'
import type { z } from 'zod'
import type { UpstreamResult } from '../upstreams/upstream.js'
import {
  eventData,
  modelOf,
  readAll,
  readFirstEvent,
  relay,
  type UpstreamRefused,
} from './confidentialStream.js'
import type { PaymentBinding } from './gatewayReceipt.js'
import type { confidentialUpstreamSchema } from './models.js'

/** A confidential upstream's configuration. */
export type ConfidentialUpstreamConfig = z.output<typeof confidentialUpstreamSchema>

/** A receipt the gateway verified, with what it relied on (stored, served by `/v1/aci`). */
export type VerifiedReceipt = {
  id: string
  /** The public model id. */
  model: string
  /** The receipt exactly as the enclave sent it (JSON text). */
  receiptJson: string
  session: Attestation.AttestedSession
  keyId: string
  /** `sha256:` of the request bytes sent and of the response bytes relayed. */
  requestHash: string
  responseHash: string
  policy: AttestationPolicy
  /** What paid for the answer, when the caller said. */
  payment?: PaymentBinding | undefined
}

/**
 * What an attestation is verified against (published with each session): the quote verifier with
 * its root CA (absent: Intel's) and the collateral used, the GPU token service, if required, and
 * the measurement allow-list. Anyone can check a session's report again with it.
 */
export type AttestationPolicy = {
  tee_type: string
  quote_verifier: Attestation.TdxVerifierPolicy
  gpu?: { jwks_url: string; issuer?: string | undefined } | undefined
  allowed_measurements: readonly string[]
}

/** The policy of a confidential upstream's configuration. */
export function policyOf(config: ConfidentialUpstreamConfig): AttestationPolicy {
  const { rootCa, collateral } = config.quoteVerifier
  return {
    tee_type: quoteVerifierOf(config.quoteVerifier).teeType,
    quote_verifier: {
      kind: 'tdx',
      ...(rootCa === undefined ? {} : { root_ca: rootCa }),
      collateral,
    },
    ...(config.gpu === undefined
      ? {}
      : { gpu: { jwks_url: config.gpu.jwksUrl, issuer: config.gpu.issuer } }),
    allowed_measurements: config.allowedMeasurements,
  }
}

/** What a confidential upstream needs besides its configuration. */
export type ConfidentialDependencies = {
  fetch?: typeof globalThis.fetch | undefined
  /** Bearer key for the enclave, if configured. */
  apiKey?: string | undefined
  /** Stores a verified receipt; the answer is released only after it resolves. */
  onReceipt?: ((receipt: VerifiedReceipt) => Promise<void>) | undefined
  /** Timeout of one enclave request (headers), ms. Default 120 000. */
  timeoutMs?: number | undefined
}

/** The parts of a confidential upstream the `/v1/aci` routes use. */
export type ConfidentialUpstream = {
  readonly modelId: string
  readonly upstreamModel: string
  readonly config: ConfidentialUpstreamConfig
  readonly attestor: Attestation.Attestor
  chat(call: {
    request: Record<string, unknown> & { stream: boolean }
    signal: AbortSignal
    payment?: PaymentBinding | undefined
  }): Promise<UpstreamResult | UpstreamRefused>
  /** Stops the scheduled re-attestation. */
  close(): void
}

/** The quote verifier a configuration names (DCAP via `@phala/dcap-qvl`, its collateral). */
export function quoteVerifierOf(
  config: ConfidentialUpstreamConfig['quoteVerifier'],
): Attestation.QuoteVerifier {
  return Attestation.tdxQuoteVerifier({ rootCa: config.rootCa, collateral: config.collateral })
}

/** The GPU token verifier a configuration names, if GPU evidence is required. */
export function gpuVerifierOf(
  config: ConfidentialUpstreamConfig['gpu'],
): Attestation.GpuTokenVerifier | undefined {
  return config && Attestation.jwksGpuTokenVerifier({ jwks: config.jwksUrl, issuer: config.issuer })
}

const encoder = new TextEncoder()
const maxReceiptBytes = 64 * 1024
const maxBufferedBytes = 16 * 1024 * 1024
/** How long the enclave has to hand over a receipt, ms. */
const receiptTimeoutMs = 10_000

/**
 * Builds the upstream of one confidential model and starts its scheduled re-attestation.
 *
 * @example
 * ```ts
 * const upstream = createConfidentialUpstream(config, 'confidential/llama', { onReceipt })
 * const result = await upstream.chat({ request, signal })
 * if (result.status === 'refused') refuse('attestation_failed')
 * ```
 */
export function createConfidentialUpstream(
  config: ConfidentialUpstreamConfig,
  modelId: string,
  deps: ConfidentialDependencies = {},
): ConfidentialUpstream {
  const doFetch = deps.fetch ?? globalThis.fetch
  const upstreamModel = config.model ?? modelId
  const policy = policyOf(config)
  const attestor = Attestation.createAttestor({
    baseUrl: config.baseUrl,
    quoteVerifier: quoteVerifierOf(config.quoteVerifier),
    gpuVerifier: gpuVerifierOf(config.gpu),
    allowedMeasurements: config.allowedMeasurements,
    refreshMs: config.refreshMs,
    fetch: doFetch,
  })
  // Attested again on a schedule (a fresh nonce each time), so a change is noticed between calls.
  const timer =
    config.refreshMs > 0
      ? setInterval(() => void attestor.refresh().catch(() => {}), config.refreshMs)
      : undefined
  timer?.unref?.()
  const refusal = (reason: string): UpstreamRefused => ({ status: 'refused', reason })
  const failure = (a: Extract<Attestation.AttestationResult, { status: 'failed' }>) =>
    refusal(`the enclave's attestation did not verify (${a.code})`)

  /** Verifies a receipt against the session, re-attesting once on a key it does not hold. */
  async function checkReceipt(
    session: Attestation.AttestedSession,
    id: string,
    requestBytes: Uint8Array,
    responseBytes: Uint8Array,
    signal: AbortSignal,
    payment: PaymentBinding | undefined,
  ): Promise<{ status: 'verified'; record: VerifiedReceipt } | UpstreamRefused> {
    let text: string
    let receipt: unknown
    try {
      const response = await doFetch(`${config.baseUrl}/receipts/${encodeURIComponent(id)}`, {
        headers: headersOf(deps.apiKey, 'application/json'),
        signal: AbortSignal.any([signal, AbortSignal.timeout(receiptTimeoutMs)]),
      })
      text = await response.text()
      if (!response.ok || text.length > maxReceiptBytes) throw new Error('no receipt')
      receipt = JSON.parse(text)
    } catch {
      return refusal('the enclave gave no receipt for the answer')
    }
    const expected = { requestBytes, responseBytes, model: upstreamModel }
    const check = (s: Attestation.AttestedSession) =>
      Attestation.verifyReceipt(receipt, {
        receiptKeys: s.receiptKeys,
        workloadId: s.workloadId,
        keysetDigest: s.keysetDigest,
        ...expected,
      })
    let used = session
    let result = await check(used)
    if (
      result.status === 'failed' &&
      (result.code === 'key_not_attested' || result.code === 'workload_mismatch')
    ) {
      // A rotated keyset: attest again (fresh nonce) and check against the new session once.
      const again = await attestor.refresh()
      if (again.status === 'failed') return failure(again)
      used = again.session
      result = await check(used)
    }
    if (result.status === 'failed') return refusal(receiptReason(result.code))
    if (result.receipt.receipt_id !== id) return refusal('the receipt is for another answer')
    const record: VerifiedReceipt = {
      id,
      model: modelId,
      receiptJson: text,
      session: used,
      keyId: result.keyId,
      requestHash: await sha256Tag(requestBytes),
      responseHash: await sha256Tag(responseBytes),
      policy,
      payment,
    }
    try {
      await deps.onReceipt?.(record)
    } catch {
      return refusal('the receipt could not be stored')
    }
    return { status: 'verified', record }
  }

  async function chat(call: {
    request: Record<string, unknown> & { stream: boolean }
    signal: AbortSignal
    payment?: PaymentBinding | undefined
  }): Promise<UpstreamResult | UpstreamRefused> {
    const attested = await attestor.current()
    if (attested.status === 'failed') return failure(attested)
    const { session } = attested
    const requestBytes = encoder.encode(JSON.stringify({ ...call.request, model: upstreamModel }))
    // The timeout covers the wait for the answer's headers, not a long stream after them.
    const timeout = new AbortController()
    const timer = setTimeout(() => timeout.abort(), deps.timeoutMs ?? 120_000)
    let response: Response
    try {
      response = await doFetch(`${config.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: {
          ...headersOf(deps.apiKey, call.request.stream ? 'text/event-stream' : 'application/json'),
          'content-type': 'application/json',
        },
        body: requestBytes,
        signal: AbortSignal.any([call.signal, timeout.signal]),
      })
    } catch {
      return { status: 'failed', reason: 'the enclave did not answer', retryable: true }
    } finally {
      clearTimeout(timer)
    }
    if (!response.ok) {
      await response.body?.cancel().catch(() => {})
      return {
        status: 'failed',
        reason: `the enclave answered ${response.status}`,
        retryable: response.status >= 500 || response.status === 429,
        upstreamStatus: response.status,
      }
    }
    const receiptId = response.headers.get('x-receipt-id')
    if (receiptId === null || !/^[A-Za-z0-9_-]{1,128}$/.test(receiptId)) {
      await response.body?.cancel().catch(() => {})
      return refusal('the enclave gave no receipt id')
    }
    const isStream = /^text\/event-stream/i.test(response.headers.get('content-type') ?? '')
    if (isStream !== call.request.stream || response.body === null) {
      await response.body?.cancel().catch(() => {})
      return refusal('the enclave answered in another form than asked')
    }
    if (!isStream) {
      const bytes = await readAll(response.body, maxBufferedBytes)
      if (bytes === undefined) return refusal('the enclave answer is too large')
      if (modelOf(bytes) !== upstreamModel) return refusal('another model answered')
      const verdict = await checkReceipt(
        session,
        receiptId,
        requestBytes,
        bytes,
        call.signal,
        call.payment,
      )
      if (verdict.status !== 'verified') return verdict
      return {
        status: 'ok',
        response: new Response(bytes as BodyInit, {
          status: 200,
          headers: { 'content-type': 'application/json', 'x-receipt-id': receiptId },
        }),
      }
    }
    const reader = response.body.getReader()
    const first = await readFirstEvent(reader)
    if (first === undefined || modelOf(eventData(first.event)) !== upstreamModel) {
      await reader.cancel().catch(() => {})
      return refusal(first === undefined ? 'the enclave stream broke' : 'another model answered')
    }
    const body = relay(reader, first.bytes, (wire) =>
      checkReceipt(session, receiptId, requestBytes, wire, call.signal, call.payment),
    )
    return {
      status: 'ok',
      response: new Response(body, {
        status: 200,
        headers: {
          'content-type': response.headers.get('content-type') ?? 'text/event-stream',
          'x-receipt-id': receiptId,
        },
      }),
    }
  }

  return {
    modelId,
    upstreamModel,
    config,
    attestor,
    chat,
    close: () => clearInterval(timer),
  }
}

function headersOf(apiKey: string | undefined, accept: string): Record<string, string> {
  return apiKey === undefined ? { accept } : { accept, authorization: `Bearer ${apiKey}` }
}

function receiptReason(code: Attestation.ReceiptFailureCode): string {
  switch (code) {
    case 'key_not_attested':
      return 'the receipt is not signed by an attested key'
    case 'signature_invalid':
      return 'the receipt signature does not verify'
    case 'response_hash_mismatch':
      return 'the receipt does not match the bytes relayed'
    case 'request_hash_mismatch':
      return 'the receipt does not match the request sent'
    case 'model_mismatch':
      return 'the receipt names another model'
    default:
      return `the receipt did not verify (${code})`
  }
}

async function sha256Tag(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as BufferSource))
  return `sha256:${Buffer.from(digest).toString('hex')}`
}
