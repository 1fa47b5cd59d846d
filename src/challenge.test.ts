import { createHmac } from 'node:crypto'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import vectors from '../conformance/vectors/challenge.json' with { type: 'json' }
import {
  buildChallenge,
  paymentRequiredResponse,
  prepareTerms,
  type RouteTerms,
  resourceUrl,
  verifyChallenge,
} from './challenge.js'
import { isPaymentError, PaymentError } from './errors.js'
import { parseChallenge } from './mpp.js'

const vector = vectors.challenges[0] as (typeof vectors.challenges)[number]
const secret = vectors.secret
const secrets = [secret]
const terms: RouteTerms = { ...vector.terms, price: BigInt(vector.terms.price) }
const issuedAt = Date.parse(vector.now)
const expiresAt = Date.parse(vector.expected.expires)

function codeOf(run: () => unknown): string {
  try {
    run()
  } catch (error) {
    if (isPaymentError(error)) return error.code
    throw error
  }
  return 'no error'
}

// 10 000-run property tests take about a second each on an idle machine; the time limit is generous
// so that a loaded CI machine does not fail them (timing goals live in bench/, not here).
const fuzzTime = { timeout: 60_000 }

describe('building a 402', () => {
  it('matches the test vector, and the id is the documented HMAC', () => {
    const pieces = buildChallenge(terms, { secrets, now: issuedAt })
    expect(pieces.id).toBe(vector.expected.id)
    expect(pieces.expires).toBe(vector.expected.expires)
    expect(pieces.wwwAuthenticate).toBe(vector.expected.wwwAuthenticate)
    expect(pieces.body).toEqual(vector.expected.body)
    const hmac = createHmac('sha256', secret).update(vector.expected.hmacInput).digest('base64url')
    expect(hmac).toBe(vector.expected.id)
  })

  it('names the host name as the realm by default, without the port (mppx: realm = host name)', () => {
    for (const resource of [
      'http://127.0.0.1:4020/openai/v1/chat/completions',
      'https://api.example.com:8443/v1/chat',
      'http://[::1]:4020/v1/x',
    ]) {
      const pieces = buildChallenge({ ...terms, resource }, { secrets, now: issuedAt })
      const realm = parseChallenge(pieces.wwwAuthenticate ?? '').realm
      expect(realm).toBe(new URL(resource).hostname)
      expect(realm).not.toContain(`:${new URL(resource).port}`)
      const configured = buildChallenge(
        { ...terms, resource },
        { secrets, now: issuedAt, realm: 'pay.example.com' },
      )
      expect(parseChallenge(configured.wwwAuthenticate ?? '').realm).toBe('pay.example.com')
    }
  })

  it('answers one Response in both dialects with the same id', async () => {
    const response = paymentRequiredResponse(terms, { secrets, now: issuedAt })
    expect(response.status).toBe(402)
    expect(response.headers.get('content-type')).toBe('application/json')
    expect(response.headers.get('cache-control')).toBe('no-store')
    const challenge = parseChallenge(response.headers.get('www-authenticate') ?? '')
    const body = await response.json()
    expect(body.accepts[0].extra.challengeId).toBe(challenge.id)
    expect(challenge.request).toEqual({
      amount: '20000',
      currency: body.accepts[0].asset,
      recipient: body.accepts[0].payTo,
      methodDetails: { network: 'sui:mainnet' },
    })
  })

  it('offers only x402 or only MPP when asked', () => {
    const x402 = buildChallenge(terms, { secrets, now: issuedAt, offer: 'x402' })
    expect(x402.headers['WWW-Authenticate']).toBeUndefined()
    expect(x402.body.accepts?.[0]?.extra?.challengeId).toBe(x402.id)
    expect(x402.body.detail).not.toContain('MPP')
    const mpp = buildChallenge(terms, { secrets, now: issuedAt, offer: 'mpp' })
    expect(mpp.headers['WWW-Authenticate']).toContain(`id="${mpp.id}"`)
    expect(mpp.body).toEqual({
      type: 'https://paymentauth.org/problems/payment-required',
      title: 'Payment Required',
      status: 402,
      detail:
        'This resource costs 0.020000 USDC on sui:mainnet. Pay with Authorization: Payment (MPP).',
    })
  })

  it('explains a rejected payment in the problem type, the x402 error and the code', () => {
    const error = new PaymentError('replay', 'This payment was already used.')
    const pieces = buildChallenge(terms, { secrets, now: issuedAt, error })
    expect(pieces.body).toMatchObject({
      type: 'https://paymentauth.org/problems/verification-failed',
      error: 'This payment was already used.',
      detail: 'This payment was already used.',
      code: 'replay',
      status: 402,
    })
    expect(pieces.id).toBe(vector.expected.id)
  })

  it('publishes escrow terms and the output schema', () => {
    const escrowed = { ...terms, escrow: { required: true }, outputSchema: { type: 'object' } }
    const requirement = buildChallenge(escrowed, { secrets, now: issuedAt }).body.accepts?.[0]
    expect(requirement?.extra).toEqual({
      challengeId: expect.any(String),
      escrow: { required: true },
    })
    expect(requirement?.outputSchema).toEqual({ type: 'object' })
  })

  it('follows changes to a terms object it has seen before', () => {
    const mutable = { ...terms }
    const before = buildChallenge(mutable, { secrets, now: issuedAt })
    mutable.price = 50_000n
    const after = buildChallenge(mutable, { secrets, now: issuedAt })
    expect(after.body.accepts?.[0]?.maxAmountRequired).toBe('50000')
    expect(after.id).not.toBe(before.id)
  })

  it('rejects bad terms and short secrets as configuration errors', () => {
    const build = (t: Partial<RouteTerms>, s: readonly string[] = secrets) =>
      codeOf(() => buildChallenge({ ...terms, ...t }, { secrets: s, now: issuedAt }))
    expect(build({ price: 0n })).toBe('invalid_config')
    expect(build({ price: -1n })).toBe('invalid_config')
    expect(build({ payTo: 'alice' })).toBe('invalid_config')
    expect(build({ resource: 'ftp://x/y' })).toBe('invalid_config')
    expect(build({ network: 'sui:devnet' })).toBe('invalid_config')
    expect(build({ asset: 'not a type' })).toBe('invalid_config')
    expect(build({}, [])).toBe('invalid_secret')
    expect(codeOf(() => buildChallenge(terms, { secrets, now: new Date('nope') }))).toBe(
      'invalid_config',
    )
    let error: unknown
    try {
      buildChallenge(terms, { secrets: ['short-secret'] })
    } catch (e) {
      error = e
    }
    expect(isPaymentError(error) && error.code).toBe('invalid_secret')
    expect(
      JSON.stringify([(error as Error).message, (error as PaymentError).details]),
    ).not.toContain('short-secret')
  })
})

describe('verifying a challenge id', fuzzTime, () => {
  const id = vector.expected.id
  const verify = (over: Partial<Parameters<typeof verifyChallenge>[0]> = {}) =>
    verifyChallenge({ id, terms, secrets, now: issuedAt + 1000, ...over }).status

  it('accepts the id alone (x402) until it expires, then says expired', () => {
    expect(verifyChallenge({ id, terms, secrets, now: issuedAt })).toEqual({
      status: 'valid',
      expires: new Date(expiresAt),
    })
    expect(verify({ now: expiresAt - 1 })).toBe('valid')
    expect(verify({ now: expiresAt })).toBe('expired')
    expect(verify({ now: expiresAt + 60_000 })).toBe('expired')
    expect(verify({ now: expiresAt + 3_600_000 })).toBe('invalid')
  })

  it('accepts the id with its echoed expiry (MPP), and not with a changed one', () => {
    expect(verify({ expires: vector.expected.expires })).toBe('valid')
    expect(verify({ expires: '2026-11-22T03:01:30Z' })).toBe('invalid')
    expect(verify({ expires: vector.expected.expires, now: expiresAt })).toBe('expired')
    expect(verify({ expires: 'not a date' })).toBe('invalid')
  })

  it('does not verify for other terms', () => {
    expect(verify({ terms: { ...terms, resource: 'https://api.example.com/v1/image' } })).toBe(
      'invalid',
    )
    expect(verify({ terms: { ...terms, price: 20_001n } })).toBe('invalid')
    expect(verify({ terms: { ...terms, payTo: '0x2' } })).toBe('invalid')
    expect(verify({ terms: { ...terms, network: 'sui:testnet' } })).toBe('invalid')
    expect(verify({ terms: { ...terms, asset: '0x2::sui::SUI' } })).toBe('invalid')
    expect(verify({ realm: 'other.example.com' })).toBe('invalid')
    expect(verify({ terms: prepareTerms(terms), realm: 'other.example.com' })).toBe('invalid')
    expect(verify({ terms: prepareTerms(terms) })).toBe('valid')
    expect(verify({ terms: { ...terms, description: 'changed text only' } })).toBe('valid')
  })

  it('rejects ids that are not ours, with an error and no exception', () => {
    for (const bad of ['', 'x', `${id}A`, id.replace(/^./, id[0] === 'A' ? 'B' : 'A'), '%%%']) {
      const result = verifyChallenge({ id: bad, terms, secrets, now: issuedAt })
      expect(result.status).toBe('invalid')
      expect(result.status !== 'valid' && result.error.code).toBe('invalid_challenge')
    }
  })

  it('rotates secrets: the first signs, all verify, removed ones stop verifying', () => {
    const next = 'the-next-secret-with-at-least-32-bytes!!'
    const rotated = [next, secret]
    expect(verify({ secrets: rotated })).toBe('valid')
    const fresh = buildChallenge(terms, { secrets: rotated, now: issuedAt })
    expect(fresh.id).not.toBe(id)
    expect(verifyChallenge({ id: fresh.id, terms, secrets: rotated, now: issuedAt }).status).toBe(
      'valid',
    )
    expect(verify({ secrets: [next] })).toBe('invalid')
  })

  it('reads a secret list changed in place again: the new first secret signs from then on', () => {
    const next = 'the-next-secret-with-at-least-32-bytes!!'
    const list = [secret]
    const before = buildChallenge(terms, { secrets: list, now: issuedAt })
    expect(before.id).toBe(id)
    list.unshift(next)
    const after = buildChallenge(terms, { secrets: list, now: issuedAt })
    const again = buildChallenge(terms, { secrets: list, now: issuedAt })
    expect(after.id).not.toBe(id)
    expect(again.id).toBe(after.id)
    expect(verifyChallenge({ id: after.id, terms, secrets: [next], now: issuedAt }).status).toBe(
      'valid',
    )
    list.splice(0, list.length, 'short')
    expect(codeOf(() => buildChallenge(terms, { secrets: list, now: issuedAt }))).toBe(
      'invalid_secret',
    )
  })

  it('lives more than T - T/4 and at most T seconds: never accepted after what the buyer is shown (property)', () => {
    const anyTerms = fc.record({
      start: fc.integer({ min: 1_700_000_000_000, max: 1_900_000_000_000 }),
      lifetime: fc.integer({ min: 1, max: 600 }),
      wait: fc.double({ min: 0, max: 1, noNaN: true }),
    })
    fc.assert(
      fc.property(anyTerms, ({ start, lifetime, wait }) => {
        const t = { ...terms, maxTimeoutSeconds: lifetime }
        const pieces = buildChallenge(t, { secrets, now: start })
        const life = pieces.expiresAt * 1000 - start
        const bucket = Math.max(1, Math.ceil(lifetime / 4))
        expect(life).toBeGreaterThan((lifetime - bucket) * 1000)
        expect(life).toBeLessThanOrEqual(lifetime * 1000)
        const at = start + Math.floor(wait * (life - 1))
        expect(verifyChallenge({ id: pieces.id, terms: t, secrets, now: at }).status).toBe('valid')
        // The advertised deadlines: `maxTimeoutSeconds` after the 402 (x402), `expires` (MPP).
        const advertised = start + lifetime * 1000
        expect(verifyChallenge({ id: pieces.id, terms: t, secrets, now: advertised }).status).toBe(
          'expired',
        )
        const shown = Date.parse(pieces.expires)
        expect(
          verifyChallenge({ id: pieces.id, terms: t, secrets, now: shown, expires: pieces.expires })
            .status,
        ).toBe('expired')
        expect(verifyChallenge({ id: pieces.id, terms: t, secrets, now: shown }).status).toBe(
          'expired',
        )
        const late = pieces.expiresAt * 1000 + Math.floor(wait * lifetime * 1000)
        expect(verifyChallenge({ id: pieces.id, terms: t, secrets, now: late }).status).toBe(
          'expired',
        )
      }),
      { numRuns: 300 },
    )
  })
})

describe('resourceUrl', () => {
  const request = (url: string, headers: Record<string, string> = {}) =>
    new Request(url, { headers })
  const forwarded = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'api.example.com' }

  it('uses the request URL without its query by default, ignoring X-Forwarded-*', () => {
    expect(resourceUrl(request('http://127.0.0.1:8080/v1/chat?x=1', forwarded))).toBe(
      'http://127.0.0.1:8080/v1/chat',
    )
  })

  it('believes X-Forwarded-Proto/Host only with trustProxy, and only well-formed ones', () => {
    const r = request('http://10.0.0.5:8080/v1/chat', forwarded)
    expect(resourceUrl(r, { trustProxy: true })).toBe('https://api.example.com/v1/chat')
    const listed = request('http://10.0.0.5/v1/chat', {
      'x-forwarded-proto': 'https, http',
      'x-forwarded-host': 'api.example.com:8443, internal',
    })
    expect(resourceUrl(listed, { trustProxy: true })).toBe('https://api.example.com:8443/v1/chat')
    const hostile = request('http://10.0.0.5/v1/chat', {
      'x-forwarded-proto': 'javascript',
      'x-forwarded-host': 'evil.com/path@x',
    })
    expect(resourceUrl(hostile, { trustProxy: true })).toBe('http://10.0.0.5/v1/chat')
  })

  it('prefers the configured public base URL, with its path prefix', () => {
    const r = request('http://10.0.0.5:8080/v1/chat', forwarded)
    expect(
      resourceUrl(r, { publicBaseUrl: 'https://pay.example.com/api/', trustProxy: true }),
    ).toBe('https://pay.example.com/api/v1/chat')
  })
})
