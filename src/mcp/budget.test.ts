import { describe, expect, it } from 'vitest'
import { isPaymentError } from '../errors.js'
import { createBudget } from './budget.js'

const codeOf = (run: () => unknown) => {
  try {
    run()
  } catch (error) {
    return isPaymentError(error) ? error.code : 'other'
  }
  return 'none'
}

describe('MCP budgets', () => {
  it('counts a held spend against the session before it is paid, and releases it', () => {
    const session = createBudget({ perSession: '0.05' }).session()
    const first = session.reserve('a', 30_000n)
    expect(codeOf(() => session.reserve('b', 30_000n))).toBe('LIMIT_PER_SESSION')
    first.release()
    expect(codeOf(() => session.reserve('b', 30_000n))).toBe('none')
  })

  it('keeps only what a kept spend is lowered to (a deposit, when part comes back)', () => {
    const budget = createBudget({ perSession: '1', perDay: '1' })
    const session = budget.session()
    const deposit = session.reserve('a', 1_000_000n)
    deposit.settle('open')
    expect(codeOf(() => session.reserve('b', 1n))).toBe('LIMIT_PER_SESSION')
    deposit.keep(20_000n)
    deposit.keep(500_000n)
    expect(session.report()).toMatchObject({ session: '0.020000', lastDay: '0.020000' })
    expect(codeOf(() => budget.session().reserve('b', 980_000n))).toBe('none')
  })

  it('shares the daily budget across sessions over a rolling 24 hours', () => {
    let now = Date.parse('2026-01-01T10:00:00Z')
    const budget = createBudget({ perDay: '0.05', now: () => now })
    budget.session().reserve('a', 40_000n).settle('digest')
    const other = budget.session()
    expect(codeOf(() => other.reserve('a', 20_000n))).toBe('LIMIT_PER_DAY')
    now += 24 * 60 * 60 * 1000 + 1
    expect(codeOf(() => other.reserve('a', 20_000n))).toBe('none')
  })

  it('counts the spends made before it was created against the day, not the session', () => {
    let now = Date.parse('2026-01-01T10:00:00Z')
    const budget = createBudget({
      perDay: '0.05',
      perSession: '0.05',
      now: () => now,
      spent: [{ tool: 'a', amount: 40_000n, at: now - 60_000 }],
    })
    const session = budget.session()
    expect(codeOf(() => session.reserve('a', 20_000n))).toBe('LIMIT_PER_DAY')
    expect(session.report()).toMatchObject({ session: '0.000000', lastDay: '0.040000' })
    now += 24 * 60 * 60 * 1000
    expect(codeOf(() => session.reserve('a', 20_000n))).toBe('none')
  })

  it('reports the spend per tool and per UTC day', () => {
    let now = Date.parse('2026-01-01T23:00:00Z')
    const session = createBudget({ now: () => now }).session()
    session.reserve('a', 10_000n).settle('d1')
    now += 2 * 60 * 60 * 1000
    session.reserve('b', 20_000n).settle('d2')
    session.reserve('a', 5_000n).settle('d3')
    expect(session.report()).toMatchObject({
      session: '0.035000',
      byTool: { a: '0.015000', b: '0.020000' },
      byDay: { '2026-01-01': '0.010000', '2026-01-02': '0.025000' },
      perSessionBudget: null,
    })
  })
})
