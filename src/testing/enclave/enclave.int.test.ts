import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bytesToHex } from '../../attestation/digest.js'
import { jwksGpuTokenVerifier } from '../../attestation/gpu.js'
import { verifyReceipt } from '../../attestation/receipt.js'
import { type ReportVerification, verifyReport } from '../../attestation/report.js'
import { tdxQuoteVerifier } from '../../attestation/tdx.js'
import { type EnclaveMisbehaviour, type SimulatedEnclave, startSimulatedEnclave } from './index.js'

const nonce = () => bytesToHex(crypto.getRandomValues(new Uint8Array(32)))

async function attest(enclave: SimulatedEnclave, value = nonce()): Promise<ReportVerification> {
  const report = await (await fetch(`${enclave.baseUrl}/attestation?nonce=${value}`)).json()
  return verifyReport(report, {
    nonce: value,
    quoteVerifier: tdxQuoteVerifier({ rootCa: enclave.rootCa, collateral: enclave.collateral }),
    allowedMeasurements: [enclave.measurement],
    gpuVerifier: jwksGpuTokenVerifier({ jwks: enclave.gpuJwksUrl, issuer: enclave.gpuIssuer }),
  })
}

async function chat(enclave: SimulatedEnclave, stream: boolean) {
  const request = new TextEncoder().encode(
    JSON.stringify({
      model: 'confidential-model',
      stream,
      messages: [{ role: 'user', content: 'hello enclave' }],
    }),
  )
  const response = await fetch(`${enclave.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: request,
  })
  const bytes = new Uint8Array(await response.arrayBuffer())
  const id = response.headers.get('x-receipt-id')
  const receipt = id ? await (await fetch(`${enclave.baseUrl}/receipts/${id}`)).json() : undefined
  return { response, request, bytes, id, receipt }
}

async function checkReceipt(enclave: SimulatedEnclave, stream: boolean) {
  const attested = await attest(enclave)
  if (attested.status !== 'verified') throw new Error(`attestation failed: ${attested.code}`)
  const { request, bytes, receipt } = await chat(enclave, stream)
  return verifyReceipt(receipt, {
    receiptKeys: attested.receiptKeys,
    workloadId: attested.workloadId,
    keysetDigest: attested.keysetDigest,
    requestBytes: request,
    responseBytes: bytes,
    model: 'confidential-model',
  })
}

describe('simulated enclave', () => {
  let enclave: SimulatedEnclave
  beforeAll(async () => {
    enclave = await startSimulatedEnclave()
  })
  afterAll(() => enclave.stop())

  it('publishes a report that verifies against the nonce it was asked for', async () => {
    const result = await attest(enclave)
    expect(result.status).toBe('verified')
    if (result.status !== 'verified') return
    expect(result.workloadId).toBe(enclave.workloadId)
    expect(result.measurement).toBe(enclave.measurement)
    expect(result.tcbStatus).toBe('UpToDate')
  })

  it.each([false, true])('signs a receipt over the exact bytes (stream: %s)', async (stream) => {
    const { response, bytes, id } = await chat(enclave, stream)
    expect(response.status).toBe(200)
    expect(id).toMatch(/^rcpt_[0-9a-f]{24}$/)
    const text = new TextDecoder().decode(bytes)
    if (stream) expect(text.endsWith('data: [DONE]\n\n')).toBe(true)
    else expect(JSON.parse(text).model).toBe('confidential-model')
    const result = await checkReceipt(enclave, stream)
    expect(result).toMatchObject({ status: 'verified', keyId: 'rk-0' })
  })

  it('gives a new keyset digest when the receipt key rotates', async () => {
    const before = await attest(enclave)
    enclave.rotateKeys()
    const after = await attest(enclave)
    expect(before.status === 'verified' && after.status === 'verified').toBe(true)
    if (before.status !== 'verified' || after.status !== 'verified') return
    expect(after.keysetDigest).not.toBe(before.keysetDigest)
    expect(after.receiptKeys[0]?.key_id).toBe('rk-1')
    expect((await checkReceipt(enclave, false)).status).toBe('verified')
  })

  it('refuses a nonce that is not hex', async () => {
    const response = await fetch(`${enclave.baseUrl}/attestation?nonce=xyz`)
    expect(response.status).toBe(400)
  })
})

describe('simulated enclave, flat receipt signatures', () => {
  it('signs receipts in the flat form, which verify', async () => {
    const enclave = await startSimulatedEnclave({ receiptFormat: 'flat' })
    try {
      const { receipt } = await chat(enclave, false)
      expect(typeof receipt.signature).toBe('string')
      expect(receipt.key_id).toBe('rk-0')
      expect((await checkReceipt(enclave, true)).status).toBe('verified')
    } finally {
      await enclave.stop()
    }
  })
})

describe('simulated enclave misbehaviours', () => {
  let enclave: SimulatedEnclave
  beforeAll(async () => {
    enclave = await startSimulatedEnclave()
  })
  afterAll(() => enclave.stop())

  it.each<[EnclaveMisbehaviour, string]>([
    ['bad-report-signature', 'quote_invalid'],
    ['wrong-nonce', 'nonce_mismatch'],
    ['stale-report', 'report_stale'],
    ['measurement-not-allowed', 'measurement_not_allowed'],
    ['bad-gpu-token', 'gpu_evidence_invalid'],
  ])('%s: the report fails with %s', async (misbehaviour, code) => {
    enclave.misbehave(misbehaviour)
    try {
      expect(await attest(enclave)).toMatchObject({ status: 'failed', code })
    } finally {
      enclave.misbehave(undefined)
    }
  })

  it.each<[EnclaveMisbehaviour, boolean, string]>([
    ['unattested-receipt-key', false, 'key_not_attested'],
    ['tampered-receipt', false, 'signature_invalid'],
    ['tampered-receipt', true, 'signature_invalid'],
    ['changed-response-bytes', false, 'response_hash_mismatch'],
    ['changed-response-bytes', true, 'response_hash_mismatch'],
    ['model-alias', false, 'model_mismatch'],
  ])('%s (stream: %s): the receipt fails with %s', async (misbehaviour, stream, code) => {
    const attested = await attest(enclave)
    expect(attested.status).toBe('verified')
    enclave.misbehave(misbehaviour)
    try {
      expect(await checkReceipt(enclave, stream)).toMatchObject({ status: 'failed', code })
    } finally {
      enclave.misbehave(undefined)
    }
  })

  it('model-alias: the response names another model', async () => {
    enclave.misbehave('model-alias')
    try {
      const { bytes } = await chat(enclave, false)
      expect(JSON.parse(new TextDecoder().decode(bytes)).model).toBe('alias-model')
    } finally {
      enclave.misbehave(undefined)
    }
  })

  it('enclave-down: connections are cut', async () => {
    enclave.misbehave('enclave-down')
    try {
      await expect(fetch(`${enclave.baseUrl}/attestation?nonce=${nonce()}`)).rejects.toThrow()
    } finally {
      enclave.misbehave(undefined)
    }
  })
})

describe('simulated enclave, legacy ecdsa-secp256k1 receipts', () => {
  it.each(['nested', 'flat'] as const)(
    'signs %s receipts that verify, and not once tampered',
    async (receiptFormat) => {
      const enclave = await startSimulatedEnclave({ receiptAlgo: 'ecdsa-secp256k1', receiptFormat })
      try {
        const { receipt } = await chat(enclave, false)
        const value = receiptFormat === 'flat' ? receipt.signature : receipt.signature.value
        expect(value).toMatch(/^[0-9a-f]{130}$/)
        expect(await checkReceipt(enclave, true)).toMatchObject({ status: 'verified' })
        enclave.misbehave('tampered-receipt')
        expect(await checkReceipt(enclave, false)).toMatchObject({ code: 'signature_invalid' })
      } finally {
        await enclave.stop()
      }
    },
  )
})
