// Interop with the field's reference x402 implementation (@x402/core): our 402 is a valid v1
// envelope with a version 2 PAYMENT-REQUIRED header, its HTTP client recognises both; payment
// headers travel both ways.
import { x402Client, x402HTTPClient } from '@x402/core/client'
import { decodePaymentResponseHeader, encodePaymentSignatureHeader } from '@x402/core/http'
import {
  PaymentPayloadV1Schema,
  PaymentRequiredV1Schema,
  PaymentRequirementsV1Schema,
} from '@x402/core/schemas'
import { describe, expect, it } from 'vitest'
import { paymentRequiredResponse, type RouteTerms } from './challenge.js'
import { decodeXPayment, encodeXPaymentResponse } from './x402.js'

const secrets = ['an-integration-test-secret-of-32-bytes-or-more']
const terms: RouteTerms = {
  price: 20_000n,
  payTo: '0x5f1c7d4f1e9a0b3c2d8e6f7a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c',
  resource: 'https://api.example.com/v1/chat',
  description: 'Chat completion',
  outputSchema: { type: 'object' },
  escrow: { required: false },
}

describe('@x402/core reads our 402', () => {
  it('validates against PaymentRequiredV1Schema and PaymentRequirementsV1Schema', async () => {
    const body = await paymentRequiredResponse(terms, { secrets }).json()
    expect(PaymentRequiredV1Schema.safeParse(body).success).toBe(true)
    for (const requirement of body.accepts) {
      expect(PaymentRequirementsV1Schema.safeParse(requirement).success).toBe(true)
    }
    // the schema is not vacuous: a body without accepts fails it
    expect(PaymentRequiredV1Schema.safeParse({ ...body, accepts: [] }).success).toBe(false)
  })

  it('is recognised by x402HTTPClient as payment required: version 2 from PAYMENT-REQUIRED', async () => {
    const client = new x402HTTPClient(new x402Client())
    const response = paymentRequiredResponse(terms, { secrets })
    const result = await client.processResponse(response)
    expect(result.status).toBe(402)
    expect(result.paymentStatus).toBe('payment_required')
    const header = result.header as {
      x402Version: number
      resource: { url: string }
      accepts: Array<Record<string, unknown>>
    }
    expect(header.x402Version).toBe(2)
    expect(header.resource.url).toBe(terms.resource)
    expect(header.accepts[0]).toMatchObject({
      network: 'sui:mainnet',
      amount: '20000',
      payTo: terms.payTo,
    })
  })

  it('also through getPaymentRequiredResponse: the v1 body when no header is read', async () => {
    const client = new x402HTTPClient(new x402Client())
    const response = paymentRequiredResponse(terms, { secrets, offer: 'x402' })
    const body = await response.json()
    const required = client.getPaymentRequiredResponse(() => null, body)
    expect(required).toEqual(body)
    const v2 = client.getPaymentRequiredResponse((name) => response.headers.get(name), body)
    expect(v2.x402Version).toBe(2)
    expect(v2.accepts[0]?.extra).toEqual(body.accepts[0].extra)
  })
})

describe('payment headers between @x402/core and us', () => {
  it('decodes an X-PAYMENT that @x402/core encodes', () => {
    const payload = {
      x402Version: 1,
      scheme: 'exact',
      network: 'sui:mainnet',
      payload: {
        challengeId: 'ChJk16G20ABw3I1ppC6GJ5wd_FrF9gs8hiPQOK09CVo',
        transaction: Buffer.alloc(150, 3).toString('base64'),
        signature: Buffer.alloc(97, 1).toString('base64'),
      },
    }
    expect(PaymentPayloadV1Schema.safeParse(payload).success).toBe(true)
    const header = encodePaymentSignatureHeader(payload as never)
    expect(decodeXPayment(header)).toEqual(payload)
  })

  it('our X-PAYMENT-RESPONSE is read by x402HTTPClient as settled', () => {
    const settlement = {
      success: true,
      transaction: 'FnWbXnpFjqHLr6ZdcYy4e8mQ2rP5b3cN5pW1h8z9aTq',
      network: 'sui:mainnet',
      payer: terms.payTo,
    }
    const header = encodeXPaymentResponse(settlement)
    expect(decodePaymentResponseHeader(header)).toEqual(settlement)
    const client = new x402HTTPClient(new x402Client())
    const result = client.parsePaymentResult({
      status: 200,
      getHeader: (name) => (name.toUpperCase() === 'X-PAYMENT-RESPONSE' ? header : null),
      body: {},
    })
    expect(result.paymentStatus).toBe('settled')
  })
})
