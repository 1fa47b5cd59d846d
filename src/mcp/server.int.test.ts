/**
 * `tollgate mcp`'s server against a local gateway on its embedded defaults (SQLite, the ledger
 * emulator, the stub upstreams), driven by the MCP SDK's own `Client` over an in-memory transport:
 * the catalog listed as tools (schema and price from the gateway's discovery documents), a paid
 * tool called end to end (payment settled on the local ledger), and the session budget, the daily
 * budget and the per-call maximum refusing an over-limit call with the client's code, nothing paid;
 * and `verify_receipt` verifying a confidential answer's receipt step by step (a session's report
 * once for the server's lifetime), the simulated enclave's test root refused unless the server
 * allows it (`allowTestRoot`).
 */
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { describe, expect, it } from 'vitest'
import pkg from '../../package.json' with { type: 'json' }
import { useTestGateway } from '../../reference-gateway/server/testHelpers.js'
import { createGatewayMcp, type GatewayMcpOptions } from './server.js'

const gateway = useTestGateway()

const chat = {
  model: 'claude-sonnet-4-5',
  max_tokens: 16,
  messages: [{ role: 'user', content: 'hi' }],
}

const balanceOf = (address: string) => gateway.usdcBalance(address)

let wallets = 0
async function connect(payer: Ed25519Keypair, options: Partial<GatewayMcpOptions> = {}) {
  const mcp = await createGatewayMcp({
    gateway: gateway.url,
    signer: payer,
    ledger: gateway.emulator.url,
    limits: { file: join(gateway.dataDir, `spending-${wallets++}.json`) },
    ...options,
  })
  const [a, b] = InMemoryTransport.createLinkedPair()
  await mcp.createServer().connect(a)
  const client = new Client({ name: 'agent', version: '1.0.0' })
  await client.connect(b)
  return { client, mcp }
}

type ErrorContent = { error: { code: string; message: string } }

describe('tollgate mcp: a gateway catalog as paid tools', () => {
  it('lists one tool per endpoint with its request schema and price, and the wallet tools', async () => {
    const { client } = await connect(gateway.emulator.createTestWallet({ usdc: '1', sui: '1' }))
    expect(client.getServerVersion()).toEqual({ name: 'tollgate', version: pkg.version })
    const { tools } = await client.listTools()
    const messages = tools.find((tool) => tool.name === 'anthropic-v1-messages')
    expect(messages?.description).toBe(
      'Chat. Price: 0.020000 USDC per call, paid from your wallet.',
    )
    expect(messages?.inputSchema.type).toBe('object')
    expect(Object.keys(messages?.inputSchema.properties ?? {})).toEqual(
      expect.arrayContaining(['model', 'messages']),
    )
    expect(tools.map((tool) => tool.name)).toEqual(
      expect.arrayContaining([
        'wallet_address',
        'wallet_balance',
        'spend_report',
        'verify_receipt',
      ]),
    )
    // One per priced POST and per free GET of the gateway's own OpenAPI document (the signed
    // moves of jobs and listings, and the keyed inference route, are not tools).
    const openapi = (await (await fetch(`${gateway.url}/openapi.json`)).json()) as {
      paths: Record<string, { get?: unknown; post?: { 'x-payment-info'?: unknown } }>
    }
    const callable = Object.values(openapi.paths).filter(
      (item) => item.post?.['x-payment-info'] !== undefined || item.get !== undefined,
    )
    expect(callable.length).toBeGreaterThanOrEqual(89)
    // Beside them, one chat tool per keyless inference model (catalog.int.test.ts).
    expect(tools.filter((tool) => !tool.name.startsWith('chat-')).length).toBe(callable.length + 4)
  })

  it('calls a paid tool end to end: settled on the local ledger, counted per tool', async () => {
    const payer = gateway.emulator.createTestWallet({ usdc: '1', sui: '1' })
    const start = await balanceOf(payer.toSuiAddress())
    const { client } = await connect(payer, { maxPrice: '0.05', sessionBudget: '1' })
    const result = await client.callTool({ name: 'anthropic-v1-messages', arguments: chat })
    expect(result.isError).toBe(false)
    const paid = result.structuredContent as {
      status: number
      payment: { digest: string; amount: string }
    }
    expect(paid.status).toBe(200)
    expect(paid.payment.amount).toBe('0.020000')
    const tx = await gateway.ledgerClient.core.getTransaction({ digest: paid.payment.digest })
    expect(tx.Transaction?.digest ?? tx.FailedTransaction?.digest).toBe(paid.payment.digest)
    expect(await balanceOf(payer.toSuiAddress())).toBe(start - 20_000n)

    const report = (await client.callTool({ name: 'spend_report', arguments: {} }))
      .structuredContent as { session: string; byTool: Record<string, string> }
    expect(report.session).toBe('0.020000')
    expect(report.byTool).toEqual({ 'anthropic-v1-messages': '0.020000' })
    const address = (await client.callTool({ name: 'wallet_address', arguments: {} }))
      .structuredContent as { address: string }
    expect(address.address).toBe(payer.toSuiAddress())
    const balance = (await client.callTool({ name: 'wallet_balance', arguments: {} }))
      .structuredContent as { usdc: string }
    expect(balance.usdc).toBe('0.980000')
  })

  it('the session budget refuses an over-budget call with LIMIT_PER_SESSION, nothing paid', async () => {
    const payer = gateway.emulator.createTestWallet({ usdc: '1', sui: '1' })
    const { client } = await connect(payer, { sessionBudget: '0.03' })
    expect(
      (await client.callTool({ name: 'anthropic-v1-messages', arguments: chat })).isError,
    ).toBe(false)
    const after = await balanceOf(payer.toSuiAddress())
    const refused = await client.callTool({ name: 'anthropic-v1-messages', arguments: chat })
    expect(refused.isError).toBe(true)
    expect((refused.structuredContent as ErrorContent).error.code).toBe('LIMIT_PER_SESSION')
    expect(await balanceOf(payer.toSuiAddress())).toBe(after)
  })

  it('the daily budget refuses with LIMIT_PER_DAY, nothing paid', async () => {
    const payer = gateway.emulator.createTestWallet({ usdc: '1', sui: '1' })
    const start = await balanceOf(payer.toSuiAddress())
    const { client } = await connect(payer, { dayBudget: '0.01' })
    const refused = await client.callTool({ name: 'anthropic-v1-messages', arguments: chat })
    expect((refused.structuredContent as ErrorContent).error.code).toBe('LIMIT_PER_DAY')
    expect(await balanceOf(payer.toSuiAddress())).toBe(start)
  })

  it('keeps the daily budget across a restart: the spends in the wallet record count', async () => {
    const payer = gateway.emulator.createTestWallet({ usdc: '1', sui: '1' })
    const limits = { file: join(gateway.dataDir, 'spending-restart.json') }
    const first = await connect(payer, { dayBudget: '0.03', limits })
    const paid = await first.client.callTool({ name: 'anthropic-v1-messages', arguments: chat })
    expect(paid.isError).toBe(false)
    await first.client.close()
    const after = await balanceOf(payer.toSuiAddress())
    // A new server (the process restarted) on the same wallet record: 0.02 of 0.03 already spent.
    const second = await connect(payer, { dayBudget: '0.03', limits })
    const refused = await second.client.callTool({
      name: 'anthropic-v1-messages',
      arguments: chat,
    })
    expect((refused.structuredContent as ErrorContent).error.code).toBe('LIMIT_PER_DAY')
    expect(await balanceOf(payer.toSuiAddress())).toBe(after)
    const report = await second.client.callTool({ name: 'spend_report', arguments: {} })
    expect(report.structuredContent).toMatchObject({ session: '0.000000', lastDay: '0.020000' })
  })

  it('starts without a wallet: every tool listed, a paid call told how to make one', async () => {
    const mcp = await createGatewayMcp({
      gateway: gateway.url,
      signer: undefined,
      noWalletHint: 'No wallet: run tollgate wallet new.',
      ledger: gateway.emulator.url,
      limits: false,
    })
    const [a, b] = InMemoryTransport.createLinkedPair()
    await mcp.createServer().connect(a)
    const client = new Client({ name: 'agent', version: '1.0.0' })
    await client.connect(b)
    const { tools } = await client.listTools()
    // The count a start line shows is the count a client lists.
    expect(tools).toHaveLength(mcp.toolCount)
    for (const name of ['anthropic-v1-messages', 'wallet_address']) {
      const refused = await client.callTool({ name, arguments: chat })
      expect(refused.isError).toBe(true)
      expect(refused.structuredContent).toEqual({
        error: { code: 'NO_WALLET', message: 'No wallet: run tollgate wallet new.' },
      })
    }
    await client.close()
  })

  it('the per-call maximum refuses a dearer tool with PRICE_ABOVE_MAX, nothing paid', async () => {
    const payer = gateway.emulator.createTestWallet({ usdc: '1', sui: '1' })
    const start = await balanceOf(payer.toSuiAddress())
    const { client } = await connect(payer, { maxPrice: '0.01' })
    const refused = await client.callTool({ name: 'anthropic-v1-messages', arguments: chat })
    expect(refused.isError).toBe(true)
    expect((refused.structuredContent as ErrorContent).error.code).toBe('PRICE_ABOVE_MAX')
    expect(await balanceOf(payer.toSuiAddress())).toBe(start)
  })

  it('verify_receipt verifies a confidential answer step by step, and names the failing step', async () => {
    const { key } = await gateway.inference.keys.create({ credit: 10_000n })
    const answer = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'confidential/llama-3.3-70b',
        stream: true,
        messages: [{ role: 'user', content: 'Hi' }],
      }),
    })
    await answer.text()
    const receiptId = answer.headers.get('x-receipt-id') ?? ''
    expect(
      (await fetch(`${gateway.url}/v1/aci/anchor/${receiptId}`, { method: 'POST' })).status,
    ).toBe(200)
    const payer = gateway.emulator.createTestWallet({ usdc: '1', sui: '1' })
    const start = await balanceOf(payer.toSuiAddress())
    // The simulated enclave's quote chains to a test root: refused unless the server allows it.
    const strict = (
      await (
        await connect(payer)
      ).client.callTool({
        name: 'verify_receipt',
        arguments: { receipt_id: receiptId },
      })
    ).structuredContent as { status: string; failedStep: string; code: string }
    expect(strict).toMatchObject({
      status: 'failed',
      failedStep: 'attestation_valid',
      code: 'test_root',
    })
    const { client } = await connect(payer, { allowTestRoot: true })
    const result = await client.callTool({
      name: 'verify_receipt',
      arguments: { receipt_id: receiptId },
    })
    expect(result.isError).toBeFalsy()
    const verified = result.structuredContent as {
      status: string
      testRoot: boolean
      steps: { step: string; status: string; reused?: boolean }[]
      notProven: string[]
    }
    expect(verified.status).toBe('verified')
    expect(verified.testRoot).toBe(true)
    expect(verified.steps).toHaveLength(9)
    expect(verified.steps.every((s) => s.status === 'passed')).toBe(true)
    expect(verified.steps.at(-1)?.step).toBe('anchor')
    expect(verified.notProven.length).toBeGreaterThan(0)
    // The server keeps one verifier: the session's report is not checked again.
    const again = (
      await client.callTool({ name: 'verify_receipt', arguments: { receipt_id: receiptId } })
    ).structuredContent as typeof verified
    expect(again.status).toBe('verified')
    expect(again.steps.find((s) => s.step === 'attestation_valid')?.reused).toBe(true)

    const unknown = (
      await client.callTool({ name: 'verify_receipt', arguments: { receipt_id: 'rcpt_unknown' } })
    ).structuredContent as { status: string; failedStep: string; code: string }
    expect(unknown).toMatchObject({
      status: 'failed',
      failedStep: 'receipt_fetched',
      code: 'receipt_not_found',
    })
    expect(await balanceOf(payer.toSuiAddress())).toBe(start)
  })
})
