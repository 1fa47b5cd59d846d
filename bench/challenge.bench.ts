// The 402 hot path: building and serialising a challenge in both dialects, and verifying ids.
// Run: npx vitest bench --run bench/challenge.bench.ts   (target: < 20 µs per 402)
import { bench, describe } from 'vitest'
import {
  buildChallenge,
  type PreparedTerms,
  paymentRequiredResponse,
  prepareTerms,
  type RouteTerms,
  verifyChallenge,
} from '../src/challenge.js'
import { PaymentError } from '../src/errors.js'
import { parseChallenge, parseCredential, serializeCredential } from '../src/mpp.js'
import { decodeXPayment, encodeXPayment } from '../src/x402.js'

const secrets = ['a-benchmark-secret-that-is-at-least-32-bytes-long']
const rotated = ['the-newest-secret-that-is-at-least-32-bytes-long', ...secrets]
const terms: RouteTerms = {
  price: 20_000n,
  payTo: '0x5f1c7d4f1e9a0b3c2d8e6f7a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c',
  resource: 'https://api.example.com/v1/chat',
  description: 'Chat completion',
}
const prepared: PreparedTerms = prepareTerms(terms)
const start = Date.now()
const rejected = new PaymentError('replay', 'This payment was already used.')

let tick = 0
describe('build + serialise one 402 (both dialects)', () => {
  bench('pieces, same expiry bucket (cached per route)', () => {
    buildChallenge(prepared, { secrets, now: start })
  })
  bench('pieces, fresh terms object per request ({ ...route, resource })', () => {
    buildChallenge(
      { ...terms, resource: 'https://api.example.com/v1/chat' },
      { secrets, now: start },
    )
  })
  bench('pieces, new expiry bucket every call (HMAC + JSON + header)', () => {
    tick += 15_000
    buildChallenge(prepared, { secrets, now: start + tick })
  })
  bench('pieces with a rejection reason (never cached)', () => {
    buildChallenge(prepared, { secrets, now: start, error: rejected })
  })
  bench('Web Response, same bucket (pieces + new Response)', () => {
    paymentRequiredResponse(prepared, { secrets, now: start })
  })
})

const issued = buildChallenge(prepared, { secrets, now: start })
// signed by the previous secret, which `rotated` lists second
const old = issued.id
describe('verify a challenge id', () => {
  bench('x402: id only, current secret', () => {
    verifyChallenge({ id: issued.id, terms: prepared, secrets, now: start + 1000 })
  })
  bench('x402: id only, previous secret (rotation)', () => {
    verifyChallenge({ id: old, terms: prepared, secrets: rotated, now: start + 1000 })
  })
  bench('MPP: id + echoed expires', () => {
    verifyChallenge({
      id: issued.id,
      terms: prepared,
      secrets,
      now: start + 1000,
      expires: issued.expires,
    })
  })
  bench('forged id (worst case: every candidate tried)', () => {
    verifyChallenge({ id: 'A'.repeat(43), terms: prepared, secrets, now: start + 1000 })
  })
})

const xPayment = encodeXPayment({
  payload: {
    challengeId: issued.id,
    transaction: Buffer.alloc(420, 7).toString('base64'),
    signature: Buffer.alloc(97, 1).toString('base64'),
  },
})
const credential = serializeCredential({
  challenge: parseChallenge(issued.wwwAuthenticate ?? ''),
  payload: {
    digest: 'FnWbXnpFjqHLr6ZdcYy4e8mQ2rP5b3cN5pW1h8z9aTq',
    signature: Buffer.alloc(97, 1).toString('base64'),
  },
})
describe('decode a payment header', () => {
  bench('X-PAYMENT (≈ 900 bytes)', () => {
    decodeXPayment(xPayment)
  })
  bench('Authorization: Payment credential', () => {
    parseCredential(credential)
  })
})
