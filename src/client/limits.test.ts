import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { PaymentError } from '../errors.js'
import { createWalletLimits, dayMs } from './limits.js'

const fileIn = () =>
  join(mkdtempSync(join(tmpdir(), 'tollgate-limits-')), 'nested', 'spending.json')
const usdc = (n: number) => BigInt(n) * 1_000_000n

async function codeOf(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  return error instanceof PaymentError ? error.code : 'no error'
}

describe('wallet limits', () => {
  it('default to 25 USDC per transaction and 100 per day', async () => {
    const limits = createWalletLimits({ file: fileIn() })
    expect(limits.perTransaction).toBe(usdc(25))
    expect(limits.perDay).toBe(usdc(100))
    expect(await codeOf(limits.reserve({ amount: usdc(25) + 1n, resource: 'r' }))).toBe(
      'LIMIT_PER_TX',
    )
    for (let i = 0; i < 4; i++) await limits.reserve({ amount: usdc(25), resource: 'r' })
    expect(await limits.spentToday()).toBe(usdc(100))
    expect(await codeOf(limits.reserve({ amount: 1n, resource: 'r' }))).toBe('LIMIT_PER_DAY')
  })

  it('roll over: a spend leaves the window exactly 24 hours later', async () => {
    let now = 1_000_000
    const limits = createWalletLimits({ file: fileIn(), perDay: '1', now: () => now })
    await limits.reserve({ amount: usdc(1), resource: 'r' })
    now += dayMs - 1
    expect(await codeOf(limits.reserve({ amount: 1n, resource: 'r' }))).toBe('LIMIT_PER_DAY')
    now += 1
    expect(await limits.spentToday()).toBe(0n)
    await limits.reserve({ amount: usdc(1), resource: 'r' })
  })

  it('persist across instances (a restart), in a 0600 file written whole', async () => {
    const file = fileIn()
    const first = createWalletLimits({ file, perDay: '1' })
    const reservation = await first.reserve({ amount: 600_000n, resource: 'https://a/x' })
    await reservation.settle('Digest1111111111111111111111111111111111111')
    const second = createWalletLimits({ file, perDay: '1' })
    expect(await second.spentToday()).toBe(600_000n)
    expect(await codeOf(second.reserve({ amount: 500_000n, resource: 'r' }))).toBe('LIMIT_PER_DAY')
    expect((await second.recent())[0]).toMatchObject({
      resource: 'https://a/x',
      digest: 'Digest1111111111111111111111111111111111111',
    })
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ version: 1 })
  })

  it('count concurrent reservations one at a time, so together they cannot pass the limit', async () => {
    const limits = createWalletLimits({ file: fileIn(), perDay: '1' })
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, () => limits.reserve({ amount: 300_000n, resource: 'r' })),
    )
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(3)
    expect(await limits.spentToday()).toBe(900_000n)
  })

  it('release a spend only when asked (nothing moved)', async () => {
    const limits = createWalletLimits({ file: fileIn() })
    const reservation = await limits.reserve({ amount: usdc(2), resource: 'r' })
    await limits.reserve({ amount: usdc(1), resource: 'r' })
    await reservation.release()
    expect(await limits.spentToday()).toBe(usdc(1))
  })

  it('refuse to pay when the record is unreadable, rather than starting from zero', async () => {
    const file = fileIn()
    const limits = createWalletLimits({ file })
    await limits.reserve({ amount: 1n, resource: 'r' })
    writeFileSync(file, '{"version":1,"spends":[{"id":')
    expect(await codeOf(limits.reserve({ amount: 1n, resource: 'r' }))).toBe('invalid_config')
  })

  it('can turn one limit off with null', async () => {
    const limits = createWalletLimits({ file: fileIn(), perTransaction: null, perDay: '1000' })
    expect(limits.perTransaction).toBeNull()
    await limits.reserve({ amount: usdc(500), resource: 'r' })
  })
})
