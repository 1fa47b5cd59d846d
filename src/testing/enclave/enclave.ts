/**
 * A simulated confidential ("aci/1") model upstream: the deterministic chat of
 * {@link startModelUpstream}, buffered and streamed, served by a simulated enclave that publishes
 * attestation reports (an Intel TDX v4 quote signed under a test PKI whose root CA and DCAP
 * collateral it hands out, a GPU attestation token signed by a test service whose JWKS it serves,
 * Ed25519 keyset with the receipt key, nonce-bound report data) and signs a receipt for every
 * completion over the exact request and response bytes (`x-receipt-id` header). It can be told to
 * misbehave, one way at a time, to test what a verifier or gateway does then. It proves nothing
 * about hardware: its quotes verify only under its own test root.
 *
 * Routes (under `baseUrl`): `GET /attestation?nonce=<hex>`, `POST /chat/completions`,
 * `GET /receipts/{id}`, `GET /models`, `GET /gpu/jwks` (the test GPU service's key set).
 *
 * @module
 */
import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { secp256k1 } from '@noble/curves/secp256k1.js'
import {
  bytesToHex,
  endorsementMessage,
  keysetDigestOf,
  reportDataOf,
  sha256Tag,
  workloadIdOf,
} from '../../attestation/digest.js'
import type { TcbStatus } from '../../attestation/quote.js'
import { receiptSigningInput } from '../../attestation/receipt.js'
import { TDX_TEE_TYPE, type TdxCollateral, tdxMeasurementOf } from '../../attestation/tdx.js'
import { listenOnLoopback } from '../loopback.js'
import { stubCreated } from '../upstreams/handlers.js'
import {
  asksStreamUsage,
  chatCompletionEvents,
  chatCompletionObject,
  modelCompletion,
} from '../upstreams/model.js'
import { createTestGpuAttestation, TEST_GPU_ISSUER } from './gpu.js'
import { createTestTdxPlatform, registersHex, simulatedRegisters } from './tdx.js'

/** Ways the simulated enclave can misbehave (one at a time). */
export type EnclaveMisbehaviour =
  /** The quote's signature (by its attestation key) does not verify: a bad quote. */
  | 'bad-report-signature'
  /** The GPU attestation token is signed by a key outside the GPU service's JWKS. */
  | 'bad-gpu-token'
  /** The report data is bound to another nonce than the one asked for. */
  | 'wrong-nonce'
  /** The report is past its freshness window. */
  | 'stale-report'
  /** The quote reports a TD (MRTD) other than the one of {@link SimulatedEnclave.measurement}. */
  | 'measurement-not-allowed'
  /** Receipts are signed by a key outside the attested keyset (which the receipt names). */
  | 'unattested-receipt-key'
  /** A receipt field is changed after signing. */
  | 'tampered-receipt'
  /** The response bytes sent differ from the bytes the receipt hashes. */
  | 'changed-response-bytes'
  /** Another model answers (the response and receipt name it). */
  | 'model-alias'
  /** Every connection is cut without an answer. */
  | 'enclave-down'

/** Options of {@link startSimulatedEnclave}. */
export type SimulatedEnclaveOptions = {
  /** Port on 127.0.0.1. Default 0 (any free port). */
  port?: number | undefined
  /** The misbehaviour at start. Default none; change it with `misbehave()`. */
  misbehaviour?: EnclaveMisbehaviour | undefined
  /** Receipt signature form. Default `'nested'` (`signature: {algo,key_id,value}`). */
  receiptFormat?: 'nested' | 'flat' | undefined
  /** Receipt signing algorithm. Default `'ed25519'`; `'ecdsa-secp256k1'` is the legacy form. */
  receiptAlgo?: 'ed25519' | 'ecdsa-secp256k1' | undefined
  /** TCB status of the platform in the collateral's TCB info. Default `'UpToDate'`. */
  tcbStatus?: TcbStatus | undefined
  /** How long a report stays fresh, ms. Default 5 minutes. */
  reportTtlMs?: number | undefined
  /** Delay between streamed tokens, ms. Default 0. */
  tokenIntervalMs?: number | undefined
  /** The model id reported when aliasing (`model-alias`). Default `'alias-model'`. */
  aliasModel?: string | undefined
}

/** A call the enclave received (no bodies). */
export type EnclaveCall = { method: string; path: string; status: number }

/** A running simulated enclave. */
export type SimulatedEnclave = {
  /** `http://127.0.0.1:<port>/v1`. */
  baseUrl: string
  /** The test root CA certificate (PEM): give it to `tdxQuoteVerifier` as `rootCa`. */
  rootCa: string
  /** DCAP collateral signed under the test root (valid 30 days from start). */
  collateral: TdxCollateral
  /** The test GPU attestation service's JWKS URL (for `jwksGpuTokenVerifier`). */
  gpuJwksUrl: string
  /** The issuer of its GPU tokens. */
  gpuIssuer: string
  /**
   * The measurement (hex, 48 bytes) of the simulated workload (`tdxMeasurementOf` its MRTD and
   * RTMRs): put it on the allow-list.
   */
  measurement: string
  /** The workload id of the attested identity key. */
  workloadId: string
  calls: readonly EnclaveCall[]
  /** Switches the misbehaviour (`undefined`: behave). */
  misbehave(misbehaviour: EnclaveMisbehaviour | undefined): void
  /** Rotates the receipt signing key (a new keyset epoch and digest). */
  rotateKeys(): void
  stop(): Promise<void>
}

type Ed25519Key = { privateKey: KeyObject; jwk: { kty: 'OKP'; crv: 'Ed25519'; x: string } }

function ed25519(): Ed25519Key {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519')
  const { x } = publicKey.export({ format: 'jwk' })
  return { privateKey, jwk: { kty: 'OKP', crv: 'Ed25519', x: x ?? '' } }
}

const signHex = (key: KeyObject, bytes: Uint8Array) => bytesToHex(sign(null, bytes, key))

/**
 * Starts the simulated enclave on 127.0.0.1.
 *
 * @example
 * ```ts
 * const enclave = await startSimulatedEnclave()
 * const verifier = tdxQuoteVerifier({ rootCa: enclave.rootCa, collateral: enclave.collateral })
 * // … later
 * await enclave.stop()
 * ```
 */
export async function startSimulatedEnclave(
  options: SimulatedEnclaveOptions = {},
): Promise<SimulatedEnclave> {
  const platform = createTestTdxPlatform({ tcbStatus: options.tcbStatus ?? 'UpToDate' })
  const gpu = createTestGpuAttestation()
  const identity = ed25519()
  const rogue = ed25519()
  const registers = simulatedRegisters('tollgate simulated enclave v1')
  const measurement = tdxMeasurementOf(registersHex(registers))
  const workloadId = workloadIdOf(identity.jwk)
  let misbehaviour = options.misbehaviour
  let epoch = 0
  let receiptKey = ed25519()
  const legacy = options.receiptAlgo === 'ecdsa-secp256k1'
  let legacyKey = secp256k1.utils.randomSecretKey()
  const receiptKeyEntry = () =>
    legacy
      ? {
          key_id: `rk-${epoch}`,
          algo: 'ecdsa-secp256k1',
          public_key: bytesToHex(secp256k1.getPublicKey(legacyKey)),
        }
      : { key_id: `rk-${epoch}`, algo: 'ed25519', public_key: receiptKey.jwk }
  // Legacy ECDSA: sha256 of the bytes, 65 bytes r‖s‖v.
  const signReceipt = (key: Ed25519Key, bytes: Uint8Array) => {
    if (!legacy || key === rogue) return signHex(key.privateKey, bytes)
    const recovered = secp256k1.sign(bytes, legacyKey, { prehash: true, format: 'recovered' })
    return bytesToHex(new Uint8Array([...recovered.subarray(1), recovered[0] ?? 0]))
  }
  const calls: EnclaveCall[] = []
  const receipts = new Map<string, unknown>()
  const ttl = options.reportTtlMs ?? 300_000

  const keyset = () => ({
    workload_identity: { public_key: identity.jwk },
    keyset_epoch: { version: epoch, not_after: new Date(Date.now() + 86_400_000).toISOString() },
    receipt_signing_keys: [receiptKeyEntry()],
  })
  let currentKeyset = keyset()

  async function report(nonce: string) {
    const keysetDigest = keysetDigestOf(currentKeyset)
    const boundNonce = misbehaviour === 'wrong-nonce' ? bytesToHex(randomBytes(32)) : nonce
    const reportData = new Uint8Array(64)
    reportData.set(reportDataOf({ workloadId, keysetDigest, nonce: boundNonce }))
    const quote = platform.quote({
      registers:
        misbehaviour === 'measurement-not-allowed'
          ? { ...registers, mrtd: createHash('sha384').update('some other workload').digest() }
          : registers,
      reportData,
      badSignature: misbehaviour === 'bad-report-signature',
    })
    const gpuToken = await gpu.token(boundNonce, {
      ttlMs: ttl,
      rogue: misbehaviour === 'bad-gpu-token',
    })
    const now = misbehaviour === 'stale-report' ? Date.now() - 2 * ttl : Date.now()
    return {
      api_version: 'aci/1',
      workload_id: workloadId,
      workload_keyset_digest: keysetDigest,
      attestation: {
        vendor: 'tollgate-simulator',
        tee_type: TDX_TEE_TYPE,
        workload_keyset: currentKeyset,
        report_data: bytesToHex(reportData),
        keyset_endorsement: {
          algo: 'ed25519',
          value: signHex(identity.privateKey, endorsementMessage(keysetDigest)),
        },
        source_provenance: {
          repo_url: 'https://example.invalid/tollgate-simulated-enclave',
          repo_commit: '0'.repeat(40),
          image_digest: `sha256:${measurement.slice(0, 64)}`,
        },
        freshness: {
          fetched_at: new Date(now).toISOString(),
          stale_after: new Date(now + ttl).toISOString(),
        },
        evidence: { quote: bytesToHex(quote), gpu_token: gpuToken },
      },
    }
  }

  function makeReceipt(fields: {
    id: string
    chatId: string
    model: string
    requestBytes: Uint8Array
    responseBytes: Uint8Array
  }) {
    const keysetDigest = keysetDigestOf(currentKeyset)
    const unattested = misbehaviour === 'unattested-receipt-key'
    const key = unattested ? rogue : receiptKey
    const keyId = unattested ? 'rk-rogue' : `rk-${epoch}`
    const unsigned = {
      api_version: 'aci/1',
      receipt_id: fields.id,
      chat_id: fields.chatId,
      model: fields.model,
      workload_id: workloadId,
      workload_keyset_digest: keysetDigest,
      endpoint: '/v1/chat/completions',
      method: 'POST',
      served_at: new Date().toISOString(),
      event_log: [
        { seq: 0, type: 'request.received', body_hash: sha256Tag(fields.requestBytes) },
        { seq: 1, type: 'response.returned', wire_hash: sha256Tag(fields.responseBytes) },
      ],
      ...(unattested ? { public_key: rogue.jwk } : {}),
    }
    let receipt: Record<string, unknown>
    if (options.receiptFormat === 'flat') {
      const draft = { ...unsigned, key_id: keyId, signature: '' }
      const input = receiptSigningInput(draft as never)
      receipt = { ...unsigned, key_id: keyId, signature: signReceipt(key, input) }
    } else {
      const algo = legacy && !unattested ? 'ecdsa-secp256k1' : 'ed25519'
      const draft = { ...unsigned, signature: { algo, key_id: keyId, value: '00' } }
      const input = receiptSigningInput(draft as never)
      receipt = {
        ...draft,
        signature: { ...draft.signature, value: signReceipt(key, input) },
      }
    }
    if (misbehaviour === 'tampered-receipt') receipt.model = `${fields.model}-tampered`
    return receipt
  }

  function send(res: ServerResponse, status: number, body: Uint8Array, type: string) {
    res.writeHead(status, { 'content-type': type, 'content-length': String(body.byteLength) })
    res.end(body)
  }
  const json = (res: ServerResponse, status: number, value: unknown) =>
    send(res, status, Buffer.from(JSON.stringify(value)), 'application/json')
  const error = (res: ServerResponse, status: number, message: string) =>
    json(res, status, {
      error: { message, type: 'invalid_request_error', code: null, param: null },
    })

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://enclave')
    const method = req.method ?? 'GET'
    const record = (status: number) => calls.push({ method, path: url.pathname, status })
    if (misbehaviour === 'enclave-down') {
      record(0)
      req.socket.destroy()
      return
    }
    const chunks: Buffer[] = []
    let size = 0
    for await (const chunk of req) {
      size += (chunk as Buffer).byteLength
      if (size > 4 * 1024 * 1024) {
        record(413)
        return error(res, 413, 'request too large')
      }
      chunks.push(chunk as Buffer)
    }
    if (method === 'GET' && url.pathname === '/v1/attestation') {
      const nonce = url.searchParams.get('nonce') ?? ''
      if (!/^(?:[0-9a-f]{2}){16,64}$/.test(nonce)) {
        record(400)
        return error(res, 400, 'nonce must be 16 to 64 bytes of lowercase hex')
      }
      record(200)
      return json(res, 200, await report(nonce))
    }
    if (method === 'GET' && url.pathname === '/v1/gpu/jwks') {
      record(200)
      return json(res, 200, gpu.jwks)
    }
    const receiptMatch = /^\/v1\/receipts\/([A-Za-z0-9_-]{1,128})$/.exec(url.pathname)
    if (method === 'GET' && receiptMatch) {
      const receipt = receipts.get(receiptMatch[1] ?? '')
      record(receipt ? 200 : 404)
      return receipt ? json(res, 200, receipt) : error(res, 404, 'no such receipt')
    }
    if (method === 'GET' && url.pathname === '/v1/models') {
      record(200)
      return json(res, 200, {
        object: 'list',
        data: [
          { id: 'confidential-model', object: 'model', created: stubCreated, owned_by: 'tee' },
        ],
      })
    }
    if (method !== 'POST' || url.pathname !== '/v1/chat/completions') {
      record(404)
      return error(res, 404, 'not found')
    }
    const requestBytes = Buffer.concat(chunks)
    let body: Record<string, unknown>
    try {
      const parsed = JSON.parse(requestBytes.toString('utf8')) as unknown
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error()
      body = parsed as Record<string, unknown>
    } catch {
      record(400)
      return error(res, 400, 'the body must be a JSON object')
    }
    const requested = typeof body.model === 'string' ? body.model : 'confidential-model'
    const model = misbehaviour === 'model-alias' ? (options.aliasModel ?? 'alias-model') : requested
    const completion = modelCompletion(body)
    const chatId = `chatcmpl-${createHash('sha256').update(requestBytes).digest('hex').slice(0, 24)}`
    const receiptId = `rcpt_${randomBytes(12).toString('hex')}`
    const finishReceipt = (responseBytes: Uint8Array) => {
      receipts.set(
        receiptId,
        makeReceipt({ id: receiptId, chatId, model, requestBytes, responseBytes }),
      )
    }
    const changed = misbehaviour === 'changed-response-bytes'
    record(200)
    if (body.stream !== true) {
      const bytes = Buffer.from(JSON.stringify(chatCompletionObject(chatId, model, completion)))
      finishReceipt(bytes)
      res.setHeader('x-receipt-id', receiptId)
      return send(
        res,
        200,
        changed ? Buffer.concat([bytes, Buffer.from(' ')]) : bytes,
        'application/json',
      )
    }
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-receipt-id': receiptId,
    })
    const events = chatCompletionEvents(chatId, model, completion, {
      usage: asksStreamUsage(body),
    })
    const wire: Buffer[] = []
    for (const [index, event] of events.entries()) {
      if (index > 1 && options.tokenIntervalMs) {
        await new Promise((resolve) => setTimeout(resolve, options.tokenIntervalMs))
      }
      const bytes = Buffer.from(event)
      wire.push(bytes)
      // Receipt is stored before the last event, so it exists once a client has read [DONE].
      if (index === events.length - 1) finishReceipt(Buffer.concat(wire))
      res.write(changed && index === 1 ? Buffer.from(`: changed\n\n${event}`) : bytes)
    }
    res.end()
  }

  const { server, port } = await listenOnLoopback(handle, options.port, 30_000)
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    rootCa: platform.rootCa,
    collateral: platform.collateral,
    gpuJwksUrl: `http://127.0.0.1:${port}/v1/gpu/jwks`,
    gpuIssuer: TEST_GPU_ISSUER,
    measurement,
    workloadId,
    calls,
    misbehave(next) {
      misbehaviour = next
    },
    rotateKeys() {
      epoch++
      receiptKey = ed25519()
      legacyKey = secp256k1.utils.randomSecretKey()
      currentKeyset = keyset()
    },
    stop() {
      return new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
    },
  }
}
