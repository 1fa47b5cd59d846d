import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { buildChallenge, type RouteTerms } from '../challenge.js'
import { WORMHOLE_USDC_TYPE } from '../testing/index.js'
import { readOffers, type SelectOptions, selectOffer, usdcTypeOf } from './select.js'

const payTo = new Ed25519Keypair().toSuiAddress()
const secrets = ['a-challenge-secret-of-at-least-32-bytes!']
const mainnet: SelectOptions = { network: 'sui:mainnet', canSubmit: true }

function offersOf(terms: Partial<RouteTerms> = {}, offer: 'both' | 'x402' | 'mpp' = 'both') {
  const pieces = buildChallenge(
    { price: 20_000n, payTo, resource: 'https://api.example.com/paid', ...terms },
    { secrets, offer },
  )
  return readOffers({
    bodyText: pieces.bodyText,
    wwwAuthenticate: pieces.wwwAuthenticate ?? null,
  }).offers
}

function refusalCode(selection: ReturnType<typeof selectOffer>): string {
  return selection.status === 'refused' ? selection.error.code : 'selected'
}

describe('x402 version 2 offers', () => {
  const pieces = () =>
    buildChallenge({ price: 20_000n, payTo, resource: 'https://api.example.com/paid' }, { secrets })
  const read = (p: ReturnType<typeof pieces>, paymentRequired: string | null | undefined) =>
    readOffers({
      bodyText: p.bodyText,
      wwwAuthenticate: p.wwwAuthenticate ?? null,
      paymentRequired,
    })

  it('reads PAYMENT-REQUIRED as a version 2 offer with the terms of the body', () => {
    const p = pieces()
    const { offers } = read(p, p.paymentRequired)
    expect(offers.map((o) => (o.dialect === 'x402' ? `x402 v${o.version}` : o.dialect))).toEqual([
      'x402 v2',
      'x402 v1',
      'mpp',
    ])
    const [v2, v1] = offers
    if (v2?.dialect !== 'x402' || v1?.dialect !== 'x402') throw new Error('x402 offers expected')
    expect(v2.requirement).toEqual(v1.requirement)
    expect(v2.challengeId).toBe(p.id)
  })

  it('prefers x402 version 2, then version 1, then MPP; `prefer: mpp` puts MPP first', () => {
    const p = pieces()
    const chosen = (offers: ReturnType<typeof read>['offers'], prefer?: 'mpp') => {
      const s = selectOffer(offers, { ...mainnet, prefer })
      return s.status === 'selected'
        ? s.offer.dialect === 'x402'
          ? `x402 v${s.offer.version}`
          : 'mpp'
        : s.error.code
    }
    expect(chosen(read(p, p.paymentRequired).offers)).toBe('x402 v2')
    expect(chosen([...read(p, p.paymentRequired).offers].reverse())).toBe('x402 v2')
    expect(chosen(read(p, undefined).offers)).toBe('x402 v1')
    expect(chosen(read(p, p.paymentRequired).offers, 'mpp')).toBe('mpp')
  })

  it('lists a malformed PAYMENT-REQUIRED as unreadable and still reads the body', () => {
    const p = pieces()
    const result = read(p, 'not base64!')
    expect(result.unreadable).toEqual([{ dialect: 'x402', reason: 'invalid_encoding' }])
    expect(result.offers.map((o) => o.dialect)).toEqual(['x402', 'mpp'])
  })
})

describe('reading a 402', () => {
  it('reads one offer per dialect from our own 402, with the same challenge id', () => {
    const offers = offersOf()
    expect(offers.map((o) => o.dialect)).toEqual(['x402', 'mpp'])
    const [x402, mpp] = offers
    expect(x402).toMatchObject({ amount: 20_000n, payTo, network: 'sui:mainnet', escrow: false })
    expect(mpp).toMatchObject({ amount: 20_000n, payTo, scheme: 'exact', escrow: false })
    expect(x402?.challengeId).toBe(mpp?.challengeId)
  })

  it('never throws on untrusted input, whatever the body and header', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ maxLength: 400 }), fc.json({ maxDepth: 4 })),
        fc.option(fc.string({ maxLength: 400 }), { nil: null }),
        (bodyText, wwwAuthenticate) => {
          const result = readOffers({ bodyText, wwwAuthenticate })
          expect(Array.isArray(result.offers)).toBe(true)
        },
      ),
    )
  })

  it('lists a malformed challenge as unreadable instead of failing', () => {
    const result = readOffers({ bodyText: '{"accepts": 3}', wwwAuthenticate: 'Payment id=' })
    expect(result.offers).toEqual([])
    expect(result.unreadable.map((u) => u.dialect)).toEqual(['x402', 'mpp'])
  })
})

describe('choosing what to pay', () => {
  it('prefers x402 by default and MPP when asked', () => {
    const offers = offersOf()
    const x = selectOffer(offers, mainnet)
    const m = selectOffer(offers, { ...mainnet, prefer: 'mpp' })
    expect(x.status === 'selected' && x.offer.dialect).toBe('x402')
    expect(m.status === 'selected' && m.offer.dialect).toBe('mpp')
  })

  it('never chooses wUSDC, another network, or a scheme other than exact', () => {
    expect(refusalCode(selectOffer(offersOf({ asset: WORMHOLE_USDC_TYPE }), mainnet))).toBe(
      'NO_PAYABLE_REQUIREMENT',
    )
    expect(refusalCode(selectOffer(offersOf({ network: 'sui:testnet' }), mainnet))).toBe(
      'NO_PAYABLE_REQUIREMENT',
    )
    const upto = offersOf().map((o) => ({ ...o, scheme: 'upto' }))
    expect(refusalCode(selectOffer(upto, mainnet))).toBe('NO_PAYABLE_REQUIREMENT')
    // The same route on testnet is payable by a testnet client.
    const testnet = selectOffer(offersOf({ network: 'sui:testnet' }), {
      network: 'sui:testnet',
      canSubmit: true,
    })
    expect(testnet.status).toBe('selected')
    expect(usdcTypeOf('sui:testnet')).toMatch(/::usdc::USDC$/)
  })

  it('refuses escrow in both dialects, even where the MPP challenge looks like a charge', () => {
    const offers = offersOf({ escrow: { releaseAfterSeconds: 60 } })
    expect(offers.every((o) => o.escrow)).toBe(true)
    expect(refusalCode(selectOffer(offers, mainnet))).toBe('ESCROW_REQUIRED')
    expect(refusalCode(selectOffer(offers, { ...mainnet, prefer: 'mpp' }))).toBe('ESCROW_REQUIRED')
  })

  it('lets a signer that cannot submit pay only x402', () => {
    const cannot = { ...mainnet, canSubmit: false }
    expect(refusalCode(selectOffer(offersOf({}, 'mpp'), cannot))).toBe('DIALECT_UNSUPPORTED')
    const both = selectOffer(offersOf(), { ...cannot, prefer: 'mpp' })
    expect(both.status === 'selected' && both.offer.dialect).toBe('x402')
  })

  it('says NO_PAYABLE_REQUIREMENT for a 402 with no offer at all', () => {
    const selection = selectOffer([], mainnet)
    expect(refusalCode(selection)).toBe('NO_PAYABLE_REQUIREMENT')
  })
})
