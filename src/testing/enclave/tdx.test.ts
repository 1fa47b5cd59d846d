import { createHash, X509Certificate } from 'node:crypto'
import { QuoteVerifier } from '@phala/dcap-qvl'
import { describe, expect, it } from 'vitest'
import {
  quoteVerifierOfPolicy,
  TdxCollateralSchema,
  tdxMeasurementOf,
  tdxQuoteVerifier,
} from '../../attestation/tdx.js'
import { createTestTdxPlatform, registersHex, simulatedRegisters } from './tdx.js'

const registers = simulatedRegisters('tdx test')
const reportData = Uint8Array.from({ length: 64 }, (_, i) => i)

describe('the test TDX platform', () => {
  const platform = createTestTdxPlatform({ tcbStatus: 'UpToDate' })

  it('signs a TDX v4 quote that @phala/dcap-qvl accepts under the test root only', async () => {
    const quote = platform.quote({ registers, reportData })
    const root = new (await import('node:crypto')).X509Certificate(platform.rootCa).raw
    const now = Math.floor(Date.now() / 1000)
    const verified = QuoteVerifier.newWithRootCa(root).verify(quote, platform.collateral, now)
    expect(verified.status).toBe('UpToDate')
    expect(
      Buffer.from(verified.report.asTd10()?.reportData ?? []).equals(Buffer.from(reportData)),
    ).toBe(true)
    expect(() => QuoteVerifier.newProd().verify(quote, platform.collateral, now)).toThrow()
  })

  it('answers the measurement, report data and TCB status through tdxQuoteVerifier', async () => {
    const verifier = tdxQuoteVerifier({ rootCa: platform.rootCa, collateral: platform.collateral })
    const verdict = await verifier.verify(platform.quote({ registers, reportData }))
    expect(verdict).toMatchObject({
      status: 'valid',
      tcbStatus: 'UpToDate',
      measurement: tdxMeasurementOf(registersHex(registers)),
      registers: registersHex(registers),
    })
  })

  it('refuses a bad signature, another root, expired collateral and a revoked TCB', async () => {
    const verifier = tdxQuoteVerifier({ rootCa: platform.rootCa, collateral: platform.collateral })
    const bad = await verifier.verify(platform.quote({ registers, reportData, badSignature: true }))
    expect(bad.status).toBe('invalid')
    const other = createTestTdxPlatform({ tcbStatus: 'UpToDate' })
    const foreign = tdxQuoteVerifier({ rootCa: other.rootCa, collateral: platform.collateral })
    expect((await foreign.verify(platform.quote({ registers, reportData }))).status).toBe('invalid')
    const later = await verifier.verify(platform.quote({ registers, reportData }), {
      now: Date.now() + 31 * 86_400_000,
    })
    expect(later).toMatchObject({ status: 'invalid', reason: 'TCBInfo expired' })
    const revoked = createTestTdxPlatform({ tcbStatus: 'Revoked' })
    const verdict = await tdxQuoteVerifier({
      rootCa: revoked.rootCa,
      collateral: revoked.collateral,
    }).verify(revoked.quote({ registers, reportData }))
    expect(verdict).toMatchObject({ status: 'invalid', tcbStatus: 'Revoked' })
  })

  it('accepts collateral as @phala/dcap-qvl fetches it (byte arrays, a null PCK chain)', async () => {
    const bytes = (hex: string | readonly number[]) => Array.from(Buffer.from(hex as string, 'hex'))
    const { collateral: c } = platform
    const fetched = TdxCollateralSchema.parse({
      ...c,
      root_ca_crl: bytes(c.root_ca_crl),
      pck_crl: bytes(c.pck_crl),
      tcb_info_signature: bytes(c.tcb_info_signature),
      qe_identity_signature: bytes(c.qe_identity_signature),
      pck_certificate_chain: null,
    })
    const verifier = tdxQuoteVerifier({ rootCa: platform.rootCa, collateral: fetched })
    expect((await verifier.verify(platform.quote({ registers, reportData }))).status).toBe('valid')
  })

  it('refuses collateral tampered after signing', async () => {
    const tampered = {
      ...platform.collateral,
      tcb_info: platform.collateral.tcb_info.replace('"UpToDate"', '"UpToDate" '),
    }
    const verdict = await tdxQuoteVerifier({
      rootCa: platform.rootCa,
      collateral: tampered,
    }).verify(platform.quote({ registers, reportData }))
    expect(verdict).toMatchObject({
      status: 'invalid',
      reason: 'Signature is invalid for tcb_info',
    })
  })

  it('checks every quote afresh with one verifier kept across quotes and collateral', async () => {
    // The library and its verifier are loaded once per `tdxQuoteVerifier`; nothing else is kept.
    let collateral = platform.collateral
    const verifier = tdxQuoteVerifier({
      rootCa: platform.rootCa,
      collateral: async () => collateral,
    })
    const good = platform.quote({ registers, reportData })
    expect((await verifier.verify(good)).status).toBe('valid')
    const bad = platform.quote({ registers, reportData, badSignature: true })
    expect(await verifier.verify(bad)).toMatchObject({ status: 'invalid' })
    const flipped = Uint8Array.from(good)
    flipped[200] = (flipped[200] ?? 0) ^ 1
    expect(await verifier.verify(flipped)).toMatchObject({ status: 'invalid' })
    collateral = {
      ...platform.collateral,
      qe_identity: platform.collateral.qe_identity.replace('"TD_QE"', '"TD_QE" '),
    }
    expect(await verifier.verify(good)).toMatchObject({
      status: 'invalid',
      reason: 'Signature is invalid for qe_identity',
    })
    collateral = platform.collateral
    expect((await verifier.verify(good)).status).toBe('valid')
  })

  it('rebuilds the verifier a gateway publishes, and refuses a root other than the pinned one', async () => {
    const policy = { kind: 'tdx', root_ca: platform.rootCa, collateral: platform.collateral }
    const sha = createHash('sha256').update(new X509Certificate(platform.rootCa).raw).digest('hex')
    const quote = platform.quote({ registers, reportData })
    const pinned = await quoteVerifierOfPolicy(policy, sha)
    if ('error' in pinned) throw new Error(pinned.error)
    expect((await pinned.verify(quote)).status).toBe('valid')
    expect(await quoteVerifierOfPolicy(policy, '00'.repeat(32))).toEqual({
      error: 'the root CA is not the pinned one',
    })
    expect(await quoteVerifierOfPolicy({ kind: 'simulated' })).toHaveProperty('error')
    // No root CA named: Intel's, under which the test quote does not verify.
    const intel = await quoteVerifierOfPolicy({ kind: 'tdx', collateral: platform.collateral })
    if ('error' in intel) throw new Error(intel.error)
    expect((await intel.verify(quote)).status).toBe('invalid')
  })
})
