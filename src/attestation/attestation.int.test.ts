import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type SimulatedEnclave, startSimulatedEnclave } from '../testing/enclave/index.js'
import { bytesToHex, keysetDigestOf, sha256Tag } from './digest.js'
import { jwksGpuTokenVerifier } from './gpu.js'
import { type VerifyReceiptOptions, verifyReceipt } from './receipt.js'
import { verifyReport } from './report.js'
import { tdxQuoteVerifier } from './tdx.js'

const hex = (n: number) => bytesToHex(crypto.getRandomValues(new Uint8Array(n)))
const clone = <T>(value: T): T => structuredClone(value)
// biome-ignore lint/suspicious/noExplicitAny: fixtures mutated field by field
type Json = Record<string, any>

describe('verifyReport', () => {
  let enclave: SimulatedEnclave
  let nonce: string
  let report: Json
  const check = (input: unknown, extra: Partial<Parameters<typeof verifyReport>[1]> = {}) =>
    verifyReport(input, {
      nonce,
      quoteVerifier: tdxQuoteVerifier({ rootCa: enclave.rootCa, collateral: enclave.collateral }),
      allowedMeasurements: [enclave.measurement],
      ...extra,
    })

  beforeAll(async () => {
    enclave = await startSimulatedEnclave({ reportTtlMs: 3 * 86_400_000 })
    nonce = hex(32)
    report = await (await fetch(`${enclave.baseUrl}/attestation?nonce=${nonce}`)).json()
  })
  afterAll(() => enclave.stop())

  it('verifies the report as published', async () => {
    expect((await check(report)).status).toBe('verified')
  })

  it.each<[string, (r: Json) => void, string]>([
    ['an unknown api_version', (r) => (r.api_version = 'aci/2'), 'report_malformed'],
    ['a quote that is not hex', (r) => (r.attestation.evidence.quote = 'zz'), 'report_malformed'],
    [
      'another workload id',
      (r) => (r.workload_id = sha256Tag(new Uint8Array(1))),
      'workload_id_mismatch',
    ],
    [
      'another keyset digest',
      (r) => (r.workload_keyset_digest = sha256Tag(new Uint8Array(1))),
      'keyset_digest_mismatch',
    ],
    [
      'a receipt key swapped into the keyset',
      (r) => {
        r.attestation.workload_keyset.receipt_signing_keys[0].public_key.x = 'A'.repeat(43)
        // A forger can recompute the digest, but not the identity key's endorsement of it.
        r.workload_keyset_digest = sha256TagOfKeyset(r)
      },
      'endorsement_invalid',
    ],
    ['another TEE type', (r) => (r.attestation.tee_type = 'tdx'), 'tee_type_unsupported'],
    [
      'a quote with a changed MRTD',
      (r) => {
        const q: string = r.attestation.evidence.quote
        // MRTD starts at byte 48 (header) + 136 of the TD report.
        const at = 2 * (48 + 136)
        r.attestation.evidence.quote = `${q.slice(0, at)}${q[at] === '0' ? '1' : '0'}${q.slice(at + 1)}`
      },
      'quote_invalid',
    ],
    [
      'a quote cut short',
      (r) => (r.attestation.evidence.quote = r.attestation.evidence.quote.slice(0, 2000)),
      'quote_invalid',
    ],
    [
      'report_data other than the quote’s',
      (r) => (r.attestation.report_data = '00'.repeat(64)),
      'nonce_mismatch',
    ],
  ])('fails on %s', async (_, mutate, code) => {
    const changed = clone(report)
    mutate(changed)
    expect(await check(changed)).toMatchObject({ status: 'failed', code })
  })

  it('fails with nonce_mismatch for another nonce', async () => {
    expect(await check(report, { nonce: hex(32) })).toMatchObject({ code: 'nonce_mismatch' })
  })

  it('fails with report_stale once fetched_at is older than maxAgeMs', async () => {
    expect(await check(report, { now: Date.now() + 11 * 60_000 })).toMatchObject({
      code: 'report_stale',
    })
  })

  it('fails with keyset_expired after the keyset epoch', async () => {
    expect(
      await check(report, { now: Date.now() + 1.5 * 86_400_000, maxAgeMs: 2 * 86_400_000 }),
    ).toMatchObject({ code: 'keyset_expired' })
  })

  it('fails with measurement_not_allowed on an empty allow-list', async () => {
    expect(await check(report, { allowedMeasurements: [] })).toMatchObject({
      code: 'measurement_not_allowed',
    })
  })

  it('checks the GPU token with a GPU verifier: present, signed under the JWKS, bound to the nonce', async () => {
    const gpuVerifier = jwksGpuTokenVerifier({
      jwks: enclave.gpuJwksUrl,
      issuer: enclave.gpuIssuer,
    })
    expect((await check(report, { gpuVerifier })).status).toBe('verified')
    const without = clone(report)
    delete without.attestation.evidence.gpu_token
    expect(await check(without, { gpuVerifier })).toMatchObject({ code: 'gpu_evidence_invalid' })
    // The quote binds the nonce, so only the GPU token is swapped: one issued for another nonce.
    const other = await (await fetch(`${enclave.baseUrl}/attestation?nonce=${hex(32)}`)).json()
    const swapped = clone(report)
    swapped.attestation.evidence.gpu_token = other.attestation.evidence.gpu_token
    expect(await check(swapped, { gpuVerifier })).toMatchObject({
      code: 'gpu_evidence_invalid',
      message: 'the GPU token is bound to another nonce',
    })
    const foreign = jwksGpuTokenVerifier({ jwks: { keys: [] } })
    expect(await check(report, { gpuVerifier: foreign })).toMatchObject({
      code: 'gpu_evidence_invalid',
    })
  })

  it('fails with quote_invalid once the collateral has expired', async () => {
    expect(
      await check(report, { now: Date.now() + 31 * 86_400_000, maxAgeMs: 40 * 86_400_000 }),
    ).toMatchObject({ code: 'quote_invalid', message: 'TCBInfo expired' })
  })

  it('fails with quote_invalid under another root key', async () => {
    const other = await startSimulatedEnclave()
    try {
      const result = await check(report, {
        quoteVerifier: tdxQuoteVerifier({ rootCa: other.rootCa, collateral: other.collateral }),
      })
      expect(result).toMatchObject({ code: 'quote_invalid' })
    } finally {
      await other.stop()
    }
  })

  it('fails with tcb_status_rejected for a revoked TCB', async () => {
    const revoked = await startSimulatedEnclave({ tcbStatus: 'Revoked' })
    try {
      const r = await (await fetch(`${revoked.baseUrl}/attestation?nonce=${nonce}`)).json()
      const result = await verifyReport(r, {
        nonce,
        quoteVerifier: tdxQuoteVerifier({ rootCa: revoked.rootCa, collateral: revoked.collateral }),
        allowedMeasurements: [revoked.measurement],
      })
      expect(result).toMatchObject({ code: 'tcb_status_rejected' })
    } finally {
      await revoked.stop()
    }
  })

  it('answers report_malformed, never throws, for any JSON', async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue(), async (value) => {
        expect(await check(value)).toMatchObject({ status: 'failed', code: 'report_malformed' })
      }),
      { numRuns: 200 },
    )
  })
})

function sha256TagOfKeyset(r: Json): string {
  return keysetDigestOf(r.attestation.workload_keyset)
}

describe('verifyReceipt', () => {
  let enclave: SimulatedEnclave
  let attested: Pick<VerifyReceiptOptions, 'receiptKeys' | 'workloadId' | 'keysetDigest'>
  let receipt: Json
  const request = new TextEncoder().encode(
    JSON.stringify({ model: 'confidential-model', messages: [{ role: 'user', content: 'hi' }] }),
  )
  let response: Uint8Array

  beforeAll(async () => {
    enclave = await startSimulatedEnclave()
    const nonce = hex(32)
    const report = await (await fetch(`${enclave.baseUrl}/attestation?nonce=${nonce}`)).json()
    const result = await verifyReport(report, {
      nonce,
      quoteVerifier: tdxQuoteVerifier({ rootCa: enclave.rootCa, collateral: enclave.collateral }),
      allowedMeasurements: [enclave.measurement],
    })
    if (result.status !== 'verified') throw new Error(result.code)
    attested = result
    const res = await fetch(`${enclave.baseUrl}/chat/completions`, {
      method: 'POST',
      body: request,
    })
    response = new Uint8Array(await res.arrayBuffer())
    receipt = await (
      await fetch(`${enclave.baseUrl}/receipts/${res.headers.get('x-receipt-id')}`)
    ).json()
  })
  afterAll(() => enclave.stop())

  const check = (input: unknown, extra: Partial<Parameters<typeof verifyReceipt>[1]> = {}) =>
    verifyReceipt(input, {
      ...attested,
      requestBytes: request,
      responseBytes: response,
      model: 'confidential-model',
      ...extra,
    })

  it('verifies the receipt as served', async () => {
    expect(await check(receipt)).toMatchObject({ status: 'verified', keyId: 'rk-0' })
  })

  it.each<[string, (r: Json) => void, string]>([
    ['no event log', (r) => delete r.event_log, 'receipt_malformed'],
    [
      'another workload',
      (r) => (r.workload_id = sha256Tag(new Uint8Array(1))),
      'workload_mismatch',
    ],
    ['a key id outside the keyset', (r) => (r.signature.key_id = 'rk-9'), 'key_not_attested'],
    ['another algorithm', (r) => (r.signature.algo = 'ecdsa-secp256k1'), 'signature_invalid'],
    ['a changed served_at', (r) => (r.served_at = new Date(0).toISOString()), 'signature_invalid'],
    ['an added field', (r) => (r.extra = 1), 'signature_invalid'],
  ])('fails on %s', async (_, mutate, code) => {
    const changed = clone(receipt)
    mutate(changed)
    expect(await check(changed)).toMatchObject({ status: 'failed', code })
  })

  it('fails with request_hash_mismatch against other request bytes', async () => {
    expect(await check(receipt, { requestBytes: new Uint8Array([1]) })).toMatchObject({
      code: 'request_hash_mismatch',
    })
  })

  it('fails with response_hash_mismatch against other response bytes', async () => {
    expect(await check(receipt, { responseBytes: new Uint8Array([1]) })).toMatchObject({
      code: 'response_hash_mismatch',
    })
  })

  it('fails with model_mismatch for another model asked for', async () => {
    expect(await check(receipt, { model: 'other' })).toMatchObject({ code: 'model_mismatch' })
  })

  it('answers receipt_malformed, never throws, for any JSON', async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue(), async (value) => {
        expect(await check(value)).toMatchObject({ status: 'failed', code: 'receipt_malformed' })
      }),
      { numRuns: 200 },
    )
  })
})
