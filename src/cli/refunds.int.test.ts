import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { parseConfig } from '../../reference-gateway/config.js'
import { startGateway } from '../../reference-gateway/server/server.js'
import { cliArgs } from '../../scripts/cliUnderTest.js'
import { createPayingFetch } from '../client/index.js'
import { createSqliteStore } from '../stores/sqlite.js'
import type { StartedLedger } from '../testing/index.js'

// Run from another folder, the CLI through tsx (outside a test run) still needs the repository's
// tsconfig.json: its `paths` map the `tollgate/…` imports to the sources.
const tsconfig = fileURLToPath(new URL('../../tsconfig.json', import.meta.url))
const folder = mkdtempSync(join(tmpdir(), 'tollgate-refunds-'))
afterAll(() => rmSync(folder, { recursive: true, force: true }))

describe('tollgate refunds', { timeout: 120_000 }, () => {
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
    const { stdout } = await run(process.execPath, cliArgs('refunds', '--store', file, '--json'))
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
    const human = await run(process.execPath, cliArgs('refunds', '--store', file))
    expect(human.stdout).toContain('0.020000 USDC')
  })

  it("finds the gateway's store by default: run where the gateway ran, with no option", async () => {
    // The gateway's default data folder is `.data/gateway` under its working folder.
    const workingFolder = join(folder, 'app')
    const gateway = await startGateway({
      config: parseConfig({
        port: 0,
        dataDir: join(workingFolder, '.data', 'gateway'),
        emulatorLatencyMs: 0,
        logLevel: 'silent',
      }),
    })
    try {
      const emulator = gateway.emulator as StartedLedger
      const signer = emulator.createTestWallet({ usdc: '1', sui: '1' })
      const pay = createPayingFetch({
        signer,
        ledger: emulator.url,
        limits: false,
        retry: { retries: 0 },
      })
      gateway.stubs?.failNext('/openai/', 500, 10)
      const failed = await pay(`${gateway.url}/openai/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] }),
      })
      expect(failed.status).toBeGreaterThanOrEqual(500)
    } finally {
      // Stopping pays due refunds once more, then closes the store.
      await gateway.stop()
    }

    const run = promisify(execFile)
    const { stdout } = await run(process.execPath, cliArgs('refunds', '--json'), {
      cwd: workingFolder,
      env: { PATH: process.env.PATH ?? '', NO_COLOR: '1', TSX_TSCONFIG_PATH: tsconfig },
    })
    const listed = JSON.parse(stdout) as {
      store: string
      owed: unknown[]
      counts: { refund_due: number; refunded: number }
    }
    expect(listed.store).toBe(
      `SQLite ${join(workingFolder, '.data', 'gateway', 'payments.db')} (table tollgate_payments)`,
    )
    // The failed call's payment was refunded by the gateway (its operator key on the emulator).
    expect(listed.counts.refund_due + listed.counts.refunded).toBe(1)

    // Somewhere the gateway never ran: said so, not "0 owed".
    const elsewhere = await run(process.execPath, cliArgs('refunds'), {
      cwd: folder,
      env: { PATH: process.env.PATH ?? '', NO_COLOR: '1', TSX_TSCONFIG_PATH: tsconfig },
    }).then(
      () => undefined,
      (error: { code: number; stderr: string }) => error,
    )
    expect(elsewhere?.code).toBe(2)
    expect(elsewhere?.stderr.trim()).toBe(
      `tollgate refunds: no gateway store at ${join(folder, '.data', 'gateway', 'payments.db')}: run this where the gateway runs, with its DATA_DIR (or --store <file|url>)`,
    )
  })
})
