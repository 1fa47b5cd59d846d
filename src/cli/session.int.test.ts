/**
 * `tollgate pay --session` and `tollgate session list|close|withdraw` as a user runs them: subprocesses with
 * their own config folder, against a seller offering sessions on the ledger emulator. The wallet
 * opens one channel, pays two calls with vouchers, lists it, and closes it: the seller takes the
 * two calls, the rest of the deposit comes back.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { useSessionSeller } from '../session/testing/sessionSeller.js'
import { useCheckedLedger } from '../testing/ledger/testSetup.js'
import { runCli } from './testHelpers.js'

const chain = useCheckedLedger()
const seller = useSessionSeller(chain)
let home: string
beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), 'tollgate-cli-session-'))
})
const tollgate = (...args: string[]) => runCli(args, { TOLLGATE_HOME: home })

describe('tollgate pay --session, tollgate session', { timeout: 300_000 }, () => {
  it('opens a channel once, pays calls with vouchers, lists it and closes it', async () => {
    const created = await tollgate('wallet', 'new', '--json')
    expect(created.code).toBe(0)
    const { address } = JSON.parse(created.stdout) as { address: string }
    const funded = await tollgate('wallet', 'fund', '--ledger', chain.url, '--usdc', '2')
    expect(funded.code).toBe(0)

    for (let i = 1; i <= 2; i++) {
      const paid = await tollgate(
        'pay',
        '--session',
        '--ledger',
        chain.url,
        '--json',
        `${seller.base}/call`,
      )
      expect(paid.code, paid.stderr).toBe(0)
      const out = JSON.parse(paid.stdout) as { status: number; receipt: Record<string, string> }
      expect(out.status).toBe(200)
      expect(out.receipt).toMatchObject({ intent: 'session', spent: String(10_000 * i) })
    }
    // The default deposit (1 USDC) was made once.
    expect(await chain.usdcBalance(address)).toBe(2_000_000n - 1_000_000n)

    const listed = await tollgate('session', 'list', '--json')
    const channels = JSON.parse(listed.stdout) as { channelId: string; state: string }[]
    expect(channels).toHaveLength(1)
    expect(channels[0]).toMatchObject({ state: 'open' })
    expect(listed.stdout).not.toContain('sessionKey')

    const closed = await tollgate(
      'session',
      'close',
      channels[0]?.channelId ?? '',
      '--ledger',
      chain.url,
      '--json',
    )
    expect(closed.code, closed.stderr).toBe(0)
    expect(JSON.parse(closed.stdout)).toMatchObject({ spent: '0.020000', refunded: '0.980000' })
    expect(await chain.usdcBalance(address)).toBe(2_000_000n - 20_000n)
  })

  it('withdraws a channel without the seller: asks to close, then takes what is left after the grace period', async () => {
    const paid = await tollgate(
      'pay',
      '--session',
      '--ledger',
      chain.url,
      '--json',
      `${seller.base}/call`,
    )
    expect(paid.code, paid.stderr).toBe(0)
    const channels = JSON.parse((await tollgate('session', 'list', '--json')).stdout) as {
      channelId: string
      state: string
    }[]
    const open = channels.find((c) => c.state === 'open')
    const id = open?.channelId ?? ''
    const asked = await tollgate('session', 'withdraw', id, '--ledger', chain.url, '--json')
    expect(JSON.parse(asked.stdout)).toMatchObject({ status: 'requested' })
    chain.advanceClock(15 * 60_000 + 1)
    const done = await tollgate('session', 'withdraw', id, '--ledger', chain.url, '--json')
    expect(done.code, done.stderr).toBe(0)
    // No settler ran for this seller: the whole 1 USDC deposit comes back.
    expect(JSON.parse(done.stdout)).toMatchObject({ status: 'withdrawn', refunded: '1.000000' })
  })

  it('refuses --session on a ledger with no pinned channel package, with one line', async () => {
    const paid = await tollgate(
      'pay',
      '--session',
      '--ledger',
      'http://127.0.0.1:9',
      `${seller.base}/call`,
    )
    expect(paid.code).not.toBe(0)
    expect(paid.stderr).toContain('No session channel package is pinned')
  })
})
