import { describe, expect, it } from 'vitest'
import { createRecent } from './recent.js'

describe('createRecent', () => {
  it('answers what it remembered and drops the oldest entry when full', () => {
    const recent = createRecent<string, number>({ max: 2 })
    expect(recent.remember('a', 1)).toBe(1)
    recent.remember('b', 2)
    recent.remember('c', 3)
    expect(recent.get('a')).toBeUndefined()
    expect([recent.get('b'), recent.get('c'), recent.size]).toEqual([2, 3, 2])
    // Replacing a kept key makes no room.
    recent.remember('c', 4)
    expect([recent.get('b'), recent.get('c')]).toEqual([2, 4])
  })

  it('does not keep keys over the length limit, but still hands the value back', () => {
    const recent = createRecent<string, string>({ max: 10, maxKeyLength: 3 })
    expect(recent.remember('long', 'x')).toBe('x')
    expect(recent.get('long')).toBeUndefined()
    expect(recent.size).toBe(0)
  })
})
