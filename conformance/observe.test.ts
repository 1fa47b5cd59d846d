import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { readMpp, readX402, redactValue } from './observe.js'
import type { ProbeResponse } from './probe.js'

const response = (body: string, headers: Record<string, string> = {}): ProbeResponse => ({
  status: 402,
  headers,
  body,
  url: 'https://api.example.com/v1/x',
})

const entry = {
  scheme: 'exact',
  network: 'sui:mainnet',
  maxAmountRequired: '20000',
  resource: 'https://api.example.com/v1/x',
  description: 'x',
  payTo: '0x1',
  asset: '0x2::usdc::USDC',
  maxTimeoutSeconds: 60,
}

describe('reading a seller’s 402', () => {
  it('reads an envelope leniently, so amount and timeout are judged by their own checks', () => {
    const ok = readX402(response(JSON.stringify({ x402Version: 1, accepts: [entry] })))
    expect(ok.status).toBe('ok')
    const { maxTimeoutSeconds: _, ...noTimeout } = entry
    const lenient = readX402(
      response(
        JSON.stringify({ x402Version: 1, accepts: [{ ...noTimeout, maxAmountRequired: '0.02' }] }),
      ),
    )
    expect(lenient.status).toBe('ok')
    expect(readX402(response(JSON.stringify({ x402Version: 1, accepts: [] }))).status).toBe(
      'invalid',
    )
    expect(readX402(response('{"type":"about:blank"}')).status).toBe('absent')
    expect(readX402(response('<html>')).status).toBe('absent')
  })

  it('tells an absent MPP challenge from a malformed one', () => {
    expect(readMpp(response('')).status).toBe('absent')
    expect(readMpp(response('', { 'www-authenticate': 'Bearer realm="x"' })).status).toBe('absent')
    expect(readMpp(response('', { 'www-authenticate': 'Payment id="x", realm=' })).status).toBe(
      'invalid',
    )
  })

  it('never throws on any body or header, and never shows a whole credential', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ unit: 'binary', maxLength: 300 }), fc.json({ maxDepth: 3 })),
        fc.string({ maxLength: 300 }).map((s) => `Payment ${s}`),
        (body, header) => {
          expect(['absent', 'invalid', 'ok']).toContain(readX402(response(body)).status)
          expect(['absent', 'invalid', 'ok']).toContain(
            readMpp(response(body, { 'www-authenticate': header })).status,
          )
          if (header.length > 16) expect(redactValue(header)).not.toContain(header.slice(10))
        },
      ),
      { numRuns: 300 },
    )
  })
})
