/**
 * The README's main command, `npm run demo`, run as a user runs it (a child process through tsx,
 * with no configuration): it must end well and show what it promises.
 */
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('..', import.meta.url))
// biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colour codes (picocolors under CI)
const plain = (text: string) => text.replace(/\x1b\[[0-9;]*m/g, '')

describe('npm run demo', () => {
  it('shows the 402, a payment in each dialect, a confidential answer whose receipt verifies, and one paid per token', async () => {
    const { stdout } = await promisify(execFile)('node', ['--import', 'tsx', 'scripts/demo.ts'], {
      cwd: root,
      // Nothing from the environment that could point it at real services.
      env: { PATH: process.env.PATH ?? '', NO_COLOR: '1' },
      timeout: 120_000,
    })
    const out = plain(stdout)
    expect(out).toMatch(/< HTTP 402/)
    expect(out).toMatch(/< payment-required: /)
    expect(out).toMatch(/> PAYMENT-SIGNATURE: /)
    expect(out).toMatch(/< PAYMENT-RESPONSE: /)
    expect(out).toMatch(/> Authorization: Payment /)
    expect(out.match(/settlement digest: [1-9A-HJ-NP-Za-km-z]{43,44}/g)).toHaveLength(2)
    expect(out).toMatch(/x-receipt-id: rcpt_/)
    expect(out).toMatch(/✓ anchor: /)
    expect(out).not.toMatch(/✗/)
    expect(out).toMatch(/receipt verified \(trust policy from the gateway, TEST ROOT accepted\)/)
    // The demo accepts the simulated enclave's test root on purpose, and says so.
    expect(out).toMatch(/TEST ROOT: .*test root CA, accepted here on purpose/)
    expect(out).toMatch(/✓ response_hash: .*= the bytes you received/)
    expect(out).toMatch(/✓ gateway_receipt: .*debited from key_.*= your payment/)
    // Pay as you go: the channel opened once, vouchers answered 204, the receipt event at the end of
    // the stream, a settlement and a close on the ledger (the demo checks spent = tokens × price).
    expect(out).toMatch(/channel 0x[0-9a-f]{64} opened: deposit 0\.050000 USDC, digest \w{43,44}/)
    expect(out).toMatch(/> voucher \d+\.\d{6} USDC {2}< 204/)
    expect(out).toMatch(/< event payment-receipt: \{"channelId":"0x[0-9a-f]{64}"/)
    expect(out).toMatch(/settled on the ledger: \d+\.\d{6} USDC to the gateway, digest \w{43,44}/)
    expect(out).toMatch(/closed: spent \d+\.\d{6} USDC, \d+\.\d{6} USDC back to the buyer/)
  })
})
