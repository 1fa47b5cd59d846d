import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { createSqliteStore } from '../stores/sqlite.js'

const cli = fileURLToPath(new URL('../cli.ts', import.meta.url))
const folder = mkdtempSync(join(tmpdir(), 'tollgate-refunds-'))
afterAll(() => rmSync(folder, { recursive: true, force: true }))

describe('tollgate refunds', () => {
  it('lists the refunds a store owes', async () => {
    const file = join(folder, 'payments.db')
    const store = createSqliteStore({ database: file })
    const payer = `0x${'ab'.repeat(32)}`
    await store.claim('D1', { resource: 'https://seller.test/x', dialect: 'x402' })
    await store.settled('D1', {
      payer,
      amount: 20_000n,
      resource: 'https://seller.test/x',
      dialect: 'x402',
      network: 'sui:mainnet',
      asset: '0x2::sui::SUI',
      settledAt: new Date(),
    })
    await store.oweRefund('D1', 'the handler answered 502')
    await store.close()

    const run = promisify(execFile)
    const { stdout } = await run(process.execPath, [
      '--import',
      'tsx',
      cli,
      'refunds',
      '--store',
      file,
      '--json',
    ])
    const listed = JSON.parse(stdout) as {
      owed: { digest: string; payer: string; amount: string; reason: string }[]
      counts: { refund_due: number }
    }
    expect(listed.counts.refund_due).toBe(1)
    expect(listed.owed).toEqual([
      expect.objectContaining({
        digest: 'D1',
        payer,
        amount: '0.020000',
        reason: 'the handler answered 502',
      }),
    ])
    const human = await run(process.execPath, ['--import', 'tsx', cli, 'refunds', '--store', file])
    expect(human.stdout).toContain('0.020000 USDC')
  })
})
