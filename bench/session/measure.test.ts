import { describe, expect, it } from 'vitest'
import { added, median, medianDifferenceInterval } from './measure.js'

/** Samples around `center`, spread by a fixed pseudo-random pattern (no two runs differ). */
const around = (center: number, spread: number, n = 300) =>
  Array.from({ length: n }, (_, i) => center + spread * Math.sin(i * 12.9898 + center) ** 3)

describe('the interval of an added median', () => {
  it('is a point when every pair differs by the same amount', () => {
    const a = around(4, 2)
    const b = a.map((x) => x + 1.5)
    const [lo, hi] = medianDifferenceInterval(a, b)
    expect(lo).toBeCloseTo(1.5, 10)
    expect(hi).toBeCloseTo(1.5, 10)
  })

  it('holds the difference of the medians, and narrows as the spread does', () => {
    const a = around(4, 2)
    const b = around(6, 2)
    const wide = medianDifferenceInterval(a, b)
    const point = median(b) - median(a)
    expect(wide[0]).toBeLessThanOrEqual(point)
    expect(wide[1]).toBeGreaterThanOrEqual(point)
    expect(wide[0]).toBeGreaterThan(0)
    const narrow = medianDifferenceInterval(around(4, 0.2), around(6, 0.2))
    expect(narrow[1] - narrow[0]).toBeLessThan(wide[1] - wide[0])
  })

  it('includes zero when nothing was added, and is the same for the same samples', () => {
    const a = around(4, 2)
    const b = around(4, 2, 301).slice(1)
    const [lo, hi] = medianDifferenceInterval(a, b)
    expect(lo).toBeLessThan(0)
    expect(hi).toBeGreaterThan(0)
    expect(medianDifferenceInterval(a, b)).toEqual([lo, hi])
  })

  it('reads as a table cell with its signs', () => {
    expect(added(1.234, [0.98, 1.5])).toBe('+1.23 (+0.98…+1.50)')
    expect(added(-0.12, [-0.5, 0.25])).toBe('−0.12 (−0.50…+0.25)')
  })
})
