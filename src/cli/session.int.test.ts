/**
 * `tollgate pay --session` and `tollgate session list|close|withdraw` as a user runs them: subprocesses with
 * their own config folder, against a seller offering sessions on the ledger emulator. The wallet
 * opens one channel, pays two calls with vouchers, lists it, and closes it: the seller takes the
 * two calls, the rest of the deposit comes back. `tollgate mcp --session` pays tool calls over a
 * channel of the same book.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
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

/** `tollgate pay --session` of the seller's call, which must succeed: its JSON. */
async function paySession(): Promise<{ status: number; receipt: Record<string, string> }> {
  const paid = await tollgate(
    'pay',
    '--session',
    '--ledger',
    chain.url,
    '--json',
    `${seller.base}/call`,
  )
  expect(paid.code, paid.stderr).toBe(0)
  return JSON.parse(paid.stdout)
}

/** `tollgate session list --json`: its JSON, and the text printed. */
async function listChannels(): Promise<{
  channels: { channelId: string; state: string }[]
  stdout: string
}> {
  const listed = await tollgate('session', 'list', '--json')
  expect(listed.code, listed.stderr).toBe(0)
  return { channels: JSON.parse(listed.stdout), stdout: listed.stdout }
}

/** `tollgate session <action> <id> --json` on the test's ledger, which must succeed: its JSON. */
async function onChannel(action: 'close' | 'withdraw', id: string): Promise<unknown> {
  const run = await tollgate('session', action, id, '--ledger', chain.url, '--json')
  expect(run.code, run.stderr).toBe(0)
  return JSON.parse(run.stdout)
}

describe('tollgate pay --session, tollgate session', { timeout: 300_000 }, () => {
  it('opens a channel once, pays calls with vouchers, lists it and closes it', async () => {
    const created = await tollgate('wallet', 'new', '--json')
    expect(created.code).toBe(0)
    const { address } = JSON.parse(created.stdout) as { address: string }
    const funded = await tollgate('wallet', 'fund', '--ledger', chain.url, '--usdc', '2')
    expect(funded.code).toBe(0)

    for (let i = 1; i <= 2; i++) {
      const out = await paySession()
      expect(out.status).toBe(200)
      expect(out.receipt).toMatchObject({ intent: 'session', spent: String(10_000 * i) })
    }
    // The default deposit (1 USDC) was made once.
    expect(await chain.usdcBalance(address)).toBe(2_000_000n - 1_000_000n)

    const { channels, stdout } = await listChannels()
    expect(channels).toHaveLength(1)
    expect(channels[0]).toMatchObject({ state: 'open' })
    expect(stdout).not.toContain('sessionKey')

    const closed = await onChannel('close', channels[0]?.channelId ?? '')
    expect(closed).toMatchObject({ spent: '0.020000', refunded: '0.980000' })
    expect(await chain.usdcBalance(address)).toBe(2_000_000n - 20_000n)
  })

  it('withdraws a channel without the seller: asks to close, then takes what is left after the grace period', async () => {
    await paySession()
    const { channels } = await listChannels()
    const id = channels.find((c) => c.state === 'open')?.channelId ?? ''
    expect(await onChannel('withdraw', id)).toMatchObject({ status: 'requested' })
    chain.advanceClock(15 * 60_000 + 1)
    // No settler ran for this seller: the whole 1 USDC deposit comes back.
    expect(await onChannel('withdraw', id)).toMatchObject({
      status: 'withdrawn',
      refunded: '1.000000',
    })
  })

  it('tollgate mcp --session pays two tool calls over one channel in the wallet’s book', async () => {
    const before = (await listChannels()).channels.length
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [
        ...['--import', 'tsx', 'src/cli.ts', 'mcp', '--gateway', seller.base],
        ...['--ledger', chain.url, '--allow-private-sellers', '--session', '--max-deposit', '0.5'],
      ],
      env: { ...(process.env as Record<string, string>), TOLLGATE_HOME: home, NO_COLOR: '1' },
      stderr: 'pipe',
    })
    const client = new Client({ name: 'host', version: '1.0.0' })
    await client.connect(transport)
    try {
      for (const spent of ['0.010000', '0.020000']) {
        const paid = await client.callTool({ name: 'call', arguments: {} })
        expect(paid.structuredContent).toMatchObject({
          status: 200,
          payment: { intent: 'session', spent },
        })
      }
      const report = await client.callTool({ name: 'spend_report', arguments: {} })
      expect(report.structuredContent).toMatchObject({ session: '0.500000' })
    } finally {
      await client.close()
    }
    const { channels } = await listChannels()
    expect(channels).toHaveLength(before + 1)
    expect(channels.at(-1)).toMatchObject({ state: 'open', deposit: '500000' })
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
