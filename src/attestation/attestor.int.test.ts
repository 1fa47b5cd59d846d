import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type SimulatedEnclave, startSimulatedEnclave } from '../testing/enclave/index.js'
import { createAttestor } from './attestor.js'
import { tdxQuoteVerifier } from './tdx.js'

describe('createAttestor', () => {
  let enclave: SimulatedEnclave
  let clock: number
  beforeEach(async () => {
    enclave = await startSimulatedEnclave()
    clock = Date.now()
  })
  afterEach(() => enclave.stop())

  const attestor = (refreshMs = 60_000) =>
    createAttestor({
      baseUrl: enclave.baseUrl,
      quoteVerifier: tdxQuoteVerifier({ rootCa: enclave.rootCa, collateral: enclave.collateral }),
      allowedMeasurements: [enclave.measurement],
      refreshMs,
      now: () => clock,
    })
  const reports = () => enclave.calls.filter((c) => c.path === '/v1/attestation').length

  async function completion() {
    const requestBytes = new TextEncoder().encode(
      JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
    )
    const res = await fetch(`${enclave.baseUrl}/chat/completions`, {
      method: 'POST',
      body: requestBytes,
    })
    const responseBytes = new Uint8Array(await res.arrayBuffer())
    const id = res.headers.get('x-receipt-id')
    const receipt = await (await fetch(`${enclave.baseUrl}/receipts/${id}`)).json()
    return { receipt, requestBytes, responseBytes }
  }

  it('attests once, with a fresh nonce, for concurrent callers, and keeps the session', async () => {
    const a = attestor()
    const [first, second] = await Promise.all([a.current(), a.current()])
    expect(first.status).toBe('verified')
    expect(second).toBe(first)
    expect(await a.current()).toEqual(first)
    expect(reports()).toBe(1)
  })

  it('attests again with a new nonce once the refresh interval has passed', async () => {
    const a = attestor(1_000)
    const first = await a.current()
    clock += 1_001
    const second = await a.current()
    expect(reports()).toBe(2)
    expect(first.status === 'verified' && second.status === 'verified').toBe(true)
    if (first.status !== 'verified' || second.status !== 'verified') return
    expect(second.session.nonce).not.toBe(first.session.nonce)
  })

  it('attests again when a receipt is signed by a rotated key, then verifies it', async () => {
    const a = attestor()
    expect((await a.current()).status).toBe('verified')
    enclave.rotateKeys()
    const { receipt, requestBytes, responseBytes } = await completion()
    expect(
      await a.verifyReceipt(receipt, { requestBytes, responseBytes, model: 'm' }),
    ).toMatchObject({ status: 'verified', keyId: 'rk-1' })
    expect(reports()).toBe(2)
  })

  it('does not re-attest its way around a receipt from an unattested key', async () => {
    const a = attestor()
    enclave.misbehave('unattested-receipt-key')
    const { receipt, responseBytes } = await completion()
    expect(await a.verifyReceipt(receipt, { responseBytes })).toMatchObject({
      status: 'failed',
      code: 'key_not_attested',
    })
  })

  it('answers the report failure, keeps no session, and recovers when the enclave does', async () => {
    const a = attestor()
    enclave.misbehave('wrong-nonce')
    expect(await a.current()).toMatchObject({ status: 'failed', code: 'nonce_mismatch' })
    expect(await a.current()).toMatchObject({ status: 'failed', code: 'nonce_mismatch' })
    enclave.misbehave(undefined)
    expect((await a.current()).status).toBe('verified')
  })

  it('answers enclave_unreachable when the enclave is down', async () => {
    const a = attestor()
    enclave.misbehave('enclave-down')
    expect(await a.current()).toMatchObject({ status: 'failed', code: 'enclave_unreachable' })
  })

  it('drops the session once refreshing fails', async () => {
    const a = attestor(1_000)
    expect((await a.current()).status).toBe('verified')
    enclave.misbehave('measurement-not-allowed')
    clock += 1_001
    expect(await a.current()).toMatchObject({ code: 'measurement_not_allowed' })
    expect(await a.current()).toMatchObject({ code: 'measurement_not_allowed' })
  })
})
