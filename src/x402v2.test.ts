import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { buildChallenge } from './challenge.js'
import { isPaymentError, PaymentError } from './errors.js'
import {
  checkAccepted,
  decodePaymentRequiredV2,
  decodePaymentSignature,
  encodePaymentSignature,
  type PaymentRequirementV2,
} from './x402v2.js'

const payTo = `0x${'5f'.repeat(32)}`
const secrets = ['a-challenge-secret-of-at-least-32-bytes!']
const pieces = buildChallenge(
  { price: 20_000n, payTo, resource: 'https://api.example.com/v1/chat' },
  { secrets, now: Date.parse('2026-11-22T03:00:07.500Z') },
)
const required = decodePaymentRequiredV2(pieces.paymentRequired ?? '')
const accepted = required.accepts[0] as PaymentRequirementV2
const terms = {
  network: 'sui:mainnet',
  amount: '20000',
  asset: accepted.asset,
  payTo,
}
const payload = {
  transaction: Buffer.alloc(150, 3).toString('base64'),
  signature: Buffer.alloc(97, 1).toString('base64'),
}
const valid = encodePaymentSignature({ x402Version: 2, accepted, payload })

function codeOf(run: () => unknown): string {
  try {
    run()
  } catch (error) {
    if (isPaymentError(error)) return error.code
    throw error
  }
  return 'no error'
}

function onlyPaymentErrors(run: () => unknown): void {
  try {
    run()
  } catch (error) {
    if (!(error instanceof PaymentError)) throw error
  }
}

const fuzzTime = { timeout: 60_000 }
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64')

describe('PAYMENT-SIGNATURE', () => {
  it('round-trips what it encodes', () => {
    expect(decodePaymentSignature(valid)).toEqual({ x402Version: 2, accepted, payload })
  })

  it.each([
    ['header_too_large', 'A'.repeat(16 * 1024 + 1)],
    ['invalid_encoding', 'not base64!'],
    ['invalid_json', Buffer.from('{nope').toString('base64')],
    ['unsupported_version', b64({ x402Version: 1, accepted, payload })],
    ['invalid_payload', b64({ x402Version: 2, payload })],
    ['invalid_payload', b64({ x402Version: 2, accepted, payload: { transaction: 'x' } })],
    ['invalid_payload', b64({ x402Version: 2, accepted: { ...accepted, amount: '-1' }, payload })],
  ])('rejects with %s', (code, header) => {
    expect(codeOf(() => decodePaymentSignature(header))).toBe(code)
  })

  it('throws nothing but a PaymentError, for arbitrary and mutated input', fuzzTime, () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 600 }),
          fc.json({ maxDepth: 4 }).map((json) => Buffer.from(json).toString('base64')),
          fc
            .record({
              i: fc.nat({ max: valid.length - 1 }),
              c: fc.string({ minLength: 1, maxLength: 1 }),
            })
            .map(({ i, c }) => valid.slice(0, i) + c + valid.slice(i + 1)),
        ),
        (value) => onlyPaymentErrors(() => decodePaymentSignature(value)),
      ),
      { numRuns: 10_000 },
    )
  })
})

describe('PAYMENT-REQUIRED', () => {
  it('agrees with the v1 body of the same 402', () => {
    const v1 = pieces.body.accepts?.[0]
    expect(required.resource.url).toBe(v1?.resource)
    expect(accepted).toEqual({
      scheme: v1?.scheme,
      network: v1?.network,
      amount: v1?.maxAmountRequired,
      asset: v1?.asset,
      payTo: v1?.payTo,
      maxTimeoutSeconds: v1?.maxTimeoutSeconds,
      extra: { challengeId: pieces.id },
    })
  })

  it('carries the escrow terms of an escrow-only route beside the challenge id', () => {
    const escrow = { package: '0x2', releaseAfterSeconds: 3600, note: 'a "quoted" \\ value' }
    const withEscrow = buildChallenge(
      { price: 20_000n, payTo, resource: 'https://api.example.com/v1/chat', escrow },
      { secrets },
    )
    const decoded = decodePaymentRequiredV2(withEscrow.paymentRequired ?? '')
    expect(decoded.accepts[0]?.extra).toEqual({ challengeId: withEscrow.id, escrow })
    expect(decoded.accepts[0]?.extra).toEqual(withEscrow.body.accepts?.[0]?.extra)
  })

  it('is absent when only MPP is offered', () => {
    const mpp = buildChallenge(
      { price: 20_000n, payTo, resource: 'https://api.example.com/v1/chat' },
      { secrets, offer: 'mpp' },
    )
    expect(mpp.paymentRequired).toBeUndefined()
    expect(mpp.headers['PAYMENT-REQUIRED']).toBeUndefined()
  })

  it('names the refusal code as its error after a refused payment', () => {
    const refused = buildChallenge(
      { price: 20_000n, payTo, resource: 'https://api.example.com/v1/chat' },
      { secrets, error: new PaymentError('replay', 'This payment was already used.') },
    )
    const explained = decodePaymentRequiredV2(refused.headers['PAYMENT-REQUIRED'] ?? '')
    expect(explained.error).toBe('replay')
    expect(explained.accepts).toEqual(
      decodePaymentRequiredV2(refused.paymentRequired ?? '').accepts,
    )
  })
})

describe('checkAccepted', () => {
  const check = (edit: Partial<PaymentRequirementV2>) => {
    const result = checkAccepted({ ...accepted, ...edit }, terms)
    return result.status === 'matched' ? 'matched' : result.error.code
  }

  it('matches the route terms, with addresses and coin types in any spelling', () => {
    expect(check({})).toBe('matched')
    expect(check({ payTo: payTo.toUpperCase().replace('0X', '0x') })).toBe('matched')
    expect(check({ asset: accepted.asset.replace(/^0x0*/, '0x') })).toBe('matched')
  })

  it.each<[string, Partial<PaymentRequirementV2>, string]>([
    ['another scheme', { scheme: 'upto' }, 'unsupported_scheme'],
    ['another network', { network: 'sui:testnet' }, 'unsupported_network'],
    ['a lower amount', { amount: '19999' }, 'requirements_mismatch'],
    ['a higher amount', { amount: '20001' }, 'requirements_mismatch'],
    ['another asset', { asset: '0x2::sui::SUI' }, 'requirements_mismatch'],
    ['another payTo', { payTo: `0x${'ab'.repeat(32)}` }, 'requirements_mismatch'],
    ['no challenge id', { extra: {} }, 'invalid_challenge'],
    ['no extra', { extra: null }, 'invalid_challenge'],
  ])('refuses %s', (_name, edit, code) => {
    expect(check(edit)).toBe(code)
  })
})
