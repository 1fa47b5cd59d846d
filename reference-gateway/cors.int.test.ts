/**
 * A browser can pay the gateway: preflights are answered, the 402 challenge and both dialects'
 * receipts are readable by the page (exposed), and the allowed origins come from the configuration.
 * Real gateway, real HTTP, real payments on the ledger emulator.
 */
import { useTestLedger } from 'tollgate/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createPayingFetch, paymentOf } from '../src/client/index.js'
import { parseConfig } from './config.js'
import { useTestGateway } from './server/testHelpers.js'

const path = '/openai/v1/chat/completions'
const chat = JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] })
const page = 'https://app.example'

const chain = useTestLedger({ beforeAll, afterAll })
/** A gateway on the test ledger allowing `corsOrigins` (without: any origin). */
const gatewayWith = (corsOrigins?: string) =>
  useTestGateway(() => ({
    config: {
      ledgerUrl: chain.url,
      operatorKey: chain.createTestWallet({ usdc: '1', sui: '1' }).getSecretKey(),
      challengeSecrets: 'a-test-secret-of-at-least-thirty-two-bytes',
      store: 'memory',
      upstreams: 'stub',
      ...(corsOrigins === undefined ? {} : { corsOrigins }),
    },
  }))
const open = gatewayWith()
const listed = gatewayWith(`${page}, https://other.example`)

const exposed = (response: Response) =>
  (response.headers.get('access-control-expose-headers') ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase())

describe('CORS on the gateway', () => {
  it('answers the preflight of a paid call, allowing both payment headers', async () => {
    const response = await fetch(`${open.url}${path}`, {
      method: 'OPTIONS',
      headers: {
        origin: page,
        'access-control-request-method': 'POST',
        'access-control-request-headers':
          'content-type, x-payment, payment-signature, authorization',
      },
    })
    expect(response.status).toBe(204)
    expect(response.headers.get('access-control-allow-origin')).toBe('*')
    expect(response.headers.get('access-control-allow-methods')).toContain('POST')
    const allowed = (response.headers.get('access-control-allow-headers') ?? '').toLowerCase()
    for (const header of ['content-type', 'x-payment', 'payment-signature', 'authorization']) {
      expect(allowed).toContain(header)
    }
  })

  it('lets the page read the 402 challenge', async () => {
    const response = await fetch(`${open.url}${path}`, {
      method: 'POST',
      headers: { origin: page, 'content-type': 'application/json' },
      body: chat,
    })
    expect(response.status).toBe(402)
    expect(response.headers.get('access-control-allow-origin')).toBe('*')
    expect(response.headers.get('www-authenticate')).toMatch(/^Payment /)
    expect(exposed(response)).toEqual(
      expect.arrayContaining([
        'www-authenticate',
        'payment-required',
        'x-payment-response',
        'payment-response',
        'payment-receipt',
      ]),
    )
  })

  it.each(['x402', 'mpp'] as const)(
    'lets the page read the receipt of a paid call (%s)',
    async (dialect) => {
      const buyer = chain.createTestWallet({ usdc: '1', sui: '1' })
      const pay = createPayingFetch({
        signer: buyer,
        ledger: chain.url,
        limits: false,
        prefer: dialect,
        // As a browser sends it: with the page's origin.
        fetch: (request) => {
          request.headers.set('origin', page)
          return fetch(request)
        },
      })
      const response = await pay(`${open.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: chat,
      })
      expect(response.status).toBe(200)
      expect(response.headers.get('access-control-allow-origin')).toBe('*')
      // x402: the client pays version 2, answered with PAYMENT-RESPONSE.
      expect(exposed(response)).toContain(
        dialect === 'x402' ? 'payment-response' : 'payment-receipt',
      )
      if (dialect === 'x402') expect(response.headers.get('payment-response')).not.toBeNull()
      expect(paymentOf(response)?.receipt?.dialect).toBe(dialect)
    },
  )

  it('allows only the configured origins (CORS_ORIGINS)', async () => {
    const asked = (origin: string) =>
      fetch(`${listed.url}${path}`, {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': 'POST' },
      })
    expect((await asked(page)).headers.get('access-control-allow-origin')).toBe(page)
    expect((await asked('https://evil.example')).headers.get('access-control-allow-origin')).toBe(
      null,
    )
  })

  it('refuses an origin that is not scheme://host', () => {
    expect(() => parseConfig({ corsOrigins: 'app.example/path' })).toThrow(
      /CORS_ORIGINS \(corsOrigins.*\): each origin must be/,
    )
  })
})
