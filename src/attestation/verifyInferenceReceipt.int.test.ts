/**
 * `verifyInferenceReceipt` against the gateway's embedded default (its confidential model served by
 * the simulated enclave, anchors on the ledger emulator): a streamed confidential answer verifies at
 * every step through the injected fetch; a gateway receipt swapped for another one the gateway
 * signed, or one byte changed in what the anchor commits, fails at the `anchor` step; a pinned
 * quote verifier that rejects the quote fails at `attestation_valid`; an oversized document is no
 * document. The simulated enclave's test root fails (`test_root`) unless allowed, also when its hash
 * is pinned; buyer B's key, a call id or digest that is not the answer's, or B's received bytes make
 * A's receipt fail (`payment_mismatch`, `received_bytes_mismatch`), streamed and buffered; a receipt
 * not anchored yet is `anchor_pending` with every other step passed. A verifier of many receipts (`createInferenceReceiptVerifier`) builds the quote verifier
 * once and checks a session's quote once (counted by the quote verifier it is given), checks a
 * report with one changed byte afresh, and a remembered verdict again once it no longer holds.
 */
import { createHash } from 'node:crypto'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { importJWK, SignJWT } from 'jose'
import { describe, expect, it } from 'vitest'
import { useTestGateway } from '../../reference-gateway/server/testHelpers.js'
import { createLedger } from '../ledger/ledger.js'
import type { QuoteVerifier } from './quote.js'
import { publishedQuoteVerifier } from './sessionVerdicts.js'
import {
  createInferenceReceiptVerifier,
  gatewayReceiptHash,
  type VerifyInferenceReceiptOptions,
  verifyInferenceReceipt,
} from './verifyInferenceReceipt.js'

const model = 'confidential/llama-3.3-70b'
const gateway = useTestGateway({
  config: {
    // The anchor worker runs only when asked (POST /v1/aci/anchor/{id}).
    refundIntervalMs: 3_600_000,
  },
})

/** A streamed confidential answer's receipt id, its anchor queued (not submitted yet). */
async function answer(): Promise<string> {
  return (await call()).id
}

/** A confidential answer on a fresh key: its receipt id, the bytes received and the key's id. */
async function call(
  stream = true,
  content = 'Hi',
): Promise<{ id: string; bytes: Uint8Array; keyId: string; callId: string }> {
  const { key, id: keyId } = await gateway.inference.keys.create({ credit: 10_000n })
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream, messages: [{ role: 'user', content }] }),
  })
  expect(response.status).toBe(200)
  const bytes = new Uint8Array(await response.arrayBuffer())
  if (stream) expect(new TextDecoder().decode(bytes).endsWith('data: [DONE]\n\n')).toBe(true)
  const callId = response.headers.get('x-call-id') ?? ''
  return { id: response.headers.get('x-receipt-id') ?? '', bytes, keyId, callId }
}

async function anchorNow(id: string) {
  const anchored = await fetch(`${gateway.url}/v1/aci/anchor/${id}`, { method: 'POST' })
  expect(anchored.status).toBe(200)
}
describe('verifyInferenceReceipt', { timeout: 60_000 }, () => {
  it('verifies a streamed confidential answer at every step, through the injected fetch', async () => {
    const id = await answer()
    await anchorNow(id)
    const fetched: string[] = []
    const result = await verifyInferenceReceipt(id, {
      inferenceUrl: `${gateway.url}/v1`,
      ledger: createLedger({ url: gateway.ledger.url }),
      allowTestRoot: true,
      fetch: (input, init) => {
        fetched.push(new URL(String(input)).pathname)
        return fetch(input, init)
      },
    })
    expect(result.status).toBe('verified')
    expect(result.steps.map((s) => [s.step, s.status])).toEqual(
      [
        'receipt_fetched',
        'session_fetched',
        'attestation_valid',
        'workload',
        'signature',
        'request_hash',
        'response_hash',
        'gateway_receipt',
        'anchor',
      ].map((step) => [step, 'passed']),
    )
    expect(result.policySource).toBe('gateway')
    expect(result.testRoot).toBe(true)
    expect(result.notProven.length).toBeGreaterThan(3)
    expect(fetched).toEqual([
      `/v1/aci/receipts/${id}`,
      expect.stringMatching(/^\/v1\/aci\/sessions\/aci_/),
      '/.well-known/tollgate-receipt-keys.json',
      `/v1/aci/anchor/${id}`,
    ])
  })

  it('fails at the anchor when the gateway receipt is swapped for another it signed', async () => {
    const id = await answer()
    await anchorNow(id)
    const db = new Database(join(gateway.dataDir, 'gateway.db'), { readonly: true })
    const key = db.prepare('SELECT kid, private_jwk FROM aci_signing_keys ORDER BY kid').get() as {
      kid: string
      private_jwk: string
    }
    const row = db.prepare('SELECT gateway_receipt FROM aci_receipts WHERE id = ?').get(id) as {
      gateway_receipt: string
    }
    db.close()
    // The same claims signed again an hour later: a valid gateway receipt, but not the anchored one.
    const claims = JSON.parse(
      Buffer.from(row.gateway_receipt.split('.')[1] ?? '', 'base64url').toString(),
    ) as { iat: number }
    const swapped = await new SignJWT({ ...claims, iat: claims.iat + 3600 })
      .setProtectedHeader({ alg: 'EdDSA', kid: key.kid, typ: 'tollgate-receipt+jwt' })
      .sign(await importJWK(JSON.parse(key.private_jwk), 'EdDSA'))
    expect(swapped).not.toBe(row.gateway_receipt)
    const result = await verifyInferenceReceipt(id, {
      inferenceUrl: gateway.url,
      allowTestRoot: true,
      fetch: async (input, init) => {
        const response = await fetch(input, init)
        if (!String(input).endsWith(`/receipts/${id}`)) return response
        const body = (await response.json()) as Record<string, unknown>
        return Response.json({ ...body, gateway_receipt: swapped })
      },
    })
    expect(result.steps.find((s) => s.step === 'gateway_receipt')?.status).toBe('passed')
    expect(result).toMatchObject({
      status: 'failed',
      failedStep: 'anchor',
      code: 'anchor_mismatch',
    })
  })

  it('fails at the anchor when one byte of the anchored gateway receipt hash changed', async () => {
    const id = await answer()
    const db = new Database(join(gateway.dataDir, 'gateway.db'))
    const { hash } = db
      .prepare('SELECT gateway_receipt_hash AS hash FROM aci_anchors WHERE receipt_id = ?')
      .get(id) as { hash: string }
    const { jws } = db
      .prepare('SELECT gateway_receipt AS jws FROM aci_receipts WHERE id = ?')
      .get(id) as { jws: string }
    expect(hash).toBe(gatewayReceiptHash(jws))
    const flipped = `${hash.slice(0, -1)}${hash.endsWith('0') ? '1' : '0'}`
    db.prepare('UPDATE aci_anchors SET gateway_receipt_hash = ? WHERE receipt_id = ?').run(
      flipped,
      id,
    )
    db.close()
    await anchorNow(id)
    const result = await verifyInferenceReceipt(id, {
      inferenceUrl: gateway.url,
      allowTestRoot: true,
    })
    expect(result).toMatchObject({
      status: 'failed',
      failedStep: 'anchor',
      code: 'anchor_mismatch',
    })
  })

  it('fails loudly on the simulated enclave’s test root unless it is allowed', async () => {
    const id = await answer()
    await anchorNow(id)
    const refused = await verifyInferenceReceipt(id, { inferenceUrl: gateway.url })
    expect(refused).toMatchObject({
      status: 'failed',
      failedStep: 'attestation_valid',
      code: 'test_root',
      testRoot: false,
    })
    expect(refused.steps[2]?.detail).toMatch(/TEST root CA .*proves nothing about the hardware/)
    expect(refused.steps.slice(3).every((s) => s.status === 'skipped')).toBe(true)
    // Pinning the test root's own hash is not an allowance: a test root proves nothing.
    const published = (await (await fetch(`${gateway.url}/v1/aci/receipts/${id}`)).json()) as {
      session_id: string
    }
    const session = (await (
      await fetch(`${gateway.url}/v1/aci/sessions/${published.session_id}`)
    ).json()) as { policy: { quote_verifier: { root_ca: string } } }
    const der = Buffer.from(
      session.policy.quote_verifier.root_ca.replace(/-----[A-Z ]+-----|\s/g, ''),
      'base64',
    )
    const rootCaSha256 = createHash('sha256').update(der).digest('hex')
    const pinned = await verifyInferenceReceipt(id, {
      inferenceUrl: gateway.url,
      policy: { rootCaSha256 },
    })
    expect(pinned).toMatchObject({ policySource: 'pinned', code: 'test_root' })
    const allowed = await verifyInferenceReceipt(id, {
      inferenceUrl: gateway.url,
      allowTestRoot: true,
    })
    expect(allowed).toMatchObject({ status: 'verified', testRoot: true })
    expect(allowed.steps[2]?.detail).toContain('TEST ROOT CA accepted')
    expect(allowed.notProven[0]).toMatch(/TEST ROOT CA was accepted/)
  })

  it('binds the verdict to the caller: buyer B cannot verify buyer A’s answer as its own', async () => {
    for (const stream of [true, false]) {
      const a = await call(stream, 'Which is mine?')
      // B asks another question: the simulated enclave answers the same request with the same bytes.
      const b = await call(stream, 'And which is mine?')
      await anchorNow(a.id)
      const check = (options: Partial<VerifyInferenceReceiptOptions>) =>
        verifyInferenceReceipt(a.id, { inferenceUrl: gateway.url, allowTestRoot: true, ...options })
      // Without binding, anyone who holds the id gets "verified", and the result says so.
      const unbound = await check({})
      expect(unbound).toMatchObject({
        status: 'verified',
        bound: { payment: false, responseBytes: false },
      })
      expect(unbound.notProven.join('\n')).toMatch(/anyone who holds this receipt id/)
      // B's key, B's bytes, a settlement digest for a call on credit: not A's answer.
      expect(await check({ expectPayment: { keyId: b.keyId } })).toMatchObject({
        status: 'failed',
        failedStep: 'gateway_receipt',
        code: 'payment_mismatch',
      })
      expect(
        await check({ expectPayment: { keyId: a.keyId, callId: 'call_000000000000000000000000' } }),
      ).toMatchObject({ status: 'failed', code: 'payment_mismatch' })
      expect(
        await check({ expectPayment: { digest: '4JbuPagQd2q8cYsrZ3GqjW7fNqzK5mSbGmUu5n8xWdFv' } }),
      ).toMatchObject({ status: 'failed', code: 'payment_mismatch' })
      expect(await check({ responseBytes: b.bytes })).toMatchObject({
        status: 'failed',
        failedStep: 'response_hash',
        code: 'received_bytes_mismatch',
      })
      // B's key with A's call id (from A's x-call-id header): still not B's answer.
      expect(a.callId).toMatch(/^call_[0-9a-f]{24}$/)
      expect(await check({ expectPayment: { keyId: b.keyId, callId: a.callId } })).toMatchObject({
        code: 'payment_mismatch',
      })
      // A's own key and call id and the exact bytes A received (raw SSE for a stream): bound.
      const own = await check({
        expectPayment: { keyId: a.keyId, callId: a.callId },
        responseBytes: a.bytes,
      })
      expect(own).toMatchObject({
        status: 'verified',
        bound: { payment: true, responseBytes: true },
      })
      expect(own.steps.find((s) => s.step === 'response_hash')?.detail).toMatch(
        /= the bytes you received$/,
      )
      expect(own.steps.find((s) => s.step === 'gateway_receipt')?.detail).toMatch(/= your payment$/)
    }
  })

  it('says the anchor is pending, every other step passed, until the gateway anchors it', async () => {
    const id = await answer()
    const pending = await verifyInferenceReceipt(id, {
      inferenceUrl: gateway.url,
      allowTestRoot: true,
    })
    expect(pending).toMatchObject({
      status: 'failed',
      failedStep: 'anchor',
      code: 'anchor_pending',
    })
    expect(pending.steps.slice(0, -1).every((s) => s.status === 'passed')).toBe(true)
    await anchorNow(id)
    expect(
      (await verifyInferenceReceipt(id, { inferenceUrl: gateway.url, allowTestRoot: true })).status,
    ).toBe('verified')
  })

  it('uses a pinned quote verifier, and reads no oversized document', async () => {
    const id = await answer()
    const pinned = await verifyInferenceReceipt(id, {
      inferenceUrl: gateway.url,
      policy: {
        quoteVerifier: {
          teeType: 'intel-tdx',
          verify: async () => ({ status: 'invalid', reason: 'not under the pinned root' }),
        },
      },
    })
    expect(pinned).toMatchObject({
      status: 'failed',
      policySource: 'pinned',
      failedStep: 'attestation_valid',
      code: 'quote_invalid',
    })
    expect(pinned.steps.slice(3).every((s) => s.status === 'skipped')).toBe(true)
    // The gateway's published policy with another root CA pinned: refused at the same step.
    const otherRoot = await verifyInferenceReceipt(id, {
      inferenceUrl: gateway.url,
      policy: { rootCaSha256: 'ab'.repeat(32) },
    })
    expect(otherRoot).toMatchObject({
      policySource: 'pinned',
      failedStep: 'attestation_valid',
      code: 'quote_invalid',
    })

    const huge = await verifyInferenceReceipt(id, {
      inferenceUrl: gateway.url,
      fetch: async () => new Response(`{"pad":"${'x'.repeat(600 * 1024)}"}`),
    })
    expect(huge).toMatchObject({ status: 'failed', code: 'receipt_not_found' })
    const bad = await verifyInferenceReceipt('../etc', { inferenceUrl: gateway.url })
    expect(bad).toMatchObject({ failedStep: 'receipt_fetched', code: 'receipt_malformed' })
  })
})

type Session = {
  attested_at: string
  report: { attestation: { freshness: { stale_after: string }; evidence: { quote: string } } }
}

describe('createInferenceReceiptVerifier', { timeout: 120_000 }, () => {
  it('checks a session once, a changed report afresh, a verdict past its window again', async () => {
    const first = await answer()
    const second = await answer()
    await anchorNow(first)
    await anchorNow(second)
    // What the session documents become on the way (the same verifier, so the same memory).
    let edit: (session: Session) => void = () => {}
    let builds = 0
    let quoteChecks = 0
    let validUntilMs: number | undefined
    const verifier = createInferenceReceiptVerifier({
      inferenceUrl: gateway.url,
      allowTestRoot: true,
      policy: {
        // The published TDX verifier, counted: how often it is built, how often a quote is checked.
        quoteVerifier: async (published, root) => {
          builds++
          const real = (await publishedQuoteVerifier(published, root)) as QuoteVerifier
          return {
            teeType: real.teeType,
            async verify(quote, options) {
              quoteChecks++
              const verdict = await real.verify(quote, options)
              return verdict.status === 'valid' ? { ...verdict, validUntilMs } : verdict
            },
          }
        },
      },
      fetch: async (input, init) => {
        const response = await fetch(input, init)
        if (!String(input).includes('/aci/sessions/')) return response
        const session = (await response.json()) as Session
        edit(session)
        return Response.json(session)
      },
    })
    const attestation = (result: Awaited<ReturnType<typeof verifier.verify>>) =>
      result.steps.find((s) => s.step === 'attestation_valid')

    const one = await verifier.verify(first)
    expect(one.status).toBe('verified')
    expect(attestation(one)).toMatchObject({ status: 'passed', reused: false })
    expect([builds, quoteChecks]).toEqual([1, 1])
    const two = await verifier.verify(second)
    expect(two.status).toBe('verified')
    expect(attestation(two)).toMatchObject({ status: 'passed', reused: true })
    expect(attestation(two)?.detail).toMatch(
      /verified earlier in this verifier, report sha256 [0-9a-f]{16}…$/,
    )
    expect([builds, quoteChecks]).toEqual([1, 1])
    // Every other step is still checked for each receipt.
    expect(two.steps.every((s) => s.status === 'passed')).toBe(true)

    // One byte of the quote changed: another report, checked afresh, and it fails.
    edit = (session) => {
      const evidence = session.report.attestation.evidence
      const at = evidence.quote.length >> 1
      const byte = evidence.quote.slice(at, at + 2) === '00' ? '01' : '00'
      evidence.quote = `${evidence.quote.slice(0, at)}${byte}${evidence.quote.slice(at + 2)}`
    }
    const changed = await verifier.verify(second)
    expect(changed).toMatchObject({ status: 'failed', failedStep: 'attestation_valid' })
    expect(quoteChecks).toBe(2)

    // Relied on after the report went stale: the remembered verdict does not hold; checked again.
    edit = (session) => {
      const staleAt = Date.parse(session.report.attestation.freshness.stale_after)
      session.attested_at = new Date(staleAt + 1000).toISOString()
    }
    const stale = await verifier.verify(second)
    expect(stale).toMatchObject({ status: 'failed', code: 'report_stale' })
    expect(quoteChecks).toBe(3)
    // A second later than verified: reused only when the quote verifier says its verdict holds then.
    const later = (session: Session) => {
      session.attested_at = new Date(Date.parse(session.attested_at) + 1000).toISOString()
    }
    edit = later
    expect(attestation(await verifier.verify(second))?.reused).toBe(false)
    expect(quoteChecks).toBe(4)
    validUntilMs = Date.now() + 3_600_000
    edit = () => {}
    expect(attestation(await verifier.verify(second))?.reused).toBe(false)
    edit = later
    expect(attestation(await verifier.verify(second))?.reused).toBe(true)
    expect([builds, quoteChecks]).toEqual([1, 5])
  })

  it('imports the gateway’s JWKS once per document: another document is not served from it', async () => {
    const id = await answer()
    await anchorNow(id)
    // The published JWKS, or the same key ids over another Ed25519 key (a swapped document).
    let swap = false
    const { generateKeyPair, exportJWK } = await import('jose')
    const { publicKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' })
    const otherKey = await exportJWK(publicKey)
    const verifier = createInferenceReceiptVerifier({
      inferenceUrl: gateway.url,
      allowTestRoot: true,
      fetch: async (input, init) => {
        const response = await fetch(input, init)
        if (!swap || !String(input).endsWith('/tollgate-receipt-keys.json')) return response
        const jwks = (await response.json()) as { keys: Record<string, unknown>[] }
        return Response.json({ keys: jwks.keys.map((key) => ({ ...key, ...otherKey })) })
      },
    })
    const gatewayReceipt = (result: Awaited<ReturnType<typeof verifier.verify>>) =>
      result.steps.find((s) => s.step === 'gateway_receipt')?.status
    expect((await verifier.verify(id)).status).toBe('verified')
    swap = true
    const swapped = await verifier.verify(id)
    expect(swapped).toMatchObject({ status: 'failed', code: 'gateway_signature_invalid' })
    swap = false
    expect(gatewayReceipt(await verifier.verify(id))).toBe('passed')
  })
})
