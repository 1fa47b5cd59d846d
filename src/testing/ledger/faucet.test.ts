import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createEngine } from './engine.js'
import { FaucetRequestSchema, runFaucet, toBaseUnits } from './faucet.js'
import { addressBalanceOf, coinsOf, SUI_TYPE } from './state.js'

describe('faucet', () => {
  it('converts decimal strings to base units exactly', () => {
    expect(toBaseUnits('10', 6)).toBe(10_000_000n)
    expect(toBaseUnits('0.01', 6)).toBe(10_000n)
    expect(toBaseUnits('1.5', 9)).toBe(1_500_000_000n)
    expect(() => toBaseUnits('0.0000001', 6)).toThrow()
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 18n }), (units) => {
        const text = `${units / 1_000_000n}.${(units % 1_000_000n).toString().padStart(6, '0')}`
        expect(toBaseUnits(text, 6)).toBe(units)
      }),
    )
  })

  it('validates requests with a schema: addresses, decimal strings, destinations, no extra keys', () => {
    const address = `0x${'ab'.repeat(32)}`
    expect(FaucetRequestSchema.safeParse({ address }).success).toBe(true)
    expect(
      FaucetRequestSchema.safeParse({ address, usdc: '1.25', into: 'addressBalance' }).success,
    ).toBe(true)
    for (const bad of [
      { address: 'nope' },
      { address, usdc: '1e3' },
      { address, usdc: -1 },
      { address, into: 'vault' },
      { address, admin: true },
    ]) {
      expect(FaucetRequestSchema.safeParse(bad).success).toBe(false)
    }
    fc.assert(fc.property(fc.anything(), (value) => void FaucetRequestSchema.safeParse(value)))
  })

  it('mints coins by default and address balances on request', () => {
    const engine = createEngine()
    const address = `0x${'cd'.repeat(32)}`
    const result = runFaucet(engine, { address })
    expect(result.coins.map((c) => c.balance).sort()).toEqual(['10000000', '1000000000'])
    expect(coinsOf(engine.state, address, engine.state.usdcType)).toHaveLength(1)
    runFaucet(engine, { address, usdc: '2', sui: '0', into: 'addressBalance' })
    expect(addressBalanceOf(engine.state, address, engine.state.usdcType)).toBe(2_000_000n)
    expect(addressBalanceOf(engine.state, address, SUI_TYPE)).toBe(0n)
  })
})
