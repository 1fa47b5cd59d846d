import { describe, expect, it } from 'vitest'
import { methodsFor } from '../methods/index.js'
import { notTaken, presentedPayment, routeMethods } from './methods.js'

const request = (headers: Record<string, string>) =>
  new Request('https://api.example.com/v1/chat', { method: 'POST', headers })

const all = routeMethods(methodsFor('both'))
/** The method name and credential a request presents to a route offering `methods`. */
const found = (headers: Record<string, string>, methods = all) => {
  const presented = presentedPayment(request(headers).headers, methods)
  return presented === undefined
    ? 'none'
    : {
        method: presented.method.name,
        credential: presented.credential,
        enabled: presented.enabled,
      }
}

describe('presentedPayment', () => {
  it('finds an x402 payment in X-PAYMENT (any case), even an empty one', () => {
    expect(found({ 'x-payment': 'eyJ4In0=' })).toEqual({
      method: 'x402v1',
      credential: 'eyJ4In0=',
      enabled: true,
    })
    expect(found({ 'X-PAYMENT': '' })).toEqual({ method: 'x402v1', credential: '', enabled: true })
  })

  it('finds an x402 version 2 payment in PAYMENT-SIGNATURE, after X-PAYMENT', () => {
    expect(found({ 'payment-signature': 'eyJ5In0=' })).toMatchObject({ method: 'x402v2' })
    expect(found({ 'payment-signature': 'eyJ5In0=', 'x-payment': 'eyJ4In0=' })).toMatchObject({
      method: 'x402v1',
    })
  })

  it('finds an MPP credential in Authorization, alone or among other schemes', () => {
    expect(found({ authorization: 'Payment eyJhIjoxfQ' })).toMatchObject({
      method: 'mppCharge',
      credential: 'Payment eyJhIjoxfQ',
    })
    expect(found({ authorization: 'Bearer abc, payment eyJhIjoxfQ' })).toMatchObject({
      credential: 'payment eyJhIjoxfQ',
    })
    const quoted = 'Digest realm="a, Payment x", nonce="b", Payment eyJhIjoxfQ'
    expect(found({ authorization: quoted })).toMatchObject({ credential: 'Payment eyJhIjoxfQ' })
  })

  it('takes a bare Payment scheme as MPP, so that it is rejected rather than ignored', () => {
    expect(found({ authorization: 'Payment' })).toMatchObject({
      method: 'mppCharge',
      credential: 'Payment',
    })
  })

  it('treats other Authorization schemes as unpaid', () => {
    expect(found({ authorization: 'Bearer sk-123' })).toBe('none')
    expect(found({ authorization: 'PaymentX abc' })).toBe('none')
    expect(found({})).toBe('none')
  })

  it('reads the credential whose buyer already paid first (MPP before x402)', () => {
    const both = { 'x-payment': 'eyJ4In0=', authorization: 'Payment eyJhIjoxfQ' }
    expect(found(both)).toMatchObject({ method: 'mppCharge' })
    // Also when the route does not take it: the buyer's spent money is never ignored.
    expect(found(both, routeMethods(methodsFor('x402')))).toMatchObject({
      method: 'mppCharge',
      enabled: false,
    })
  })

  it('finds the credential of a method the route does not take, to refuse it by name', () => {
    const mppOnly = routeMethods(methodsFor('mpp'))
    const presented = presentedPayment(request({ 'x-payment': 'x' }).headers, mppOnly)
    expect(presented?.enabled).toBe(false)
    const error = notTaken(presented?.method ?? methodsFor()[0]!, mppOnly)
    expect([error.code, error.message]).toEqual([
      'unsupported_scheme',
      'This route takes MPP payments only.',
    ])
    const x402Only = routeMethods(methodsFor('x402'))
    const mpp = presentedPayment(request({ authorization: 'Payment x' }).headers, x402Only)
    const refusal = notTaken(mpp?.method ?? methodsFor()[0]!, x402Only)
    expect([refusal.code, refusal.message]).toEqual([
      'method_unsupported',
      'This route takes x402 payments only.',
    ])
  })
})

describe('routeMethods', () => {
  it('maps the offer shorthand to the built-in methods', () => {
    expect(methodsFor().map((m) => m.name)).toEqual(['x402v1', 'x402v2', 'mppCharge'])
    expect(methodsFor('x402').map((m) => m.name)).toEqual(['x402v1', 'x402v2'])
    expect(methodsFor('mpp').map((m) => m.name)).toEqual(['mppCharge'])
  })

  it('refuses no method, and two methods of one name', () => {
    expect(() => routeMethods([])).toThrow(/at least one payment method/)
    const [v1] = methodsFor('x402')
    expect(() => routeMethods([v1!, v1!])).toThrow(/share a name/)
  })
})
