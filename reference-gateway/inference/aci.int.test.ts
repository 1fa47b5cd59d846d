/**
 * `GET /v1/aci/attestation?nonce=…` on the gateway's embedded default: each fresh-nonce report costs
 * the enclave work, so they are limited per client IP address (`ATTESTATION_NONCE_PER_MINUTE`): past
 * the limit, 429 `rate_limit_exceeded` with `Retry-After`, and the enclave is not asked; another
 * address (a second loopback address) and the nonce-less summary are not affected.
 */
import { Agent, fetch as undiciFetch } from 'undici'
import { afterAll, describe, expect, it } from 'vitest'
import { useTestGateway } from '../server/testHelpers.js'
import { clientAddressOf } from './aci.js'

const gateway = useTestGateway({ config: { attestationNoncePerMinute: 2 } })
/** Requests from another loopback address, 127.0.0.2. */
const other = new Agent({ localAddress: '127.0.0.2' })
afterAll(async () => {
  await other.close()
})

const nonce = () =>
  crypto
    .getRandomValues(new Uint8Array(32))
    .reduce((s, b) => s + b.toString(16).padStart(2, '0'), '')

describe('fresh-nonce attestations are limited per client address', { timeout: 60_000 }, () => {
  it('answers 429 rate_limit_exceeded with Retry-After past the limit, per address', async () => {
    const enclave = gateway.inference.enclave
    expect(enclave).toBeDefined()
    const reportsAsked = () =>
      enclave?.calls.filter((c) => c.path.includes('attestation')).length ?? 0
    for (let i = 0; i < 2; i++) {
      const ok = await fetch(`${gateway.url}/v1/aci/attestation?nonce=${nonce()}`)
      expect(ok.status).toBe(200)
      expect(
        ((await ok.json()) as { report_verification: { status: string } }).report_verification,
      ).toEqual({ status: 'verified' })
    }
    const before = reportsAsked()
    const limited = await fetch(`${gateway.url}/v1/aci/attestation?nonce=${nonce()}`)
    expect(limited.status).toBe(429)
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(await limited.json()).toMatchObject({
      error: { code: 'rate_limit_exceeded', type: 'rate_limit_error', param: 'nonce' },
    })
    expect(reportsAsked()).toBe(before)

    // The summary without a nonce asks the enclave for nothing new: not limited.
    expect((await fetch(`${gateway.url}/v1/aci/attestation`)).status).toBe(200)
    // Another address has its own count.
    const elsewhere = await undiciFetch(`${gateway.url}/v1/aci/attestation?nonce=${nonce()}`, {
      dispatcher: other,
    })
    expect(elsewhere.status).toBe(200)
  })
})

describe('clientAddressOf', () => {
  const env = { incoming: { socket: { remoteAddress: '10.0.0.7' } } }
  const request = new Request('http://gw/v1/aci/attestation', {
    headers: { 'x-forwarded-for': '203.0.113.9, 198.51.100.4' },
  })
  it('is the socket peer, or with trustProxy the last X-Forwarded-For entry', () => {
    expect(clientAddressOf(request, env, false)).toBe('10.0.0.7')
    expect(clientAddressOf(request, env, true)).toBe('198.51.100.4')
    const forged = new Request('http://gw/', { headers: { 'x-forwarded-for': 'not-an-ip' } })
    expect(clientAddressOf(forged, env, true)).toBe('10.0.0.7')
    expect(clientAddressOf(forged, undefined, false)).toBe('unknown')
  })
})
