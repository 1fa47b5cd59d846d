/**
 * An attestation session with one confidential upstream: it attests the workload with a fresh
 * random nonce, keeps the verified result until a refresh interval passes or the report goes stale,
 * attests again then (one request at a time, shared by concurrent callers), and attests again when a
 * receipt is signed by a key the current session does not hold (a key rotation). A gateway asks it
 * before sending anything to the upstream and refuses on any failure.
 *
 * @module
 */
import { bytesToHex } from './digest.js'
import type { GpuTokenVerifier } from './gpu.js'
import type { QuoteVerifier, TcbStatus } from './quote.js'
import { type ReceiptVerification, verifyReceipt } from './receipt.js'
import {
  type AttestationReport,
  type ReceiptSigningKey,
  type ReportFailureCode,
  verifyReport,
} from './report.js'

/** What a fetch of the report that gave no usable report reads as. */
const noReport = Symbol('no report')

/** A verified attestation of the upstream's workload. */
export type AttestedSession = {
  /** `aci_` + the nonce: names this attestation. */
  id: string
  nonce: string
  workloadId: string
  keysetDigest: string
  measurement: string
  tcbStatus: TcbStatus
  receiptKeys: readonly ReceiptSigningKey[]
  /** When it was verified and when it goes stale, ms since epoch. */
  attestedAtMs: number
  staleAtMs: number
  report: AttestationReport
}

/** Result of an attestation: a verified session, or why there is none. */
export type AttestationResult =
  | { status: 'verified'; session: AttestedSession }
  | { status: 'failed'; code: ReportFailureCode | 'enclave_unreachable'; message: string }

/** Options of {@link createAttestor}. */
export type AttestorOptions = {
  /** The upstream's base URL; reports are fetched from `{baseUrl}/attestation?nonce=…`. */
  baseUrl: string
  quoteVerifier: QuoteVerifier
  /** Checks the report's GPU token; absent, GPU evidence is not required. */
  gpuVerifier?: GpuTokenVerifier | undefined
  /** Measurements (hex) accepted. Security: an empty list accepts none. */
  allowedMeasurements: readonly string[]
  /** Attest again after this long, ms. Default 60 000. */
  refreshMs?: number | undefined
  /** Oldest report accepted, ms (see `verifyReport`). Default 10 minutes. */
  maxAgeMs?: number | undefined
  /** Largest report accepted, bytes. Default 256 KiB. */
  maxReportBytes?: number | undefined
  /** The fetch to use. Default `globalThis.fetch`. */
  fetch?: typeof fetch | undefined
  /** Clock, ms since epoch. Default `Date.now`. */
  now?: (() => number) | undefined
}

/** An attestation session with one upstream (see the module documentation). */
export type Attestor = {
  /** The current verified session, attesting first when there is none or it is due. */
  current(): Promise<AttestationResult>
  /** Attests now with a fresh nonce, replacing the session. */
  refresh(): Promise<AttestationResult>
  /**
   * Verifies a receipt against the current session; a receipt signed by a key outside it makes the
   * attestor attest again once (a rotated keyset), then verify against the new session.
   */
  verifyReceipt(
    receipt: unknown,
    expected: { requestBytes?: Uint8Array; responseBytes?: Uint8Array; model?: string },
  ): Promise<ReceiptVerification | Extract<AttestationResult, { status: 'failed' }>>
}

/**
 * Creates an attestor for one confidential upstream.
 *
 * @example
 * ```ts
 * const attestor = createAttestor({ baseUrl, quoteVerifier, allowedMeasurements: [m] })
 * const result = await attestor.current()
 * if (result.status === 'failed') refuse('attestation_failed')
 * ```
 */
export function createAttestor(options: AttestorOptions): Attestor {
  const now = options.now ?? Date.now
  const refreshMs = options.refreshMs ?? 60_000
  const maxReportBytes = options.maxReportBytes ?? 256 * 1024
  const doFetch = options.fetch ?? globalThis.fetch
  let session: AttestedSession | undefined
  let inFlight: Promise<AttestationResult> | undefined

  async function attest(): Promise<AttestationResult> {
    const nonce = bytesToHex(crypto.getRandomValues(new Uint8Array(32)))
    let json: unknown
    try {
      const response = await doFetch(`${options.baseUrl}/attestation?nonce=${nonce}`, {
        headers: { accept: 'application/json' },
      })
      const text = await response.text()
      // An error status or an oversized report is no report, as is an answer that is not JSON.
      json = response.ok && text.length <= maxReportBytes ? JSON.parse(text) : noReport
    } catch {
      json = noReport
    }
    if (json === noReport) {
      session = undefined
      return { status: 'failed', code: 'enclave_unreachable', message: 'no attestation report' }
    }
    const result = await verifyReport(json, {
      nonce,
      quoteVerifier: options.quoteVerifier,
      gpuVerifier: options.gpuVerifier,
      allowedMeasurements: options.allowedMeasurements,
      now: now(),
      maxAgeMs: options.maxAgeMs,
    })
    if (result.status === 'failed') {
      session = undefined
      return result
    }
    session = {
      id: `aci_${nonce}`,
      nonce,
      workloadId: result.workloadId,
      keysetDigest: result.keysetDigest,
      measurement: result.measurement,
      tcbStatus: result.tcbStatus,
      receiptKeys: result.receiptKeys,
      attestedAtMs: now(),
      staleAtMs: result.staleAtMs,
      report: result.report,
    }
    return { status: 'verified', session }
  }

  function refresh(): Promise<AttestationResult> {
    inFlight ??= attest().finally(() => {
      inFlight = undefined
    })
    return inFlight
  }

  async function current(): Promise<AttestationResult> {
    const t = now()
    if (session && t - session.attestedAtMs < refreshMs && t < session.staleAtMs) {
      return { status: 'verified', session }
    }
    return refresh()
  }

  async function check(
    receipt: unknown,
    expected: { requestBytes?: Uint8Array; responseBytes?: Uint8Array; model?: string },
    retry: boolean,
  ): Promise<ReceiptVerification | Extract<AttestationResult, { status: 'failed' }>> {
    const attested = retry ? await current() : await refresh()
    if (attested.status === 'failed') return attested
    const { session: s } = attested
    const result = await verifyReceipt(receipt, {
      receiptKeys: s.receiptKeys,
      workloadId: s.workloadId,
      keysetDigest: s.keysetDigest,
      ...expected,
    })
    const rotated =
      result.status === 'failed' &&
      (result.code === 'key_not_attested' || result.code === 'workload_mismatch')
    return rotated && retry ? check(receipt, expected, false) : result
  }

  return {
    current,
    refresh,
    verifyReceipt: (receipt, expected) => check(receipt, expected, true),
  }
}
