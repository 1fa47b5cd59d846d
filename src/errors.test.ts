import { describe, expect, it } from 'vitest'
import { hasCode, isPaymentError, PaymentError, paymentErrorCodes } from './errors.js'

// The buyer client's codes are on the wire in UPPER_SNAKE_CASE (MCP tool results, `tollgate pay`):
// the one documented exception to the lowercase rule.
const upperCaseOnTheWire = [
  'PRICE_ABOVE_MAX',
  'LIMIT_PER_TX',
  'LIMIT_PER_DAY',
  'LIMIT_PER_SESSION',
  'NO_WALLET',
  'ESCROW_REQUIRED',
  'DIALECT_UNSUPPORTED',
  'INSUFFICIENT_BALANCE',
  'NO_PAYABLE_REQUIREMENT',
  'PAYMENT_REJECTED',
  'PAYMENT_REFUNDED',
]

describe('PaymentError codes', () => {
  it('are lowercase snake_case, but for the client codes already on the wire', () => {
    const odd = paymentErrorCodes.filter(
      (code) => !/^[a-z][a-z0-9]*(_[a-z0-9]+)*$/.test(code) && !upperCaseOnTheWire.includes(code),
    )
    expect(odd).toEqual([])
    for (const code of upperCaseOnTheWire) expect(paymentErrorCodes).toContain(code)
  })

  it('configuration, usage and probe failures are codes of the same family', () => {
    const usage = new PaymentError('invalid_options', 'the URL must be http or https')
    const probe = new PaymentError('unreachable', 'the host could not be reached', {
      cause: new Error('ECONNREFUSED'),
    })
    const config = new PaymentError('invalid_config', 'Invalid gateway configuration', {
      details: { problems: ['PORT (port): too big'] },
    })
    expect([usage.status, probe.status, config.status]).toEqual([400, 502, 500])
    expect(hasCode(usage, 'invalid_options')).toBe(true)
    expect(hasCode(probe, 'invalid_options')).toBe(false)
    expect(probe.cause).toBeInstanceOf(Error)
    expect(config.details).toEqual({ problems: ['PORT (port): too big'] })
    // Recognised by name and code across a realm, as a plain object.
    expect(isPaymentError({ name: 'PaymentError', code: 'timeout', message: '' })).toBe(true)
    expect(isPaymentError({ name: 'PaymentError', code: 'ProbeError', message: '' })).toBe(false)
    expect(config.toProblem()).toMatchObject({
      status: 500,
      code: 'invalid_config',
      type: 'https://paymentauth.org/problems/payment-required',
    })
  })
})
