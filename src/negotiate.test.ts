import { describe, expect, it } from 'vitest'
import { accepts, classifyRequest, offered } from './negotiate.js'

const request = (headers: Record<string, string>) =>
  new Request('https://api.example.com/v1/chat', { method: 'POST', headers })

describe('classifyRequest', () => {
  it('finds an x402 payment in X-PAYMENT (any case), even an empty one', () => {
    expect(classifyRequest(request({ 'x-payment': 'eyJ4In0=' }))).toEqual({
      dialect: 'x402',
      header: 'eyJ4In0=',
    })
    expect(classifyRequest(request({ 'X-PAYMENT': '' }))).toEqual({ dialect: 'x402', header: '' })
  })

  it('finds an MPP credential in Authorization, alone or among other schemes', () => {
    expect(classifyRequest(request({ authorization: 'Payment eyJhIjoxfQ' }))).toEqual({
      dialect: 'mpp',
      header: 'Payment eyJhIjoxfQ',
    })
    expect(classifyRequest(request({ authorization: 'Bearer abc, payment eyJhIjoxfQ' }))).toEqual({
      dialect: 'mpp',
      header: 'payment eyJhIjoxfQ',
    })
    const quoted = 'Digest realm="a, Payment x", nonce="b", Payment eyJhIjoxfQ'
    expect(classifyRequest(request({ authorization: quoted }))).toEqual({
      dialect: 'mpp',
      header: 'Payment eyJhIjoxfQ',
    })
  })

  it('classifies a bare Payment scheme as MPP, so that it is rejected rather than ignored', () => {
    expect(classifyRequest(request({ authorization: 'Payment' }))).toEqual({
      dialect: 'mpp',
      header: 'Payment',
    })
  })

  it('treats other Authorization schemes as unpaid', () => {
    expect(classifyRequest(request({ authorization: 'Bearer sk-123' }))).toEqual({
      dialect: 'none',
    })
    expect(classifyRequest(request({ authorization: 'PaymentX abc' }))).toEqual({ dialect: 'none' })
    expect(classifyRequest(request({}))).toEqual({ dialect: 'none' })
  })

  it('prefers MPP when both are present (its buyer has already paid)', () => {
    const both = request({ 'x-payment': 'eyJ4In0=', authorization: 'Payment eyJhIjoxfQ' })
    expect(classifyRequest(both).dialect).toBe('mpp')
  })
})

describe('offers', () => {
  it('offers both dialects by default, or the one the seller picks', () => {
    expect(offered()).toEqual({ x402: true, mpp: true })
    expect(offered('x402')).toEqual({ x402: true, mpp: false })
    expect(offered('mpp')).toEqual({ x402: false, mpp: true })
  })

  it('accepts a request only in an offered dialect; unpaid requests always get the 402', () => {
    expect(accepts({ dialect: 'mpp', header: 'Payment x' }, 'x402')).toBe(false)
    expect(accepts({ dialect: 'x402', header: 'x' }, 'x402')).toBe(true)
    expect(accepts({ dialect: 'x402', header: 'x' }, 'mpp')).toBe(false)
    expect(accepts({ dialect: 'none' }, 'mpp')).toBe(true)
    expect(accepts({ dialect: 'mpp', header: 'Payment x' })).toBe(true)
  })
})
