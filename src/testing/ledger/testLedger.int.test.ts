import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { useTestLedger } from './testLedger.js'

const chain = useTestLedger({ beforeAll, afterAll })

describe('useTestLedger', () => {
  it('starts a ledger before the tests: a funded wallet reads its balance through the client', async () => {
    const buyer = chain.createTestWallet({ usdc: '5' })
    expect(await chain.usdcBalance(buyer.toSuiAddress())).toBe(5_000_000n)
    chain.faucet({ address: buyer.toSuiAddress(), usdc: '1', into: 'addressBalance' })
    expect(await chain.usdcBalance(buyer.toSuiAddress())).toBe(6_000_000n)
    expect(chain.url).toBe(chain.ledger.url)
    expect((await chain.client.core.getReferenceGasPrice()).referenceGasPrice).toBe('1000')
  })

  it('registers on any runner’s hooks: unreadable before, started by the first, stopped by the second', async () => {
    const hooks: { before?: () => Promise<void>; after?: () => Promise<void> } = {}
    const own = useTestLedger(
      {
        beforeAll: (fn) => {
          hooks.before = fn
        },
        afterAll: (fn) => {
          hooks.after = fn
        },
      },
      { latencyMs: 0 },
    )
    expect(() => own.url).toThrow('readable from beforeAll on')
    expect(() => own.createTestWallet()).toThrow('readable from beforeAll on')
    await hooks.before?.()
    const health = await fetch(new URL('/', own.url))
    expect(health.status).toBeLessThan(500)
    await hooks.after?.()
    await expect(fetch(new URL('/', own.url))).rejects.toThrow()
  })
})
