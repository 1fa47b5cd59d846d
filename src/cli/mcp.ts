/**
 * `tollgate mcp [--gateway URL] [--http PORT]`: an MCP server exposing a gateway's catalog as tools,
 * paid with the wallet in the config folder within its limits, a per-call maximum and per-session
 * and per-day budgets. Speaks stdio by default (what desktop MCP hosts launch), or streamable HTTP
 * on loopback with `--http`. stdout carries JSON-RPC over stdio: everything else goes to stderr.
 * With `TOLLGATE_API_KEY` set, the inference models that need a key are tools too (the key is
 * never printed); listed sellers on private addresses are called only with `--allow-private-sellers`.
 * With `--session`, a seller offering an MPP session is paid over one channel (see `tollgate session`).
 *
 * @module
 */
import { randomUUID } from 'node:crypto'
import { createServer } from 'node:http'
import { Command, InvalidArgumentError, Option } from 'commander'
import pc from 'picocolors'
import { parseAmount } from 'tollgate'
import { ledgerOption, messageOf, networkOption, preferOption } from './options.js'
import { defaultMaxDeposit, pinnedChannels } from './session.js'
import { fail, ledgerUrlOf } from './wallet.js'
import { limitsFrom, loadSettings, loadWallet, walletPaths } from './walletFiles.js'

/** The optional peer this command needs. */
const sdk = '@modelcontextprotocol/sdk'

type McpOptions = {
  gateway: string
  http?: number
  max?: string
  sessionBudget?: string
  dayBudget?: string
  ledger?: string
  network: string
  prefer?: 'x402' | 'mpp'
  allowPrivateSellers?: boolean
  allowTestRoot?: boolean
  session?: boolean
  maxDeposit?: string
}

/** The environment variable holding the inference API key (never a flag: argv is visible). */
const apiKeyVariable = 'TOLLGATE_API_KEY'

function port(value: string): number {
  const n = Number(value)
  if (!Number.isInteger(n) || n < 0 || n > 65_535) {
    throw new InvalidArgumentError('port must be an integer in [0, 65535]')
  }
  return n
}

function usdc(value: string): string {
  try {
    parseAmount(value)
    return value
  } catch {
    throw new InvalidArgumentError('an amount in USDC, like 0.10')
  }
}

/** Whether the MCP SDK can be loaded from here (it is an optional peer dependency). */
async function sdkInstalled(): Promise<boolean> {
  try {
    await import('@modelcontextprotocol/sdk/server/index.js')
    return true
  } catch (error) {
    const code = (error as { code?: unknown }).code
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') return false
    throw error
  }
}

/** What a paid call is told when the wallet could not be loaded: why, and how to make one. */
function noWalletHint(error: unknown): string {
  const { wallet } = walletPaths()
  const why = messageOf(error)
  return /^No wallet at /.test(why)
    ? `No wallet at ${wallet}: create one with tollgate wallet new, fund it with USDC (tollgate wallet fund on the local ledger), then restart tollgate mcp.`
    : `${why.replace(/\.?$/, '.')} Then restart tollgate mcp.`
}

/** Builds the `mcp` sub-command. */
export function mcpCommand(): Command {
  return new Command('mcp')
    .description(
      "Run an MCP server exposing a gateway's catalog as tools, paid from the wallet within its limits and budgets (stdio; --http for streamable HTTP)",
    )
    .addOption(
      new Option('--gateway <url>', 'the gateway whose catalog becomes tools')
        .env('TOLLGATE_GATEWAY')
        .default('http://127.0.0.1:4020'),
    )
    .option('--http <port>', 'serve streamable HTTP on 127.0.0.1:PORT/mcp instead of stdio', port)
    .option('--max <usdc>', 'most one call may cost (refused with PRICE_ABOVE_MAX)', usdc)
    .option('--session-budget <usdc>', 'most one MCP session may spend (LIMIT_PER_SESSION)', usdc)
    .option('--day-budget <usdc>', 'most all sessions may spend per 24 hours (LIMIT_PER_DAY)', usdc)
    .addOption(ledgerOption())
    .addOption(networkOption())
    .addOption(preferOption())
    .option(
      '--allow-private-sellers',
      'let listed sellers on loopback or private addresses be called (local stack only)',
    )
    .option(
      '--session',
      'pay sellers that offer an MPP session over one channel each (opened once, a voucher per call; tollgate session lists them)',
    )
    .option(
      '--max-deposit <usdc>',
      'with --session: most a channel may hold, in USDC (default 1); counted against the budgets when made',
      usdc,
    )
    .option(
      '--allow-test-root',
      'let verify_receipt accept a quote under a test root CA (the local stack’s simulated enclave)',
    )
    .action(async (options: McpOptions) => {
      if (!(await sdkInstalled())) {
        console.error(
          pc.red(`tollgate mcp needs the optional package ${sdk}; add it with: npm install ${sdk}`),
        )
        process.exit(2)
      }
      try {
        await serve(options)
      } catch (error) {
        fail(error)
      }
    })
}

/** `--session`: the channel package pinned for the ledger, the wallet's book, `--max-deposit`. */
async function sessionsOf(options: McpOptions) {
  const { pinned, client, book } = await pinnedChannels(options.ledger, options.network)
  const maxDeposit =
    options.maxDeposit === undefined ? defaultMaxDeposit : parseAmount(options.maxDeposit)
  return { pinned, client, book, maxDeposit }
}

async function serve(options: McpOptions): Promise<void> {
  const { createGatewayMcp } = await import('tollgate/mcp')
  const [wallet, settings, ledger] = await Promise.all([
    loadWallet().then(
      (signer) => ({ signer, hint: undefined }),
      // No wallet (or one that cannot be used): start anyway, so that an MCP host lists the tools
      // and a paid call says how to make one, instead of a closed connection.
      (error: unknown) => ({ signer: undefined, hint: noWalletHint(error) }),
    ),
    loadSettings(),
    ledgerUrlOf(options.ledger, options.network),
  ])
  const signer = wallet.signer
  if (wallet.hint !== undefined) console.error(pc.yellow(wallet.hint))
  const mcp = await createGatewayMcp({
    gateway: options.gateway,
    signer,
    noWalletHint: wallet.hint,
    ledger,
    network: options.network,
    maxPrice: options.max,
    sessionBudget: options.sessionBudget,
    dayBudget: options.dayBudget,
    limits: limitsFrom(settings),
    prefer: options.prefer,
    // The models that need a key become tools only with one; the key itself is never printed.
    apiKey: process.env[apiKeyVariable] || undefined,
    allowPrivateSellers: options.allowPrivateSellers,
    allowTestRoot: options.allowTestRoot,
    sessions: options.session === true ? await sessionsOf(options) : undefined,
  })
  for (const warning of mcp.warnings) console.error(pc.yellow(warning))
  const summary = `${mcp.toolCount} tools from ${options.gateway}, ${signer === undefined ? 'no wallet to pay with' : `paid by ${signer.toSuiAddress()}`}`
  if (options.http === undefined) {
    const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js')
    await mcp.createServer().connect(new StdioServerTransport())
    console.error(`${pc.bold('tollgate mcp')} on stdio: ${summary}`)
    return
  }
  const { StreamableHTTPServerTransport } = await import(
    '@modelcontextprotocol/sdk/server/streamableHttp.js'
  )
  type Transport = InstanceType<typeof StreamableHTTPServerTransport>
  const sessions = new Map<string, Transport>()
  const server = createServer(async (request, response) => {
    if (new URL(request.url ?? '/', 'http://localhost').pathname !== '/mcp') {
      response.writeHead(404).end()
      return
    }
    const id = request.headers['mcp-session-id']
    let transport = typeof id === 'string' ? sessions.get(id) : undefined
    if (transport === undefined) {
      if (id !== undefined) {
        response.writeHead(404, { 'content-type': 'application/json' })
        response.end(JSON.stringify({ error: 'unknown MCP session' }))
        return
      }
      const address = server.address()
      const listening = typeof address === 'object' && address !== null ? address.port : 0
      const created: Transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sessionId) => {
          sessions.set(sessionId, created)
        },
        enableDnsRebindingProtection: true,
        allowedHosts: [`127.0.0.1:${listening}`, `localhost:${listening}`],
      })
      created.onclose = () => {
        if (created.sessionId !== undefined) sessions.delete(created.sessionId)
      }
      // Each session is its own server: its own session budget, the daily one shared.
      await mcp.createServer().connect(created)
      transport = created
    }
    await transport.handleRequest(request, response)
  })
  server.listen(options.http, '127.0.0.1', () => {
    const address = server.address()
    const listening = typeof address === 'object' && address !== null ? address.port : options.http
    console.error(
      `${pc.bold('tollgate mcp')} on http://127.0.0.1:${listening}/mcp (streamable HTTP): ${summary}`,
    )
  })
  const stop = () => {
    server.close()
    process.exit(0)
  }
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
}
