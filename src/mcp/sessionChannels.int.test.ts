/**
 * `tollgate mcp` paying through sessions, driven by the MCP SDK's own `Client` over an in-memory
 * transport: the buyer's MCP server, whose catalog is a seller taking MPP sessions on the local
 * ledger. Two paid tool calls open one channel and pay two vouchers, the budget charged the deposit
 * once; closing gives back the rest, restored to the budget and the wallet limits. Off by default
 * (a charge per call), and a deposit above the session budget is refused before anything moves.
 */
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { describe, expect, it } from 'vitest'
import { createChannelBook } from '../client/channelBook.js'
import { createWalletLimits } from '../client/limits.js'
import type { PinnedChannels } from '../client/sessions.js'
import { useSessionSeller } from '../session/testing/sessionSeller.js'
import { useCheckedLedger } from '../testing/ledger/testSetup.js'
import { createGatewayMcp, type GatewayMcpOptions } from './server.js'

const chain = useCheckedLedger()
const seller = useSessionSeller(chain)

/**
 * A funded wallet's MCP server over the seller's catalog (sessions on, with `pinned`: default the
 * ledger's package), its own spending record and book, and a connected client.
 */
async function connect(options: Partial<GatewayMcpOptions> = {}, pinned?: PinnedChannels[]) {
  const payer = chain.createTestWallet({ usdc: '5', sui: '1' })
  const folder = await mkdtemp(join(tmpdir(), 'tollgate-mcp-sessions-'))
  const limits = createWalletLimits({ file: join(folder, 'spending.json') })
  const book = createChannelBook(join(folder, 'sessions.json'))
  const mcp = await createGatewayMcp({
    gateway: seller.base,
    signer: payer,
    ledger: chain.url,
    limits,
    allowPrivateSellers: true,
    sessions: {
      pinned: pinned ?? [
        { network: 'mainnet', package: chain.modulesPackage, registry: chain.channel.registry },
      ],
      maxDeposit: 1_000_000n,
      client: chain.client,
      book,
    },
    ...options,
  })
  const [a, b] = InMemoryTransport.createLinkedPair()
  await mcp.createServer().connect(a)
  const client = new Client({ name: 'agent', version: '1.0.0' })
  await client.connect(b)
  const balance = () => chain.usdcBalance(payer.toSuiAddress())
  const report = async () =>
    (await client.callTool({ name: 'spend_report', arguments: {} })).structuredContent as {
      session: string
      lastDay: string
      byTool: Record<string, string>
    }
  return { client, mcp, limits, book, balance, report }
}

type Paid = { status: number; payment: Record<string, string> }

describe('tollgate mcp --session: one channel per seller', () => {
  it('two paid calls open one channel and pay two vouchers; the budget counts the deposit once', async () => {
    const { client, mcp, limits, book, balance, report } = await connect({ sessionBudget: '2' })
    const served = seller.served
    const first = await client.callTool({ name: 'call', arguments: {} })
    const second = await client.callTool({ name: 'call', arguments: {} })
    expect(first.isError).toBe(false)
    expect(second.isError).toBe(false)
    const [a, b] = [first, second].map((r) => (r.structuredContent as Paid).payment)
    expect(a).toMatchObject({ intent: 'session', spent: '0.010000' })
    expect(b).toMatchObject({ intent: 'session', spent: '0.020000', channelId: a?.channelId })
    expect(seller.served - served).toBe(2)

    // One channel, in the wallet's book; the seller holds the second voucher (two calls).
    const channels = await book.list()
    expect(channels).toHaveLength(1)
    expect(channels[0]).toMatchObject({ channelId: a?.channelId, state: 'open' })
    expect((await seller.channels.get(a?.channelId ?? ''))?.highest).toBe(20_000n)
    // The deposit (1 USDC) moved once, and is what the budget and the wallet limits count.
    expect(await balance()).toBe(5_000_000n - 1_000_000n)
    expect(await report()).toMatchObject({ session: '1.000000', byTool: { call: '1.000000' } })
    expect(await limits.spentToday()).toBe(1_000_000n)

    // Closing: the seller takes the two calls, the rest comes back and is restored.
    const closed = await mcp.closeSessions()
    expect(closed).toMatchObject([{ channelId: a?.channelId, spent: 20_000n, refunded: 980_000n }])
    expect(await balance()).toBe(5_000_000n - 20_000n)
    expect(await report()).toMatchObject({ session: '0.020000', lastDay: '0.020000' })
    expect(await limits.spentToday()).toBe(20_000n)
  })

  it('is off by default: each call is a payment of its own, no channel', async () => {
    const { client, book, balance } = await connect({ sessions: undefined })
    const paid = await client.callTool({ name: 'call', arguments: {} })
    expect(paid.isError).toBe(false)
    expect((paid.structuredContent as Paid).payment).toMatchObject({ amount: '0.010000' })
    expect((paid.structuredContent as Paid).payment.intent).toBeUndefined()
    expect(await book.list()).toEqual([])
    expect(await balance()).toBe(5_000_000n - 10_000n)
  })

  it('pays per call a seller whose session is on a package it has not pinned', async () => {
    const { client, book, balance } = await connect({}, [
      { network: 'mainnet', package: `0x${'5'.repeat(64)}`, registry: `0x${'6'.repeat(64)}` },
    ])
    const paid = await client.callTool({ name: 'call', arguments: {} })
    expect(paid.isError).toBe(false)
    expect((paid.structuredContent as Paid).payment).toMatchObject({ amount: '0.010000' })
    expect(await book.list()).toEqual([])
    expect(await balance()).toBe(5_000_000n - 10_000n)
  })

  it('refuses a deposit above the session budget with LIMIT_PER_SESSION, nothing paid', async () => {
    const { client, book, balance, report } = await connect({ sessionBudget: '0.5' })
    const refused = await client.callTool({ name: 'call', arguments: {} })
    expect(refused.isError).toBe(true)
    expect(refused.structuredContent).toMatchObject({ error: { code: 'LIMIT_PER_SESSION' } })
    expect(await book.list()).toEqual([])
    expect(await balance()).toBe(5_000_000n)
    expect(await report()).toMatchObject({ session: '0.000000' })
  })
})
