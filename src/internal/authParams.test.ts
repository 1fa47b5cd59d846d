import { describe, expect, it } from 'vitest'
import { findScheme } from './authParams.js'

describe('findScheme', () => {
  it.each([
    ['Payment abc', 'abc piece alone', 'Payment abc'],
    ['  payment abc  ', 'case and spaces', 'payment abc'],
    ['Bearer x, Payment abc', 'after another scheme', 'Payment abc'],
    ['Bearer realm="a, Payment b", Payment c', 'a comma inside quotes is not a split', 'Payment c'],
    ['Bearer realm="a \\" , Payment b", Payment c', 'an escaped quote stays inside', 'Payment c'],
    ['Basic x,Payment abc,Bearer y', 'without spaces after commas', 'Payment abc'],
    ['Payment', 'a bare scheme counts', 'Payment'],
  ])('finds %j (%s)', (value, _why, expected) => {
    expect(findScheme(value, 'Payment')).toBe(expected)
  })

  it.each([
    ['Bearer x'],
    ['Paymentx abc'],
    ['Bearer realm="a, Payment b"'],
    // A quoted string never closed: no piece ends after it.
    ['Bearer realm="a, Payment b'],
    ['Bearer realm="a\\'],
    ['Payment realm="a'],
    ['Bearer x, Payment realm="a, b'],
    [''],
  ])('finds nothing in %j', (value) => {
    expect(findScheme(value, 'Payment')).toBeUndefined()
  })
})
