import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { hasCode } from './errors.js'
import { formatAmount, parseAmount, parseBaseUnits } from './money.js'

describe('parseAmount', () => {
  it.each([
    ['1.005', 1_005_000n],
    ['0.02', 20_000n],
    ['$0.02', 20_000n],
    ['0.020000', 20_000n],
    ['5', 5_000_000n],
    ['0.000001', 1n],
    ['0.3', 300_000n],
  ])('parses %s exactly', (input, expected) => {
    expect(parseAmount(input)).toBe(expected)
  })

  it('adds 0.1 and 0.2 without float drift', () => {
    expect(parseAmount('0.1') + parseAmount('0.2')).toBe(parseAmount('0.3'))
    expect(formatAmount(parseAmount('0.1') + parseAmount('0.2'))).toBe('0.300000')
  })

  it('takes bigints as base units', () => {
    expect(parseAmount(20_000n)).toBe(20_000n)
  })

  it.each([
    ['-1', 'negative sign'],
    ['-0.01', 'negative decimal'],
    ['0.0000001', 'seven fractional digits'],
    ['1e3', 'exponent'],
    ['1E-2', 'exponent upper case'],
    ['NaN', 'NaN'],
    ['Infinity', 'Infinity'],
    ['', 'empty'],
    [' 1', 'whitespace'],
    ['01', 'leading zero'],
    ['1.', 'dangling point'],
    ['.5', 'missing whole part'],
    ['0x10', 'hex'],
    ['1,5', 'comma'],
    ['$$1', 'double dollar'],
    ['0', 'zero'],
    ['1000000.000001', 'above the cap'],
  ])('rejects %j (%s) with invalid_amount', (input) => {
    let caught: unknown
    try {
      parseAmount(input)
    } catch (error) {
      caught = error
    }
    expect(hasCode(caught, 'invalid_amount')).toBe(true)
  })

  it('rejects negative bigints and numbers', () => {
    expect(() => parseAmount(-1n)).toThrow(/negative/)
    expect(() => parseAmount(0.02 as unknown as string)).toThrow(/decimal string or a bigint/)
  })

  it('accepts zero when asked and honours a custom cap', () => {
    expect(parseAmount('0', { allowZero: true })).toBe(0n)
    expect(() => parseAmount('5.000001', { max: 5_000_000n })).toThrow(/cap/)
    expect(parseAmount('5', { max: 5_000_000n })).toBe(5_000_000n)
  })

  it('round-trips every amount through formatAmount', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: 1_000_000_000_000n }), (units) => {
        expect(parseAmount(formatAmount(units))).toBe(units)
      }),
      { numRuns: 2000 },
    )
  })
})

describe('parseBaseUnits', () => {
  it('parses wire amounts', () => {
    expect(parseBaseUnits('20000')).toBe(20_000n)
  })
  it.each(['+1', '-1', '01', '1.0', '', ' 1', '1e5'])('rejects %j', (input) => {
    expect(() => parseBaseUnits(input)).toThrow(/whole number of base units/)
  })
})

describe('formatAmount', () => {
  it('always prints six fractional digits', () => {
    expect(formatAmount(20_000n)).toBe('0.020000')
    expect(formatAmount(5_000_000n)).toBe('5.000000')
    expect(formatAmount(1n)).toBe('0.000001')
  })
})
