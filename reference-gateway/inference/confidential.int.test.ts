/**
 * Confidential models end to end: the gateway (in this process, on the ledger emulator and SQLite)
 * in front of the simulated enclave of `tollgate/testing`, called with the official `openai` SDK.
 * A confidential answer, buffered or streamed, carries `x-receipt-id` and a receipt that verifies
 * over the exact bytes relayed; each enclave misbehaviour is refused with `attestation_failed`, the
 * credit restored, and — asserted with nock, which lets only loopback through — no other upstream
 * is called. The embedded default serves one confidential model, and `ENCLAVE_FAULT` makes its
 * enclave misbehave.
 */
import { createHash } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SuiGrpcClient } from '@mysten/sui/grpc'
import { createLocalJWKSet, decodeJwt, jwtVerify } from 'jose'
import nock from 'nock'
import OpenAI, { APIError } from 'openai'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createPayingFetch, paymentOf } from '../../src/client/index.js'
import { Attestation } from '../../src/index.js'
import {
  type EnclaveMisbehaviour,
  type SimulatedEnclave,
  type StartedLedger,
  startSimulatedEnclave,
  stubReply,
} from '../../src/testing/index.js'
import { loadConfig } from '../config.js'
import { type RunningGateway, startGateway } from '../server/server.js'
import { useTestGateway } from '../server/testHelpers.js'
import { nockVisibleFetch } from '../upstreams/nockTransport.js'
import { tokenCost } from './pricing.js'
import { estimatePromptTokens } from './request.js'
import { costOfUsage } from './testHelpers.js'

const openHost = 'http://open-upstream.test'
const model = 'confidential/llama'
const cached = 'confidential/cached'
const messages = [{ role: 'user' as const, content: 'Say hello' }]
// USDC per million tokens; at most 1 000 output tokens: a call reserves about 0.0016 USDC.
const pricing = { promptPerMillion: 1_200_000n, completionPerMillion: 1_600_000n }
const reservation = tokenCost(pricing, {
  promptTokens: estimatePromptTokens(messages),
  completionTokens: 1_000,
})

let enclave: SimulatedEnclave
let gateway: RunningGateway
let dataDir: string
let openCalls = 0
const unmatched: string[] = []

function confidentialModel(id: string, refreshMs: number, keyless = false) {
  return {
    id,
    pricing: { prompt: '1.2', completion: '1.6' },
    contextWindow: 131_072,
    maxOutputTokens: 1_000,
    privacy: 'confidential',
    keyless,
    upstream: {
      kind: 'confidential',
      baseUrl: enclave.baseUrl,
      quoteVerifier: { kind: 'tdx', rootCa: enclave.rootCa, collateral: enclave.collateral },
      gpu: { jwksUrl: enclave.gpuJwksUrl, issuer: enclave.gpuIssuer },
      allowedMeasurements: [enclave.measurement],
      refreshMs,
    },
  }
}

beforeAll(async () => {
  enclave = await startSimulatedEnclave()
  dataDir = mkdtempSync(join(tmpdir(), 'tollgate-confidential-'))
  nock.disableNetConnect()
  nock.enableNetConnect((host) => host.startsWith('127.0.0.1'))
  nock.emitter.on('no match', (request: { host?: string; hostname?: string }) => {
    const host = String(request.host ?? request.hostname)
    // Loopback passes through (the gateway, the enclave, the ledger); anything else is a leak.
    if (!host.startsWith('127.0.0.1')) unmatched.push(host)
  })
  // The open model's upstream: any call to it is counted (and must never happen here).
  nock(openHost)
    .persist()
    .post('/v1/chat/completions')
    .reply(200, () => {
      openCalls++
      return { id: 'x', object: 'chat.completion', model: 'open', choices: [] }
    })
  gateway = await startGateway({
    config: loadConfig({
      env: {},
      overrides: {
        port: 0,
        dataDir,
        emulatorLatencyMs: 0,
        logLevel: 'silent',
        inferenceModels: [
          {
            id: 'open-model',
            pricing: { prompt: '0.5', completion: '0.5' },
            contextWindow: 131_072,
            maxOutputTokens: 1_000,
            upstream: { kind: 'openai-compatible', baseUrl: `${openHost}/v1` },
          },
          // Attested before every request: a misbehaviour is met at once. Also keyless (paid per call).
          confidentialModel(model, 0, true),
          // Attested once a minute: only a key change makes it attest again.
          confidentialModel(cached, 60_000),
        ] as never,
      },
    }),
    // The real upstream transport, its connections made where nock sees (and counts) them.
    fetch: nockVisibleFetch(),
  })
})

afterAll(async () => {
  await gateway?.stop()
  await enclave?.stop()
  nock.cleanAll()
  nock.emitter.removeAllListeners('no match')
  nock.enableNetConnect()
  if (dataDir) rmSync(dataDir, { recursive: true, force: true })
})

beforeEach(() => {
  enclave.misbehave(undefined)
})

function client(apiKey: string): OpenAI {
  return new OpenAI({ apiKey, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
}

async function receiptOf(id: string) {
  const response = await fetch(`${enclave.baseUrl}/receipts/${id}`)
  return (await response.json()) as {
    model: string
    event_log: { type: string; wire_hash?: string }[]
  }
}

const sha256 = (bytes: Uint8Array) => `sha256:${createHash('sha256').update(bytes).digest('hex')}`
const chatCalls = () =>
  enclave.calls.filter((c) => c.method === 'POST' && c.path === '/v1/chat/completions').length

describe('a confidential model', () => {
  it('answers a buffered completion with x-receipt-id, its receipt verified', async () => {
    const { id, key } = await gateway.inference.keys.create({ credit: 10_000n })
    const { data, response } = await client(key)
      .chat.completions.create({ model, messages })
      .withResponse()
    expect(data.choices[0]?.message.content).toBe(stubReply('Say hello'))
    expect(data.model).toBe(model)
    const receiptId = response.headers.get('x-receipt-id')
    expect(receiptId).toMatch(/^rcpt_/)
    const receipt = await receiptOf(receiptId ?? '')
    expect(receipt.model).toBe(model)
    // Charged by the tokens the enclave reported.
    const cost = costOfUsage(pricing, data.usage)
    expect(cost).toBeLessThan(reservation)
    expect((await gateway.inference.keys.get(id))?.credit).toBe(10_000n - cost)
    expect(openCalls).toBe(0)
    expect(unmatched).toEqual([])
  })

  it('streams a completion byte for byte, with x-receipt-id', async () => {
    const { key } = await gateway.inference.keys.create({ credit: 10_000n })
    const { data: stream, response } = await client(key)
      .chat.completions.create({ model, messages, stream: true })
      .withResponse()
    let text = ''
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ''
    expect(text).toBe(stubReply('Say hello'))
    expect(response.headers.get('x-receipt-id')).toMatch(/^rcpt_/)

    // The bytes relayed are exactly the bytes the enclave's receipt hashes (wire_hash).
    const raw = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages, stream: true }),
    })
    const bytes = new Uint8Array(await raw.arrayBuffer())
    expect(new TextDecoder().decode(bytes).endsWith('data: [DONE]\n\n')).toBe(true)
    const receipt = await receiptOf(raw.headers.get('x-receipt-id') ?? '')
    const returned = receipt.event_log.find((e) => e.type === 'response.returned')
    expect(returned?.wire_hash).toBe(sha256(bytes))
    expect(openCalls).toBe(0)
  })

  it('attests again when the receipt key changes, and serves', async () => {
    const { key } = await gateway.inference.keys.create({ credit: 100_000n })
    await client(key).chat.completions.create({ model: cached, messages })
    const attestations = () => enclave.calls.filter((c) => c.path === '/v1/attestation').length
    const before = attestations()
    await client(key).chat.completions.create({ model: cached, messages })
    expect(attestations()).toBe(before) // the session is reused
    enclave.rotateKeys()
    const { response } = await client(key)
      .chat.completions.create({ model: cached, messages })
      .withResponse()
    expect(response.headers.get('x-receipt-id')).toMatch(/^rcpt_/)
    expect(attestations()).toBe(before + 1) // a fresh attestation for the new key
  })

  const attestationFaults: EnclaveMisbehaviour[] = [
    'bad-report-signature',
    'wrong-nonce',
    'stale-report',
    'measurement-not-allowed',
    'bad-gpu-token',
    'enclave-down',
  ]
  const answerFaults: EnclaveMisbehaviour[] = [
    'unattested-receipt-key',
    'tampered-receipt',
    'changed-response-bytes',
    'model-alias',
  ]

  for (const fault of [...attestationFaults, ...answerFaults]) {
    for (const stream of [false, true]) {
      it(`refuses ${stream ? 'a streamed' : 'a buffered'} call when the enclave misbehaves: ${fault}`, async () => {
        const { id, key } = await gateway.inference.keys.create({ credit: 10_000n })
        enclave.misbehave(fault)
        const chatsBefore = chatCalls()
        let error: unknown
        let text = ''
        try {
          if (stream) {
            const chunks = await client(key).chat.completions.create({
              model,
              messages,
              stream: true,
            })
            for await (const chunk of chunks) text += chunk.choices[0]?.delta.content ?? ''
          } else {
            await client(key).chat.completions.create({ model, messages })
          }
        } catch (caught) {
          error = caught
        }
        expect(error).toBeInstanceOf(APIError)
        expect((error as APIError).code).toBe('attestation_failed')
        if (!stream || attestationFaults.includes(fault) || fault === 'model-alias') {
          // Refused before a byte of the answer was sent.
          expect((error as APIError).status).toBe(502)
          expect(text).toBe('')
        }
        if (attestationFaults.includes(fault)) expect(chatCalls()).toBe(chatsBefore)
        // Credit restored; nothing went to any other upstream.
        expect((await gateway.inference.keys.get(id))?.credit).toBe(10_000n)
        expect(openCalls).toBe(0)
        expect(unmatched).toEqual([])
      })
    }
  }

  it('still serves the open model through its own upstream (the nock stand-in counts it)', async () => {
    const { key } = await gateway.inference.keys.create({ credit: 10_000n })
    await client(key).chat.completions.create({ model: 'open-model', messages })
    expect(openCalls).toBe(1)
    openCalls = 0
  })
})

describe('the /v1/aci routes', () => {
  const get = async (path: string) => {
    const response = await fetch(`${gateway.url}${path}`)
    // biome-ignore lint/suspicious/noExplicitAny: the test reads the JSON answers' fields.
    return { status: response.status, body: (await response.json()) as Record<string, any> }
  }

  it('keep each receipt verified with the bytes relayed and the session whose keys verified it', async () => {
    const { id: keyId, key } = await gateway.inference.keys.create({ credit: 10_000n })
    const raw = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages, stream: true }),
    })
    const bytes = new Uint8Array(await raw.arrayBuffer())
    const id = raw.headers.get('x-receipt-id') ?? ''
    const stored = await get(`/v1/aci/receipts/${id}`)
    expect(stored.status).toBe(200)
    expect(stored.body).toMatchObject({
      object: 'aci.receipt',
      id,
      model,
      relayed: { response_hash: sha256(bytes) },
      receipt: { receipt_id: id, model },
    })
    const session = await get(`/v1/aci/sessions/${stored.body.session_id}`)
    expect(session.status).toBe(200)
    expect(session.body).toMatchObject({
      object: 'aci.session',
      model,
      workload_id: enclave.workloadId,
      measurement: enclave.measurement,
      policy: {
        tee_type: 'intel-tdx',
        quote_verifier: { kind: 'tdx', root_ca: enclave.rootCa },
        gpu: { jwks_url: enclave.gpuJwksUrl },
        allowed_measurements: [enclave.measurement],
      },
    })
    // Anyone can check it with the public verifiers: the report against its nonce, then the
    // receipt against the keys of that report only.
    const report = await Attestation.verifyReport(session.body.report, {
      nonce: session.body.nonce,
      quoteVerifier: Attestation.tdxQuoteVerifier({
        rootCa: enclave.rootCa,
        collateral: enclave.collateral,
      }),
      allowedMeasurements: [enclave.measurement],
      now: Date.parse(session.body.attested_at),
    })
    expect(report.status).toBe('verified')
    if (report.status !== 'verified') return
    const receipt = await Attestation.verifyReceipt(stored.body.receipt, {
      receiptKeys: report.receiptKeys,
      workloadId: report.workloadId,
      keysetDigest: report.keysetDigest,
      responseBytes: bytes,
      model,
    })
    expect(receipt.status).toBe('verified')

    // The gateway's own receipt binds what was paid to this answer, under its published JWKS.
    const jwks = await (await fetch(`${gateway.url}/.well-known/tollgate-receipt-keys.json`)).json()
    expect(jwks.keys).toEqual([
      expect.objectContaining({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig' }),
    ])
    expect(jwks.keys[0]).not.toHaveProperty('d')
    const { payload, protectedHeader } = await jwtVerify(
      stored.body.gateway_receipt,
      createLocalJWKSet(jwks),
      { typ: 'tollgate-receipt+jwt', algorithms: ['EdDSA'] },
    )
    expect(protectedHeader.kid).toBe(jwks.keys[0].kid)
    expect(payload).toMatchObject({
      sub: id,
      model,
      enclave_receipt: { id },
      response_hash: sha256(bytes),
      attestation: { session_id: stored.body.session_id, workload_id: enclave.workloadId },
      // What was reserved for the call when the answer was signed.
      payment: { kind: 'credit', key_id: keyId, amount: reservation.toString() },
    })
    expect((await get('/v1/aci/receipts/rcpt_unknown')).body.error.code).toBe('receipt_not_found')
    expect((await get('/v1/aci/sessions/aci_unknown')).status).toBe(404)
  })

  it('answer the attestation status, and a fresh report bound to the caller’s nonce', async () => {
    const status = await get(`/v1/aci/attestation?model=${encodeURIComponent(model)}`)
    expect(status.body).toMatchObject({
      object: 'aci.attestation',
      model,
      enforced: true,
      verified: true,
      tee_type: 'intel-tdx',
      workload_id: enclave.workloadId,
      tcb_status: 'UpToDate',
      signing_key: expect.stringMatching(/^rk-/),
    })
    const nonce = 'ab'.repeat(32)
    const withNonce = await get(
      `/v1/aci/attestation?model=${encodeURIComponent(model)}&nonce=${nonce}`,
    )
    expect(withNonce.body.report_verification).toEqual({ status: 'verified' })
    const own = await Attestation.verifyReport(withNonce.body.report, {
      nonce,
      quoteVerifier: Attestation.tdxQuoteVerifier({
        rootCa: enclave.rootCa,
        collateral: enclave.collateral,
      }),
      allowedMeasurements: [enclave.measurement],
    })
    expect(own.status).toBe('verified')

    enclave.misbehave('wrong-nonce')
    const refused = await get(
      `/v1/aci/attestation?model=${encodeURIComponent(model)}&nonce=${nonce}`,
    )
    expect(refused.body).toMatchObject({
      verified: false,
      failure: { code: 'nonce_mismatch' },
      report_verification: { status: 'failed', code: 'nonce_mismatch' },
    })
    enclave.misbehave(undefined)

    expect((await get('/v1/aci/attestation')).status).toBe(400) // two confidential models here
    expect(
      (await get(`/v1/aci/attestation?model=${encodeURIComponent(model)}&nonce=xyz`)).status,
    ).toBe(400)
    expect((await get('/v1/aci/attestation?model=open-model')).status).toBe(404)
  })
})

describe('a confidential model on the keyless route', () => {
  const balance = async (address: string) => {
    const emulator = gateway.emulator as StartedLedger
    const ledger = new SuiGrpcClient({ network: 'mainnet', baseUrl: emulator.url })
    const { balance } = await ledger.core.getBalance({
      owner: address,
      coinType: emulator.usdcType,
    })
    return BigInt(balance.balance)
  }
  function payer() {
    const emulator = gateway.emulator as StartedLedger
    const signer = emulator.createTestWallet({ usdc: '1', sui: '1' })
    const pay = createPayingFetch({
      signer,
      ledger: emulator.url,
      maxPrice: '0.05',
      limits: { file: join(mkdtempSync(join(dataDir, 'wallet-')), 'spending.json') },
    })
    const call = () =>
      pay(`${gateway.url}/open/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model, messages, stream: true }),
      })
    return { address: signer.toSuiAddress(), call }
  }
  const readAll = async (response: Response) => {
    let text = ''
    const reader = (response.body as ReadableStream<Uint8Array>).getReader()
    const decoder = new TextDecoder()
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        text += decoder.decode(value, { stream: true })
      }
    } catch {
      // the response fails after its error event (so that the paywall refunds)
    }
    return text
  }

  it('is paid per call, and its gateway receipt names the settlement', async () => {
    const { call } = payer()
    const response = await call()
    expect(response.status).toBe(200)
    const text = await readAll(response)
    expect(text).toMatch(/data: \[DONE\]\n\n$/)
    const id = response.headers.get('x-receipt-id') ?? ''
    const stored = await (await fetch(`${gateway.url}/v1/aci/receipts/${id}`)).json()
    const claims = decodeJwt(stored.gateway_receipt)
    const digest = paymentOf(response)?.digest
    expect(claims.payment).toEqual({ kind: 'payment', digest, amount: '50000' })
    // The buyer binds the receipt check to its settlement digest and the bytes it received.
    // 200 once anchored, 202 while the anchor's transaction is still on its way (a loaded ledger).
    await expect
      .poll(
        async () => (await fetch(`${gateway.url}/v1/aci/anchor/${id}`, { method: 'POST' })).status,
        {
          timeout: 15_000,
          interval: 200,
        },
      )
      .toBe(200)
    const verify = (expectPayment: { digest: string }) =>
      Attestation.verifyInferenceReceipt(id, {
        inferenceUrl: gateway.url,
        allowTestRoot: true,
        expectPayment,
        responseBytes: new TextEncoder().encode(text),
      })
    expect(await verify({ digest: digest ?? '' })).toMatchObject({
      status: 'verified',
      bound: { payment: true, responseBytes: true },
    })
    const other = `${(digest ?? '').slice(0, -1)}${digest?.endsWith('2') ? '3' : '2'}`
    expect(await verify({ digest: other })).toMatchObject({ code: 'payment_mismatch' })
  })

  it('is refunded when the answer does not verify', async () => {
    const { address, call } = payer()
    const before = await balance(address)
    enclave.misbehave('changed-response-bytes')
    const response = await call()
    const text = await readAll(response)
    expect(text).toContain('"attestation_failed"')
    expect(text).not.toContain('[DONE]')
    const deadline = Date.now() + 10_000
    while ((await balance(address)) !== before && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    expect(await balance(address)).toBe(before)
    expect(openCalls).toBe(0)
  })
})

describe('the embedded default', () => {
  const embedded = useTestGateway({ env: { ENCLAVE_FAULT: 'wrong-nonce' } })

  it('lists one confidential model, refused while ENCLAVE_FAULT makes its enclave misbehave', async () => {
    const { key } = await embedded.inference.keys.create({ credit: 10_000n })
    const openai = new OpenAI({ apiKey: key, baseURL: `${embedded.url}/v1`, maxRetries: 0 })
    const list = await openai.models.list()
    const confidential = list.data.filter(
      (m) => (m as unknown as { privacy: string }).privacy === 'confidential',
    )
    expect(confidential.map((m) => m.id)).toEqual(['confidential/llama-3.3-70b'])
    const refused = await openai.chat.completions
      .create({ model: 'confidential/llama-3.3-70b', messages })
      .catch((error: unknown) => error)
    expect((refused as APIError).code).toBe('attestation_failed')
    embedded.inference.enclave?.misbehave(undefined)
    await embedded.inference.api.confidential.get('confidential/llama-3.3-70b')?.attestor.refresh()
    const answer = await openai.chat.completions.create({
      model: 'confidential/llama-3.3-70b',
      messages,
    })
    expect(answer.choices[0]?.message.content).toBe(stubReply('Say hello'))
  })
})

describe('stored receipts', () => {
  it('outlive the enclave and a gateway restart', async () => {
    const { key } = await gateway.inference.keys.create({ credit: 10_000n })
    const { response } = await client(key)
      .chat.completions.create({ model, messages })
      .withResponse()
    const id = response.headers.get('x-receipt-id') ?? ''
    const before = await (await fetch(`${gateway.url}/v1/aci/receipts/${id}`)).json()

    // The enclave goes away (and with it its own copy), then the gateway restarts on its store.
    await enclave.stop()
    await gateway.stop()
    gateway = await startGateway({
      config: loadConfig({
        env: {},
        overrides: {
          port: 0,
          dataDir,
          emulatorLatencyMs: 0,
          logLevel: 'silent',
          inferenceModels: [confidentialModel(model, 0)] as never,
        },
      }),
      fetch: nockVisibleFetch(),
    })
    const after = await fetch(`${gateway.url}/v1/aci/receipts/${id}`)
    expect(after.status).toBe(200)
    expect(await after.json()).toEqual(before)
    // The signing key survived too: the gateway receipt made before the restart still verifies.
    const jwks = await (await fetch(`${gateway.url}/.well-known/tollgate-receipt-keys.json`)).json()
    await expect(
      jwtVerify(before.gateway_receipt, createLocalJWKSet(jwks), { algorithms: ['EdDSA'] }),
    ).resolves.toBeDefined()
    const session = await fetch(`${gateway.url}/v1/aci/sessions/${before.session_id}`)
    expect(session.status).toBe(200)
    // And with no enclave, a confidential call is refused, never served elsewhere.
    const refused = await client(key)
      .chat.completions.create({ model, messages })
      .catch((error: unknown) => error)
    expect((refused as APIError).code).toBe('attestation_failed')
    expect(openCalls).toBe(0)
  })
})
