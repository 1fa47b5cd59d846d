/**
 * `publishedRootOf`: which root CA a published TDX verifier policy names. Intel's SGX root — named
 * by leaving `root_ca` out, or given as its own PEM — is Intel's; the simulated enclave's test root
 * is not (so `verifyInferenceReceipt` refuses it unless allowed); a root that is not a certificate,
 * or a policy that is not a TDX policy, names none.
 */
import { createHash } from 'node:crypto'
import { constants } from '@phala/dcap-qvl'
import { describe, expect, it } from 'vitest'
import { createTestTdxPlatform } from '../testing/enclave/tdx.js'
import { publishedRootOf } from './tdx.js'

const intelDer = Buffer.from(constants.TRUSTED_ROOT_CA_DER)
const intelSha256 = createHash('sha256').update(intelDer).digest('hex')
const pem = (der: Buffer) =>
  `-----BEGIN CERTIFICATE-----\n${der.toString('base64')}\n-----END CERTIFICATE-----\n`

describe('publishedRootOf', () => {
  const platform = createTestTdxPlatform({ tcbStatus: 'UpToDate' })
  const policy = (rootCa?: string) => ({
    kind: 'tdx',
    collateral: platform.collateral,
    ...(rootCa === undefined ? {} : { root_ca: rootCa }),
  })

  it('says Intel’s root is Intel’s, whether named by absence or by its PEM', async () => {
    expect(await publishedRootOf(policy())).toEqual({ sha256: intelSha256, intel: true })
    expect(await publishedRootOf(policy(pem(intelDer)))).toEqual({
      sha256: intelSha256,
      intel: true,
    })
  })

  it('says the simulated enclave’s root is a test root', async () => {
    const root = await publishedRootOf(policy(platform.rootCa))
    expect(root?.intel).toBe(false)
    expect(root?.sha256).toMatch(/^[0-9a-f]{64}$/)
    expect(root?.sha256).not.toBe(intelSha256)
  })

  it('names no root for a root that is not a certificate, or a policy that is not TDX', async () => {
    expect(await publishedRootOf(policy('not a certificate'))).toBeUndefined()
    expect(await publishedRootOf({ kind: 'sev', collateral: platform.collateral })).toBeUndefined()
    expect(await publishedRootOf(undefined)).toBeUndefined()
  })
})
