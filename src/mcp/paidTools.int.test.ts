/**
 * A seller's paid MCP tool, paid over the SDK's own MCP client and an in-memory transport by two
 * buyers written here from the public specifications: an MPP-style one (JSON-RPC error -32042 with
 * the challenges; credential in `_meta["org.paymentauth/credential"]`) and an x402-style one (an
 * `isError` result with the requirements; payment in `_meta["x402/payment"]`). Real payments on the
 * local ledger emulator; replay refused in both; a failing tool refunded exactly once.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { McpError } from '@modelcontextprotocol/sdk/types.js'
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { SellerEvent } from '../engine/sellerTypes.js'
import { type Challenge, parseCredential } from '../mpp.js'
import { createMemoryStore } from '../stores/memory.js'
import { useTestLedger } from '../testing/index.js'
import { mppAuthorization, x402PaymentHeader } from '../testing/payments.js'
import type { PaymentRequirement } from '../x402.js'
import { createPaidMcpTools, type PaidMcpTools, type PaidToolExtra } from './paidTools.js'

const chain = useTestLedger({ beforeAll, afterAll })
let seller: Ed25519Keypair
const events: SellerEvent[] = []
const helpers: PaidMcpTools[] = []

beforeAll(async () => {
  seller = chain.createTestWallet({ usdc: '1', sui: '10' })
})

afterAll(async () => {
  for (const helper of helpers) await helper.close()
})

/** A seller's MCP server with a paid `echo` and a paid `broken` tool, and a connected client. */
async function connect(challenge: 'mpp' | 'x402') {
  const tools = createPaidMcpTools({
    payTo: seller.toSuiAddress(),
    ledger: chain.url,
    store: createMemoryStore(),
    secrets: ['a-test-secret-of-at-least-thirty-two-bytes'],
    refundSigner: seller,
    refundIntervalMs: 100,
    challenge,
    onEvent: (event) => events.push(event),
  })
  helpers.push(tools)
  const server = new McpServer({ name: 'seller', version: '1.0.0' })
  server.registerTool(
    'echo',
    { description: 'Echoes', inputSchema: {} },
    tools.paidTool('echo', '0.01', async (_args, extra) => ({
      content: [
        { type: 'text', text: `paid ${(extra as unknown as PaidToolExtra).payment.amount}` },
      ],
    })),
  )
  server.registerTool(
    'broken',
    { description: 'Always fails' },
    tools.paidTool('broken', '0.02', async () => {
      throw new Error('upstream down')
    }),
  )
  const [a, b] = InMemoryTransport.createLinkedPair()
  await server.connect(a)
  const client = new Client({ name: 'buyer', version: '1.0.0' })
  await client.connect(b)
  return client
}

const balanceOf = (address: string) => chain.usdcBalance(address)

async function mppChallenge(client: Client, name: string): Promise<Challenge> {
  const error = await client.callTool({ name, arguments: {} }).then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(McpError)
  expect((error as McpError).code).toBe(-32042)
  const data = (error as McpError).data as { httpStatus: number; challenges: Challenge[] }
  expect(data.httpStatus).toBe(402)
  return data.challenges[0] as Challenge
}

describe('paid MCP tools, MPP transport', () => {
  it('an unpaid call gets -32042 with the challenge; a credential in _meta pays; a replay is refused', async () => {
    const client = await connect('mpp')
    const payer = chain.createTestWallet({ usdc: '1', sui: '1' })
    const challenge = await mppChallenge(client, 'echo')
    expect(challenge.method).toBe('sui')
    expect(challenge.request).toMatchObject({ amount: '10000', recipient: seller.toSuiAddress() })
    const { authorization, digest } = await mppAuthorization(chain.client, payer, challenge)
    const credential = parseCredential(authorization)
    const paid = await client.callTool({
      name: 'echo',
      arguments: {},
      _meta: { 'org.paymentauth/credential': credential },
    })
    expect(paid.isError).toBeFalsy()
    expect(paid.content).toEqual([{ type: 'text', text: 'paid 10000' }])
    const receipt = paid._meta?.['org.paymentauth/receipt'] as Record<string, unknown>
    expect(receipt).toMatchObject({ status: 'success', method: 'sui', reference: digest })

    const replay = await client
      .callTool({
        name: 'echo',
        arguments: {},
        _meta: { 'org.paymentauth/credential': credential },
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      )
    expect((replay as McpError).code).toBe(-32042)
    expect(((replay as McpError).data as { problem: { code: string } }).problem.code).toBe('replay')
  })

  it('a tool that fails after payment is refunded exactly once', async () => {
    const client = await connect('mpp')
    const payer = chain.createTestWallet({ usdc: '1', sui: '1' })
    const start = await balanceOf(payer.toSuiAddress())
    const challenge = await mppChallenge(client, 'broken')
    const { authorization, digest } = await mppAuthorization(chain.client, payer, challenge)
    expect(await balanceOf(payer.toSuiAddress())).toBe(start - 20_000n)
    const failed = await client.callTool({
      name: 'broken',
      arguments: {},
      _meta: { 'org.paymentauth/credential': parseCredential(authorization) },
    })
    expect(failed.isError).toBe(true)
    expect(failed._meta?.['tollgate/refund']).toMatchObject({ status: 'refund_due', digest })
    await until(async () => (await balanceOf(payer.toSuiAddress())) === start)
    // Several more worker runs: still exactly one refund.
    await new Promise((resolve) => setTimeout(resolve, 400))
    expect(await balanceOf(payer.toSuiAddress())).toBe(start)
    expect(events.filter((e) => e.type === 'refunded' && e.digest === digest)).toHaveLength(1)
  })
})

describe('paid MCP tools, x402 transport', () => {
  it('an unpaid call gets an isError result with the requirements; _meta["x402/payment"] pays; a replay is refused', async () => {
    const client = await connect('x402')
    const payer = chain.createTestWallet({ usdc: '1', sui: '1' })
    const unpaid = await client.callTool({ name: 'echo', arguments: {} })
    expect(unpaid.isError).toBe(true)
    const required = unpaid.structuredContent as {
      x402Version: number
      accepts: PaymentRequirement[]
    }
    expect(required.x402Version).toBe(1)
    const text = JSON.parse((unpaid.content as { text: string }[])[0]?.text ?? '{}')
    expect(text['x402/error']).toMatchObject({ code: 402, data: required })
    const requirement = required.accepts[0] as PaymentRequirement
    expect(requirement).toMatchObject({
      resource: 'https://mcp.localhost/tool/echo',
      maxAmountRequired: '10000',
    })
    const header = await x402PaymentHeader(chain.client, payer, requirement)
    const payment = JSON.parse(Buffer.from(header, 'base64').toString('utf8'))
    const before = await balanceOf(seller.toSuiAddress())
    const paid = await client.callTool({
      name: 'echo',
      arguments: {},
      _meta: { 'x402/payment': payment },
    })
    expect(paid.isError).toBeFalsy()
    const settlement = paid._meta?.['x402/payment-response'] as Record<string, unknown>
    expect(settlement).toMatchObject({ success: true, payer: payer.toSuiAddress() })
    expect(await balanceOf(seller.toSuiAddress())).toBe(before + 10_000n)

    const replay = await client.callTool({
      name: 'echo',
      arguments: {},
      _meta: { 'x402/payment': payment },
    })
    expect(replay.isError).toBe(true)
    expect(replay.structuredContent).toMatchObject({ code: 'replay' })
    expect(await balanceOf(seller.toSuiAddress())).toBe(before + 10_000n)
  })
})

async function until(check: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out')
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}
