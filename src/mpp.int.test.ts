// Interop with mppx (the MPP reference implementation): our challenges parse with its parser and
// its HMAC verification accepts our ids; its challenges, credentials and receipts parse with ours.
import { Challenge, Credential, Receipt } from 'mppx'
import { describe, expect, it } from 'vitest'
import {
  buildChallenge,
  paymentRequiredResponse,
  type RouteTerms,
  verifyChallenge,
} from './challenge.js'
import {
  decodeReceipt,
  encodeReceipt,
  parseChallenge,
  parseChallenges,
  parseCredential,
  serializeCredential,
} from './mpp.js'

// mppx keys its HMAC with the UTF-8 bytes of a string secret; so do we.
const secret = 'an-integration-test-secret-of-32-bytes-or-more'
const secrets = [secret]
const terms: RouteTerms = {
  price: 20_000n,
  payTo: '0x5f1c7d4f1e9a0b3c2d8e6f7a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c',
  resource: 'https://api.example.com/v1/chat',
  description: 'Chat — "quoted" \\ café',
}
const digest = 'FnWbXnpFjqHLr6ZdcYy4e8mQ2rP5b3cN5pW1h8z9aTq'
const signature = Buffer.concat([Buffer.from([0]), Buffer.alloc(96, 9)]).toString('base64')

describe('mppx reads our challenge', () => {
  it('parses it from the 402 response and verifies its id with the same secret', () => {
    const response = paymentRequiredResponse(terms, { secrets })
    const theirs = Challenge.fromResponse(response)
    const ours = parseChallenge(response.headers.get('www-authenticate') ?? '')
    expect(theirs.id).toBe(ours.id)
    expect(theirs.request).toEqual(ours.request)
    expect(theirs.description).toBe(terms.description)
    expect(theirs.expires).toBe(ours.expires)
    expect(Challenge.verify(theirs, { secretKey: secret })).toBe(true)
    expect(Challenge.verify(theirs, { secretKey: `${secret}-other` })).toBe(false)
  })

  it('binds every term: mppx rejects the id once a bound parameter is changed', () => {
    const theirs = Challenge.deserialize(buildChallenge(terms, { secrets }).wwwAuthenticate ?? '')
    const changed = { ...theirs, request: { ...theirs.request, amount: '1' } }
    expect(Challenge.verify(changed, { secretKey: secret })).toBe(false)
    const moved = { ...theirs, opaque: 'eyJyZXNvdXJjZSI6Imh0dHBzOi8vZXZpbC5leGFtcGxlL3gifQ' }
    expect(Challenge.verify(moved, { secretKey: secret })).toBe(false)
  })
})

describe('we read what mppx emits', () => {
  it('a challenge mppx builds for the same terms has our id, parses, and verifies with us', () => {
    const now = Date.parse('2026-11-22T03:00:07Z')
    const pieces = buildChallenge(terms, { secrets, now })
    const ours = parseChallenge(pieces.wwwAuthenticate ?? '')
    const theirs = Challenge.from({
      secretKey: secret,
      realm: ours.realm,
      method: 'sui',
      intent: 'charge',
      request: ours.request,
      expires: ours.expires,
      description: ours.description,
      ...(ours.opaque === undefined ? {} : { opaque: ours.opaque }),
    } as Parameters<typeof Challenge.from>[0])
    expect(theirs.id).toBe(pieces.id)
    const header = Challenge.serialize(theirs)
    expect(parseChallenge(header)).toEqual(ours)
    const verified = verifyChallenge({
      id: theirs.id,
      terms,
      secrets,
      now,
      expires: theirs.expires,
    })
    expect(verified.status).toBe('valid')
  })

  it('several mppx challenges in one header, for other methods too', () => {
    const tempo = Challenge.from({
      secretKey: secret,
      realm: 'api.example.com',
      method: 'tempo',
      intent: 'charge',
      request: { amount: '1000000', currency: '0x20c0000000000000000000000000000000000001' },
      expires: '2026-11-22T03:05:00.000Z',
      meta: { route: 'chat' },
    })
    const sui = Challenge.deserialize(buildChallenge(terms, { secrets }).wwwAuthenticate ?? '')
    const header = `${Challenge.serialize(tempo)}, ${Challenge.serialize(sui)}`
    const parsed = parseChallenges(header)
    expect(parsed.map((c) => [c.method, c.id])).toEqual([
      ['tempo', tempo.id],
      ['sui', sui.id],
    ])
    expect(parsed[0]?.opaque).toBe(tempo.opaque)
  })

  it('a credential mppx serializes parses with ours, and ours with mppx', () => {
    const challenge = Challenge.deserialize(
      buildChallenge(terms, { secrets }).wwwAuthenticate ?? '',
    )
    const header = Credential.serialize({
      challenge,
      payload: { digest, signature },
      source: 'did:pkh:sui:mainnet:0x2',
    })
    const ours = parseCredential(`Bearer tok, ${header}`)
    expect(ours.payload).toEqual({ digest, signature })
    expect(ours.source).toBe('did:pkh:sui:mainnet:0x2')
    expect(ours.challenge.id).toBe(challenge.id)
    expect(ours.challenge.request).toEqual(challenge.request)
    expect(ours.challenge.opaque).toBe(challenge.opaque)

    const back = Credential.deserialize(serializeCredential(ours))
    expect(back.payload).toEqual({ digest, signature })
    expect(Challenge.verify(back.challenge, { secretKey: secret })).toBe(true)
  })
})

describe('Payment-Receipt', () => {
  const receipt = {
    status: 'success' as const,
    method: 'sui',
    timestamp: '2026-11-22T03:00:09.000Z',
    reference: digest,
  }

  it('ours parses with mppx', () => {
    expect(Receipt.deserialize(encodeReceipt(receipt))).toEqual(receipt)
  })

  it("mppx's parses with ours", () => {
    expect(decodeReceipt(Receipt.serialize(receipt))).toEqual(receipt)
  })
})
