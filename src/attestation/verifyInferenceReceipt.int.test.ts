/**
 * `verifyInferenceReceipt` against the gateway's embedded default (its confidential model served by
 * the simulated enclave, anchors on the ledger emulator): a streamed confidential answer verifies at
 * every step through the injected fetch; a gateway receipt swapped for another one the gateway
 * signed, or one byte changed in what the anchor commits, fails at the `anchor` step; a pinned
 * quote verifier that rejects the quote fails at `attestation_valid`; an oversized document is no
 * document. A verifier of many receipts (`createInferenceReceiptVerifier`) builds the quote verifier
 * once and checks a session's quote once (counted by the quote verifier it is given), checks a
 * report with one changed byte afresh, and a remembered verdict again once it no longer holds.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { importJWK, SignJWT } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseConfig } from '../../reference-gateway/config.js'
import { type RunningGateway, startGateway } from '../../reference-gateway/server.js'
import { createLedger } from '../ledger/ledger.js'
import type { QuoteVerifier } from './quote.js'
import { publishedQuoteVerifier } from './sessionVerdicts.js'
import {
  createInferenceReceiptVerifier,
  gatewayReceiptHash,
  verifyInferenceReceipt,
} from './verifyInferenceReceipt.js'

const folder = mkdtempSync(join(tmpdir(), 'tollgate-verify-lib-'))
const model = 'confidential/llama-3.3-70b'
let gateway: RunningGateway

/** A streamed confidential answer's receipt id, its anchor queued (not submitted yet). */
async function answer(): Promise<string> {
  const { key } = await gateway.inference.keys.create({ credit: 10_000n })
  const response = await fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: 'Hi' }] }),
  })
  expect((await response.text()).endsWith('data: [DONE]\n\n')).toBe(true)
  return response.headers.get('x-receipt-id') ?? ''
}

async function anchorNow(id: string) {
  const anchored = await fetch(`${gateway.url}/v1/aci/anchor/${id}`, { method: 'POST' })
  expect(anchored.status).toBe(200)
}

beforeAll(async () => {
  gateway = await startGateway({
    config: parseConfig({
      port: 0,
      dataDir: folder,
      emulatorLatencyMs: 0,
      logLevel: 'silent',
      // The anchor worker runs only when asked (POST /v1/aci/anchor/{id}).
      refundIntervalMs: 3_600_000,
    }),
  })
}, 60_000)

afterAll(async () => {
  await gateway?.stop()
  rmSync(folder, { recursive: true, force: true })
})

describe('verifyInferenceReceipt', { timeout: 60_000 }, () => {
  it('verifies a streamed confidential answer at every step, through the injected fetch', async () => {
    const id = await answer()
    await anchorNow(id)
    const fetched: string[] = []
    const result = await verifyInferenceReceipt(id, {
      inferenceUrl: `${gateway.url}/v1`,
      ledger: createLedger({ url: gateway.ledger.url }),
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
    const db = new Database(join(folder, 'gateway.db'), { readonly: true })
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
    const db = new Database(join(folder, 'gateway.db'))
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
    const result = await verifyInferenceReceipt(id, { inferenceUrl: gateway.url })
    expect(result).toMatchObject({
      status: 'failed',
      failedStep: 'anchor',
      code: 'anchor_mismatch',
    })
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
})
