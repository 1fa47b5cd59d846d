/**
 * `tollgate mcp`'s whole catalog against a local gateway on its embedded defaults (SQLite, the
 * ledger emulator, the stub upstreams), driven by the MCP SDK's own `Client`: a seller listed
 * through the marketplace routes (agent registered, prepare, sign, submit) and the inference API's
 * keyless model are tools beside the gateway's own endpoints; each is paid end to end (the seller
 * paid directly, the gateway for the chat) and counted in the spend report; the session budget and
 * the per-call maximum refuse them with the client's codes, nothing paid; a seller on loopback is
 * not called unless private sellers are allowed; a model that needs a key is listed only with one.
 */
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { registerAgent } from '../../conformance/fixtures/agent.js'
import { type RunningSeller, startSeller } from '../../conformance/fixtures/sellers.js'
import { submitListing } from '../../reference-gateway/marketplace/testHelpers.js'
import { useTestGateway } from '../../reference-gateway/server/testHelpers.js'
import { createGatewayMcp, type GatewayMcpOptions } from './server.js'

const gateway = useTestGateway({
  config: {
    // The seller listens on 127.0.0.1; private addresses are off unless set.
    listingAllowPrivateNetwork: true,
  },
})
let seller: RunningSeller
let agent: Ed25519Keypair

beforeAll(async () => {
  agent = gateway.emulator.createTestWallet({ usdc: '0', sui: '1' })
  await registerAgent(gateway.ledgerClient, agent, gateway.emulator.modulesPackage, 'mcp-seller')
  seller = await startSeller(
    { ledgerUrl: gateway.emulator.url, wallet: agent.toSuiAddress() },
    { adapter: 'hono', price: '0.03' },
  )
  const listed = await submitListing(`${gateway.url}/v1/agent`, agent, {
    url: seller.url,
    name: 'Answer oracle',
    description: 'The answer to any question',
    tags: ['qa'],
    probeBody: '{"question":"why"}',
    inputSchema: {
      type: 'object',
      required: ['question'],
      properties: { question: { type: 'string', maxLength: 200 } },
    },
  })
  expect(listed.status, JSON.stringify(listed.json)).toBe(201)
}, 120_000)

afterAll(async () => {
  await seller?.close()
})

const balanceOf = (address: string) => gateway.usdcBalance(address)

let wallets = 0
async function connect(payer: Ed25519Keypair, options: Partial<GatewayMcpOptions> = {}) {
  const mcp = await createGatewayMcp({
    gateway: gateway.url,
    signer: payer,
    ledger: gateway.emulator.url,
    limits: { file: join(gateway.dataDir, `spending-${wallets++}.json`) },
    allowPrivateSellers: true,
    ...options,
  })
  const [a, b] = InMemoryTransport.createLinkedPair()
  await mcp.createServer().connect(a)
  const client = new Client({ name: 'agent', version: '1.0.0' })
  await client.connect(b)
  return { client, mcp }
}

type ErrorContent = { error: { code: string; message: string } }
type Paid = {
  status: number
  payment: { digest: string; amount: string; payTo: string }
  body: unknown
}

const question = { question: 'what is six times seven?' }
const chat = { messages: [{ role: 'user', content: 'hi' }], max_tokens: 16 }

async function sellerToolName(client: Client): Promise<string> {
  const { tools } = await client.listTools()
  const found = tools.find((tool) => tool.name.startsWith('seller-answer-oracle-'))
  if (found === undefined) throw new Error('no seller tool')
  return found.name
}

describe('tollgate mcp: listed sellers and the inference API as paid tools', () => {
  it('lists the seller endpoint and the keyless model with schema, seller and price', async () => {
    const { client, mcp } = await connect(
      gateway.emulator.createTestWallet({ usdc: '1', sui: '1' }),
    )
    expect(mcp.warnings).toEqual([])
    const { tools } = await client.listTools()
    const names = tools.map((tool) => tool.name)
    expect(new Set(names).size).toBe(names.length)
    for (const name of names) expect(name).toMatch(/^[A-Za-z0-9_-]{1,64}$/)

    const listed = tools.find((tool) => tool.name.startsWith('seller-answer-oracle-'))
    expect(listed?.description).toBe(
      `seller's name: "Answer oracle", seller's description: "The answer to any question". Listed seller ${agent.toSuiAddress()} ` +
        `(${new URL(seller.url).host}), not the gateway. ` +
        'Price: 0.030000 USDC per call, paid from your wallet to the seller.',
    )
    expect(listed?.inputSchema).toEqual({
      type: 'object',
      required: ['question'],
      properties: { question: { type: 'string', maxLength: 200 } },
    })

    const model = tools.find((tool) => tool.name === 'chat-llama-3_3-70b')
    expect(model?.description).toBe(
      "Chat with the model llama-3.3-70b (open, 131072 tokens of context) on the gateway's " +
        'inference API. Price: 0.050000 USDC per call, paid from your wallet.',
    )
    expect(Object.keys(model?.inputSchema.properties ?? {}).sort()).toEqual([
      'max_tokens',
      'messages',
      'temperature',
    ])
    expect(model?.inputSchema.required).toEqual(['messages'])
    // The confidential model needs an API key: not a tool without one.
    expect(names.filter((name) => name.startsWith('chat-'))).toEqual([
      'chat-llama-3_3-70b',
      'chat-confidential_llama-3_3-70b',
    ])
  })

  it('pays the seller directly and the chat through the gateway, counted per tool', async () => {
    const payer = gateway.emulator.createTestWallet({ usdc: '1', sui: '1' })
    const start = await balanceOf(payer.toSuiAddress())
    const sellerStart = await balanceOf(agent.toSuiAddress())
    const { client } = await connect(payer, { maxPrice: '0.05', sessionBudget: '1' })
    const name = await sellerToolName(client)

    const answered = await client.callTool({ name, arguments: question })
    expect(answered.isError).toBe(false)
    const paid = answered.structuredContent as Paid
    expect(paid).toMatchObject({
      status: 200,
      body: { answer: 42 },
      payment: { amount: '0.030000', payTo: agent.toSuiAddress() },
    })
    const tx = await gateway.ledgerClient.core.getTransaction({ digest: paid.payment.digest })
    expect(tx.Transaction?.digest ?? tx.FailedTransaction?.digest).toBe(paid.payment.digest)
    expect(await balanceOf(agent.toSuiAddress())).toBe(sellerStart + 30_000n)

    const chatted = await client.callTool({ name: 'chat-llama-3_3-70b', arguments: chat })
    expect(chatted.isError).toBe(false)
    const completion = chatted.structuredContent as Paid & {
      body: { model: string; choices: unknown[] }
    }
    expect(completion.payment.amount).toBe('0.050000')
    expect(completion.body.model).toBe('llama-3.3-70b')
    expect(completion.body.choices.length).toBeGreaterThan(0)
    expect(await balanceOf(payer.toSuiAddress())).toBe(start - 80_000n)

    const report = (await client.callTool({ name: 'spend_report', arguments: {} }))
      .structuredContent as { session: string; byTool: Record<string, string> }
    expect(report.session).toBe('0.080000')
    expect(report.byTool).toEqual({ [name]: '0.030000', 'chat-llama-3_3-70b': '0.050000' })
  })

  it('the session budget refuses both over the limit with LIMIT_PER_SESSION, nothing paid', async () => {
    const payer = gateway.emulator.createTestWallet({ usdc: '1', sui: '1' })
    const { client } = await connect(payer, { sessionBudget: '0.04' })
    const name = await sellerToolName(client)
    expect((await client.callTool({ name, arguments: question })).isError).toBe(false)
    const after = await balanceOf(payer.toSuiAddress())
    for (const call of [
      { name, arguments: question },
      { name: 'chat-llama-3_3-70b', arguments: chat },
    ]) {
      const refused = await client.callTool(call)
      expect(refused.isError).toBe(true)
      expect((refused.structuredContent as ErrorContent).error.code).toBe('LIMIT_PER_SESSION')
    }
    expect(await balanceOf(payer.toSuiAddress())).toBe(after)
  })

  it('the per-call maximum refuses both with PRICE_ABOVE_MAX, nothing paid', async () => {
    const payer = gateway.emulator.createTestWallet({ usdc: '1', sui: '1' })
    const start = await balanceOf(payer.toSuiAddress())
    const { client } = await connect(payer, { maxPrice: '0.02' })
    for (const call of [
      { name: await sellerToolName(client), arguments: question },
      { name: 'chat-llama-3_3-70b', arguments: chat },
    ]) {
      const refused = await client.callTool(call)
      expect((refused.structuredContent as ErrorContent).error.code).toBe('PRICE_ABOVE_MAX')
    }
    expect(await balanceOf(payer.toSuiAddress())).toBe(start)
  })

  it('does not call a seller on a private address unless allowed, nothing paid', async () => {
    const payer = gateway.emulator.createTestWallet({ usdc: '1', sui: '1' })
    const start = await balanceOf(payer.toSuiAddress())
    const { client } = await connect(payer, { allowPrivateSellers: false })
    const refused = await client.callTool({
      name: await sellerToolName(client),
      arguments: question,
    })
    expect(refused.isError).toBe(true)
    expect((refused.structuredContent as ErrorContent).error.code).toBe('unreachable')
    expect(await balanceOf(payer.toSuiAddress())).toBe(start)
  })

  it('lists a model that needs a key only with one; a refused key costs nothing', async () => {
    const payer = gateway.emulator.createTestWallet({ usdc: '1', sui: '1' })
    const apiKey = 'tg_not-a-real-key-of-this-gateway'
    // The embedded default serves every model keyless: this gateway's keyless list is read without
    // the confidential model, which then needs a key.
    const keyedOnly = async (request: Request) => {
      const response = await fetch(request)
      if (new URL(request.url).pathname !== '/open/v1/models') return response
      const list = (await response.json()) as { data: { id: string }[] }
      return Response.json({
        ...list,
        data: list.data.filter((m) => !m.id.startsWith('confidential/')),
      })
    }
    const { client } = await connect(payer, { apiKey, sessionBudget: '1', fetch: keyedOnly })
    const { tools } = await client.listTools()
    const keyed = tools.find((tool) => tool.name === 'chat-confidential_llama-3_3-70b')
    expect(keyed?.description).toBe(
      "Chat with the model confidential/llama-3.3-70b (confidential, 131072 tokens of context) on the gateway's " +
        'inference API. Price: 0.0000012 USDC per prompt token and 0.0000016 per output token, ' +
        // The most a call can cost: the whole window (131 072 tokens) at the higher token price.
        "up to 0.209716 USDC per call, debited from your API key's credit.",
    )
    expect(JSON.stringify(tools)).not.toContain(apiKey)
    const refused = await client.callTool({
      name: 'chat-confidential_llama-3_3-70b',
      arguments: chat,
    })
    expect(refused.isError).toBe(true)
    expect((refused.structuredContent as { status: number }).status).toBe(401)
    const report = (await client.callTool({ name: 'spend_report', arguments: {} }))
      .structuredContent as { session: string }
    expect(report.session).toBe('0.000000')
  })
})
