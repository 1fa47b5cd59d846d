import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import vectors from '../conformance/vectors/mpp.json' with { type: 'json' }
import { isPaymentError, PaymentError } from './errors.js'
import {
  type Challenge,
  decodeReceipt,
  decodeRequest,
  encodeReceipt,
  encodeRequest,
  parseChallenge,
  parseChallenges,
  parseCredential,
  paymentRequiredProblem,
  prepareCredentials,
  problemSchema,
  proofMessage,
  serializeChallenges,
  serializeCredential,
  suiChargePayload,
} from './mpp.js'

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

describe('request parameter', () => {
  it.each(vectors.request)('$name', (v) => {
    expect(encodeRequest(v.object)).toBe(v.encoded)
    expect(decodeRequest(v.encoded)).toEqual(v.object)
  })
})

describe('WWW-Authenticate: Payment challenges', () => {
  it.each(vectors.challenges.valid)('parses: $name', (v) => {
    expect(parseChallenges(v.header)).toEqual(v.expected)
  })
  it.each(vectors.challenges.invalid)('rejects with $code: $name', (v) => {
    expect(codeOf(() => parseChallenges(header(v.header as HeaderSpec)))).toBe(v.code)
  })

  it('serializes challenges that parse back identically, several in one header', () => {
    const list = vectors.challenges.valid[2]?.expected as Challenge[]
    const serialized = serializeChallenges(list)
    expect(parseChallenges(serialized)).toEqual(list)
    expect(serialized).toBe(vectors.challenges.valid[2]?.header)
  })

  it('escapes quotes, backslashes and non-ASCII so the header stays printable ASCII', () => {
    const challenge = {
      ...(vectors.challenges.valid[1]?.expected[0] as Challenge),
      description: 'a "quoted" \\ path — café\nnext',
    }
    const serialized = serializeChallenges([challenge])
    expect(serialized).toMatch(/^[\x20-\x7e]+$/)
    expect(serialized).toContain(
      'description="a \\"quoted\\" \\\\ path \\u2014 caf\\u00e9\\u000anext"',
    )
    expect(parseChallenge(serialized)).toEqual(challenge)
  })

  it('says when there is no Payment challenge', () => {
    expect(codeOf(() => parseChallenge('Bearer realm="x"'))).toBe('malformed_header')
  })
})

describe('Authorization: Payment credentials', () => {
  it.each(vectors.credentials.valid)('parses: $name', (v) => {
    expect(parseCredential(v.header)).toEqual(v.expected)
  })
  it.each(vectors.credentials.invalid)('rejects with $code: $name', (v) => {
    expect(codeOf(() => parseCredential(header(v.header as HeaderSpec)))).toBe(v.code)
  })

  it('rejects a bare Payment scheme without credentials', () => {
    expect(codeOf(() => parseCredential('Payment'))).toBe('malformed_credential')
    expect(codeOf(() => parseCredential('Bearer x, Payment'))).toBe('malformed_credential')
  })

  it('serializes a credential that parses back identically', () => {
    const credential = vectors.credentials.valid[1]?.expected as Parameters<
      typeof serializeCredential
    >[0]
    const serialized = serializeCredential(credential)
    expect(serialized).toMatch(/^Payment [A-Za-z0-9_-]+$/)
    expect(parseCredential(serialized)).toEqual(credential)
  })

  it('writes with a prepared challenge what it writes one credential at a time: the JSON of the whole', () => {
    for (const { expected } of vectors.credentials.valid) {
      const credential = expected as Parameters<typeof serializeCredential>[0]
      const { request, ...rest } = credential.challenge
      for (const source of [undefined, 'did:pkh:sui:0x1']) {
        const whole = {
          challenge: { ...rest, request: encodeRequest(request) },
          payload: credential.payload,
          ...(source === undefined ? {} : { source }),
        }
        const written = prepareCredentials(credential.challenge)(credential.payload, source)
        expect(written).toBe(`Payment ${Buffer.from(JSON.stringify(whole)).toString('base64url')}`)
        const one = { challenge: credential.challenge, payload: credential.payload }
        expect(written).toBe(serializeCredential(source === undefined ? one : { ...one, source }))
      }
    }
  })

  it('decodes an echoed request once: the same frozen object for each credential that echoes it', () => {
    const credential = vectors.credentials.valid[1]?.expected as Parameters<
      typeof serializeCredential
    >[0]
    const first = parseCredential(serializeCredential(credential))
    const second = parseCredential(
      serializeCredential({ ...credential, payload: { ...credential.payload, again: true } }),
    )
    expect(second.challenge.request).toBe(first.challenge.request)
    expect(first.challenge.request).toEqual(credential.challenge.request)
    expect(Object.isFrozen(first.challenge.request)).toBe(true)
    const nested = Object.values(first.challenge.request).filter((v) => typeof v === 'object')
    expect(nested.length).toBeGreaterThan(0)
    for (const inner of nested) expect(Object.isFrozen(inner)).toBe(true)
    // Another request is decoded (and checked) on its own.
    const other = { ...credential.challenge.request, amount: '1' }
    const third = parseCredential(
      serializeCredential({
        ...credential,
        challenge: { ...credential.challenge, request: other },
      }),
    )
    expect(third.challenge.request).toEqual(other)
    const broken = Buffer.from(
      JSON.stringify({
        challenge: { ...credential.challenge, request: 'bm90IGpzb24' },
        payload: credential.payload,
      }),
    ).toString('base64url')
    expect(codeOf(() => parseCredential(`Payment ${broken}`))).toBe('malformed_credential')
  })

  it('reads the sui payload, and refuses other methods with a 400', () => {
    const credential = parseCredential(vectors.credentials.valid[0]?.header as string)
    expect(suiChargePayload(credential)).toEqual(credential.payload)
    const other = { ...credential, challenge: { ...credential.challenge, method: 'tempo' } }
    let error: unknown
    try {
      suiChargePayload(other)
    } catch (e) {
      error = e
    }
    expect(isPaymentError(error) && [error.code, error.status]).toEqual(['method_unsupported', 400])
  })

  it.each(vectors.credentials.suiPayload.invalid)('rejects a sui payload: $name', (v) => {
    const credential = parseCredential(vectors.credentials.valid[0]?.header as string)
    expect(codeOf(() => suiChargePayload({ ...credential, payload: v.payload }))).toBe(v.code)
  })
})

describe('Payment-Receipt', () => {
  it.each(vectors.receipts.valid)('decodes: $name', (v) => {
    expect(decodeReceipt(v.header)).toEqual(v.expected)
  })
  it.each(vectors.receipts.invalid)('rejects with $code: $name', (v) => {
    expect(codeOf(() => decodeReceipt(v.header))).toBe(v.code)
  })
  it('encodes a receipt as unpadded base64url that decodes back', () => {
    const receipt = vectors.receipts.valid[0]?.expected as Parameters<typeof encodeReceipt>[0]
    const encoded = encodeReceipt(receipt)
    expect(encoded).toMatch(/^[A-Za-z0-9_-]+$/)
    expect(decodeReceipt(encoded)).toEqual(receipt)
  })
})

describe('proof and problems', () => {
  it('the proof message is the JCS JSON of the documented fields', () => {
    expect(proofMessage(vectors.proof.input)).toBe(vectors.proof.message)
  })

  it('problem documents use the paymentauth.org types', () => {
    const problem = paymentRequiredProblem('pay first')
    expect(problemSchema.parse(problem)).toEqual({
      type: 'https://paymentauth.org/problems/payment-required',
      title: 'Payment Required',
      status: 402,
      detail: 'pay first',
    })
    const expired = new PaymentError('challenge_expired', 'too late').toProblem()
    expect(expired.type).toBe('https://paymentauth.org/problems/payment-expired')
  })
})

describe('parsers never throw anything but a PaymentError', fuzzTime, () => {
  const challengeHeaders = vectors.challenges.valid.map((v) => v.header)
  const credentialHeaders = vectors.credentials.valid.map((v) => v.header)
  const mutate = (base: string, at: number, cut: number, insert: string) => {
    const i = at % (base.length + 1)
    return base.slice(0, i) + insert + base.slice(i + cut)
  }
  const mutation = fc.record({
    at: fc.nat(),
    cut: fc.nat(6),
    insert: fc.oneof(fc.string({ maxLength: 4 }), fc.constantFrom('"', '\\', ',', '=', ' ', '\\u')),
  })
  const runs = { numRuns: 10_000 }

  const anyString = fc.oneof(
    fc.string({ maxLength: 200 }),
    fc.string({ unit: 'binary', maxLength: 100 }),
  )

  it('for arbitrary strings: challenges and credentials', () => {
    fc.assert(
      fc.property(anyString, (s) => {
        onlyPaymentErrors(() => parseChallenges(s))
        onlyPaymentErrors(() => parseCredential(s))
      }),
      runs,
    )
  })

  it('for arbitrary strings: receipts and request parameters', () => {
    fc.assert(
      fc.property(anyString, (s) => {
        onlyPaymentErrors(() => decodeReceipt(s))
        onlyPaymentErrors(() => decodeRequest(s))
      }),
      runs,
    )
  })

  it('for mutated valid challenges', () => {
    fc.assert(
      fc.property(fc.nat(challengeHeaders.length - 1), mutation, (which, m) => {
        onlyPaymentErrors(() =>
          parseChallenges(mutate(challengeHeaders[which] as string, m.at, m.cut, m.insert)),
        )
      }),
      runs,
    )
  })

  it('for mutated valid credentials and receipts', () => {
    const receipt = vectors.receipts.valid[0]?.header as string
    fc.assert(
      fc.property(fc.nat(credentialHeaders.length - 1), mutation, (which, m) => {
        onlyPaymentErrors(() =>
          parseCredential(mutate(credentialHeaders[which] as string, m.at, m.cut, m.insert)),
        )
        onlyPaymentErrors(() => decodeReceipt(mutate(receipt, m.at, m.cut, m.insert)))
      }),
      runs,
    )
  })

  it('for mutated JSON inside a valid credential encoding', () => {
    const token = (credentialHeaders[0] as string).slice('Payment '.length)
    const json = Buffer.from(token, 'base64url').toString()
    fc.assert(
      fc.property(mutation, (m) => {
        const mutated = Buffer.from(mutate(json, m.at, m.cut, m.insert)).toString('base64url')
        onlyPaymentErrors(() => parseCredential(`Payment ${mutated}`))
      }),
      runs,
    )
  })
})
