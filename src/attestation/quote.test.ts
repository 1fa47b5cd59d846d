import { generateKeyPairSync, sign } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { SIMULATED_QUOTE_LENGTH, simulatedQuoteBody, simulatedQuoteVerifier } from './quote.js'

const root = generateKeyPairSync('ed25519')
const rootPublicKey = new Uint8Array(root.publicKey.export({ format: 'der', type: 'spki' })).slice(
  -32,
)
const measurement = new Uint8Array(48).fill(7)
const reportData = new Uint8Array(64).fill(9)

function quote(change?: (body: Uint8Array) => void): Uint8Array {
  const body = simulatedQuoteBody({ measurement, reportData, tcbStatus: 'OutOfDate' })
  change?.(body)
  return new Uint8Array([...body, ...sign(null, body, root.privateKey)])
}

describe('simulatedQuoteVerifier', () => {
  const verifier = simulatedQuoteVerifier(rootPublicKey)

  it('reads the measurement, report data and TCB status of a quote the root signed', async () => {
    const verdict = await verifier.verify(quote())
    expect(verdict).toEqual({
      status: 'valid',
      measurement: '07'.repeat(48),
      reportData,
      tcbStatus: 'OutOfDate',
    })
  })

  it.each<[string, () => Uint8Array, string]>([
    ['a short quote', () => quote().subarray(1), 'wrong length'],
    ['another magic', () => quote((b) => (b[0] = 0)), 'not a simulated quote'],
    ['another version', () => quote((b) => (b[4] = 2)), 'not a simulated quote'],
    ['an unknown TCB status', () => quote((b) => (b[5] = 9)), 'unknown TCB status'],
    [
      'a body changed after signing',
      () => {
        const q = quote()
        q[60] = (q[60] ?? 0) ^ 1
        return q
      },
      'signature does not verify',
    ],
  ])('refuses %s', async (_, make, reason) => {
    const verdict = await verifier.verify(make())
    expect(verdict.status).toBe('invalid')
    if (verdict.status === 'invalid') expect(verdict.reason).toContain(reason)
  })

  it('refuses a quote signed under another root', async () => {
    const other = generateKeyPairSync('ed25519')
    const key = new Uint8Array(other.publicKey.export({ format: 'der', type: 'spki' })).slice(-32)
    expect((await simulatedQuoteVerifier(key).verify(quote())).status).toBe('invalid')
  })

  it('builds bodies of the documented length only from well-sized fields', () => {
    expect(simulatedQuoteBody({ measurement, reportData, tcbStatus: 'UpToDate' }).byteLength).toBe(
      SIMULATED_QUOTE_LENGTH - 64,
    )
    expect(() =>
      simulatedQuoteBody({ measurement: new Uint8Array(1), reportData, tcbStatus: 'UpToDate' }),
    ).toThrow(RangeError)
  })
})
