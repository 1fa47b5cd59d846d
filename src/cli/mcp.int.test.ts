/**
 * `tollgate mcp` as an MCP host runs it: the real CLI spawned over stdio (the SDK's
 * `StdioClientTransport`), with a wallet file in its config folder, against a local gateway on its
 * embedded defaults. The catalog is listed, a paid tool is paid on the local ledger, and the
 * session budget refuses the next call with LIMIT_PER_SESSION; with `--allow-test-root`,
 * `verify_receipt` verifies a confidential answer of the simulated enclave (flagged `testRoot`).
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { useTestGateway } from '../../reference-gateway/server/testHelpers.js'
import { cliArgs } from '../../scripts/cliUnderTest.js'
import { createWalletFile } from './walletFiles.js'

const gateway = useTestGateway()
let home: string

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'tollgate-mcp-home-'))
})

afterAll(async () => {
  if (home) rmSync(home, { recursive: true, force: true })
})

describe('tollgate mcp over stdio', { timeout: 180_000 }, () => {
  it('lists the catalog, pays a tool, and refuses past the session budget', async () => {
    const emulator = gateway.emulator
    const { address } = await createWalletFile({ home })
    emulator.faucet({ address, usdc: '1', sui: '1' })
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [
        ...cliArgs('mcp', '--gateway', gateway.url),
        ...['--ledger', emulator.url, '--max', '0.05', '--session-budget', '0.03'],
        '--allow-test-root',
      ],
      env: { ...(process.env as Record<string, string>), TOLLGATE_HOME: home, NO_COLOR: '1' },
      stderr: 'pipe',
    })
    const client = new Client({ name: 'host', version: '1.0.0' })
    await client.connect(transport)
    try {
      const { tools } = await client.listTools()
      expect(tools.map((tool) => tool.name)).toEqual(
        expect.arrayContaining(['anthropic-v1-messages', 'chat-llama-3_3-70b']),
      )
      const args = {
        model: 'claude-sonnet-4-5',
        max_tokens: 16,
        messages: [{ role: 'user', content: 'hi' }],
      }
      const paid = await client.callTool({ name: 'anthropic-v1-messages', arguments: args })
      expect(paid.isError).toBe(false)
      expect(paid.structuredContent).toMatchObject({ status: 200, payment: { amount: '0.020000' } })
      const refused = await client.callTool({ name: 'anthropic-v1-messages', arguments: args })
      expect(refused.structuredContent).toMatchObject({ error: { code: 'LIMIT_PER_SESSION' } })
      const address2 = await client.callTool({ name: 'wallet_address', arguments: {} })
      expect(address2.structuredContent).toMatchObject({ address })
      // A confidential answer of the simulated enclave, anchored: verified under its test root.
      const { key } = await gateway.inference.keys.create({ credit: 10_000n })
      const answer = await fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'confidential/llama-3.3-70b',
          messages: [{ role: 'user', content: 'Hi' }],
        }),
      })
      await answer.text()
      const receiptId = answer.headers.get('x-receipt-id') ?? ''
      const anchor = await fetch(`${gateway.url}/v1/aci/anchor/${receiptId}`, { method: 'POST' })
      expect(anchor.status).toBe(200)
      const verified = await client.callTool({
        name: 'verify_receipt',
        arguments: { receipt_id: receiptId },
      })
      expect(verified.structuredContent).toMatchObject({ status: 'verified', testRoot: true })
    } finally {
      await client.close()
    }
  })

  it('starts without a wallet: lists the tools it says, a paid call tells how to make one', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'tollgate-mcp-home-'))
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: cliArgs('mcp', '--gateway', gateway.url),
      env: { ...(process.env as Record<string, string>), TOLLGATE_HOME: empty, NO_COLOR: '1' },
      stderr: 'pipe',
    })
    let stderr = ''
    transport.stderr?.on('data', (chunk) => {
      stderr += chunk
    })
    const client = new Client({ name: 'host', version: '1.0.0' })
    await client.connect(transport)
    try {
      const { tools } = await client.listTools()
      const summary = /on stdio: (\d+) tools from .*, no wallet to pay with/
      for (let i = 0; i < 100 && !summary.test(stderr); i++) {
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      // The start line counts what listTools returns (it counted the catalog alone).
      expect(Number((summary.exec(stderr) as RegExpExecArray)[1])).toBe(tools.length)
      const refused = await client.callTool({ name: 'anthropic-v1-messages', arguments: {} })
      expect(refused.isError).toBe(true)
      expect(refused.structuredContent).toEqual({
        error: {
          code: 'NO_WALLET',
          message: `No wallet at ${join(empty, 'wallet.json')}: create one with tollgate wallet new, fund it with USDC (tollgate wallet fund on the local ledger), then restart tollgate mcp.`,
        },
      })
    } finally {
      await client.close()
      rmSync(empty, { recursive: true, force: true })
    }
  })

  it('serves streamable HTTP on loopback with --http: one session budget per MCP session', async () => {
    const emulator = gateway.emulator
    const httpHome = mkdtempSync(join(tmpdir(), 'tollgate-mcp-home-'))
    const { address } = await createWalletFile({ home: httpHome })
    emulator.faucet({ address, usdc: '1', sui: '1' })
    const child = spawn(
      process.execPath,
      [
        ...cliArgs('mcp', '--gateway', gateway.url, '--http', '0'),
        ...['--ledger', emulator.url, '--session-budget', '0.03'],
      ],
      {
        env: { ...process.env, TOLLGATE_HOME: httpHome, NO_COLOR: '1' },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    )
    try {
      let stderr = ''
      child.stderr.on('data', (chunk) => {
        stderr += chunk
      })
      const deadline = Date.now() + 120_000
      while (!/on (http:\/\/127\.0\.0\.1:\d+\/mcp)/.test(stderr)) {
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(stderr)
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      const url = new URL(
        (/on (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(stderr) as RegExpExecArray)[1] as string,
      )
      const args = {
        model: 'claude-sonnet-4-5',
        max_tokens: 16,
        messages: [{ role: 'user', content: 'hi' }],
      }
      const session = async () => {
        const client = new Client({ name: 'host', version: '1.0.0' })
        await client.connect(new StreamableHTTPClientTransport(url))
        return client
      }
      const first = await session()
      expect(
        (await first.callTool({ name: 'anthropic-v1-messages', arguments: args })).isError,
      ).toBe(false)
      const refused = await first.callTool({ name: 'anthropic-v1-messages', arguments: args })
      expect(refused.structuredContent).toMatchObject({ error: { code: 'LIMIT_PER_SESSION' } })
      // A second session has its own budget.
      const second = await session()
      expect(
        (await second.callTool({ name: 'anthropic-v1-messages', arguments: args })).isError,
      ).toBe(false)
      await first.close()
      await second.close()
    } finally {
      child.kill('SIGTERM')
      rmSync(httpHome, { recursive: true, force: true })
    }
  })
})
