import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import vectors from '../conformance/vectors/x402.json' with { type: 'json' }
import { isPaymentError, PaymentError } from './errors.js'
import {
  decodeXPayment,
  decodeXPaymentResponse,
  encodeXPayment,
  encodeXPaymentResponse,
  matchRequirement,
  parsePaymentRequired,
  type XPayment,
} from './x402.js'

type HeaderSpec = string | { repeat: string; times: number }
const header = (spec: HeaderSpec) =>
  typeof spec === 'string' ? spec : spec.repeat.repeat(spec.times)

function codeOf(run: () => unknown): string {
  try {
    run()
  } catch (error) {
    if (isPaymentError(error)) return error.code
    throw error
  }
  return 'no error'
}

/** Asserts that `run` returns or throws a PaymentError — never anything else. */
function onlyPaymentErrors(run: () => unknown): void {
  try {
    run()
  } catch (error) {
    if (!(error instanceof PaymentError)) throw error
  }
}

// 10 000-run property tests take about a second each on an idle machine; the time limit is generous
// so that a loaded CI machine does not fail them (timing goals live in bench/, not here).
const fuzzTime = { timeout: 60_000 }

describe('X-PAYMENT vectors', () => {
  it.each(vectors.xPayment.valid)('decodes: $name', (v) => {
    expect(decodeXPayment(v.header)).toEqual(v.expected)
  })
  it.each(vectors.xPayment.invalid)('rejects with $code: $name', (v) => {
    expect(codeOf(() => decodeXPayment(header(v.header as HeaderSpec)))).toBe(v.code)
  })
})

describe('X-PAYMENT-RESPONSE vectors', () => {
  it.each(vectors.xPaymentResponse.valid)('decodes: $name', (v) => {
    expect(decodeXPaymentResponse(v.header)).toEqual(v.expected)
  })
  it.each(vectors.xPaymentResponse.invalid)('rejects with $code: $name', (v) => {
    expect(codeOf(() => decodeXPaymentResponse(v.header))).toBe(v.code)
  })
})

describe('round trips', () => {
  const payment = vectors.xPayment.valid[1]?.expected as XPayment

  it('encodes an X-PAYMENT that decodes to the same payment', () => {
    const encoded = encodeXPayment({ network: payment.network, payload: payment.payload })
    expect(decodeXPayment(encoded)).toEqual(payment)
    // standard, padded base64 of JSON
    expect(JSON.parse(Buffer.from(encoded, 'base64').toString()).x402Version).toBe(1)
  })

  it('refuses to encode a payment that would not decode', () => {
    const bad = { ...payment.payload, transaction: 'not base64' }
    expect(codeOf(() => encodeXPayment({ payload: bad }))).toBe('invalid_payload')
  })

  it('encodes an X-PAYMENT-RESPONSE that decodes to the same response', () => {
    const response = {
      success: true,
      transaction: 'FnWbXnpFjqHLr6ZdcYy4e8mQ2rP5b3cN5pW1h8z9aTq',
      network: 'sui:mainnet',
      payer: payment.payload.senderAddress as string,
    }
    const encoded = encodeXPaymentResponse(response)
    expect(encoded).toMatch(/^[A-Za-z0-9+/]+=*$/)
    expect(decodeXPaymentResponse(encoded)).toEqual(response)
  })
})

describe('402 body', () => {
  const requirement = {
    scheme: 'exact',
    network: 'sui:mainnet',
    maxAmountRequired: '20000',
    resource: 'https://api.example.com/v1/x',
    description: '',
    payTo: '0x2',
    maxTimeoutSeconds: 60,
    asset: '0x2::usdc::USDC',
    extra: { challengeId: 'abc' },
  }

  it('accepts an envelope that is also a problem document', () => {
    const body = {
      x402Version: 1,
      error: 'Payment required',
      accepts: [requirement],
      type: 'https://paymentauth.org/problems/payment-required',
      title: 'Payment Required',
      status: 402,
      detail: 'pay',
    }
    expect(parsePaymentRequired(body)).toEqual(body)
  })

  it('rejects another version, an empty accepts, and a float amount', () => {
    expect(codeOf(() => parsePaymentRequired({ x402Version: 2, accepts: [requirement] }))).toBe(
      'unsupported_version',
    )
    expect(codeOf(() => parsePaymentRequired({ x402Version: 1, accepts: [] }))).toBe(
      'invalid_payload',
    )
    const float = { ...requirement, maxAmountRequired: '0.02' }
    expect(codeOf(() => parsePaymentRequired({ x402Version: 1, accepts: [float] }))).toBe(
      'invalid_payload',
    )
  })

  it('matches a payment to the requirement of its scheme and network', () => {
    const testnet = { ...requirement, network: 'sui:testnet' }
    expect(
      matchRequirement([testnet, requirement], { scheme: 'exact', network: 'sui:mainnet' }),
    ).toBe(requirement)
    expect(
      codeOf(() => matchRequirement([requirement], { scheme: 'exact', network: 'sui:devnet' })),
    ).toBe('unsupported_network')
  })
})

describe('decoding never throws anything but a PaymentError', fuzzTime, () => {
  const valid = vectors.xPayment.valid.map((v) => v.header)
  // ASCII-heavy strings (where the grammar is) and any UTF-16 code units, lone surrogates included
  const anyString = fc.oneof(
    fc.string({ maxLength: 300 }),
    fc.string({ unit: 'binary', maxLength: 100 }),
  )

  it('for arbitrary strings', () => {
    fc.assert(
      fc.property(anyString, (s) => {
        onlyPaymentErrors(() => decodeXPayment(s))
        onlyPaymentErrors(() => decodeXPaymentResponse(s))
      }),
      { numRuns: 10_000 },
    )
  })

  it('for arbitrary base64 of arbitrary JSON', () => {
    fc.assert(
      fc.property(fc.json({ maxDepth: 2 }), (json) => {
        const encoded = Buffer.from(json).toString('base64')
        onlyPaymentErrors(() => decodeXPayment(encoded))
        onlyPaymentErrors(() => decodeXPaymentResponse(encoded))
        onlyPaymentErrors(() => parsePaymentRequired(JSON.parse(json)))
      }),
      { numRuns: 10_000 },
    )
  })

  it('for mutated valid headers', () => {
    const mutation = fc.record({
      which: fc.nat(valid.length - 1),
      at: fc.nat(),
      cut: fc.nat(8),
      insert: fc.string({ maxLength: 4 }),
    })
    fc.assert(
      fc.property(mutation, ({ which, at, cut, insert }) => {
        const base = valid[which] as string
        const i = at % (base.length + 1)
        const mutated = base.slice(0, i) + insert + base.slice(i + cut)
        onlyPaymentErrors(() => decodeXPayment(mutated))
      }),
      { numRuns: 10_000 },
    )
  })

  it('for mutated JSON inside valid base64', () => {
    const json = Buffer.from(valid[0] as string, 'base64').toString()
    fc.assert(
      fc.property(fc.nat(), fc.string({ maxLength: 3 }), (at, insert) => {
        const i = at % (json.length + 1)
        const mutated = Buffer.from(json.slice(0, i) + insert + json.slice(i + 1)).toString(
          'base64',
        )
        onlyPaymentErrors(() => decodeXPayment(mutated))
      }),
      { numRuns: 10_000 },
    )
  })
})
