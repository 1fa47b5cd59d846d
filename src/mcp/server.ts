/**
 * The buyer's MCP server (`tollgate mcp`): a gateway's catalog as tools, paid through the buyer
 * client (`createPayingFetch`) with its price cap and wallet limits, inside per-session and per-day
 * budgets — with `sessions`, over one MPP session channel per seller that offers one
 * (`sessionChannels.ts`); plus tools for the wallet, the spend so far, and verifying a confidential
 * answer's receipt (`verify_receipt`: the library's receipt verifier against the same gateway and
 * ledger, one for the server's lifetime, so each attested session's report is checked once).
 *
 * ```
 * tools/call NAME ─▶ catalog tool ─▶ paying fetch ─▶ 402 ─▶ maxPrice (PRICE_ABOVE_MAX)
 *                                                   ─▶ budgets (LIMIT_PER_SESSION / LIMIT_PER_DAY)
 *                                                   ─▶ wallet limits (LIMIT_PER_TX / LIMIT_PER_DAY) ─▶ pay ─▶ answer
 *   refused ─▶ an isError result whose structuredContent is { error: { code, message } }: nothing paid
 * ```
 *
 * @module
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import type { Signer } from '@mysten/sui/cryptography'
import pkg from '../../package.json' with { type: 'json' }
import { createInferenceReceiptVerifier } from '../attestation/verifyInferenceReceipt.js'
import { createPayingFetch, isRefusal, paymentOf } from '../client/fetch.js'
import {
  createWalletLimits,
  type WalletLimits,
  type WalletLimitsOptions,
} from '../client/limits.js'
import { usdcTypeOf } from '../client/select.js'
import type { SessionClose } from '../client/sessions.js'
import { isPaymentError, PaymentError } from '../errors.js'
import { messageOf } from '../internal/messageOf.js'
import { createLedger, type Ledger } from '../ledger/index.js'
import { formatAmount, type PriceInput, parseAmount } from '../money.js'
import type { Dialect } from '../negotiate.js'
import { type Budget, type BudgetReservation, createBudget, type SessionBudget } from './budget.js'
import type { CatalogTool } from './catalogTools.js'
import { loadGatewayTools } from './gatewayTools.js'
import { sendKeyed } from './inferenceTools.js'
import type { ToolResult } from './paidTools.js'
import { checkListedTerms, createSellerFetch } from './sellerTools.js'
import { createMcpSessions, type McpSessionsOptions, sessionPaymentOf } from './sessionChannels.js'

/** Options of {@link createGatewayMcp}. */
export type GatewayMcpOptions = {
  /** The gateway's base URL (`http://127.0.0.1:4020`). */
  gateway: string
  /**
   * The buyer's key. Security: it signs payments within the limits below; never logged.
   * `undefined`: the server starts anyway and lists every tool; a paid tool and the wallet tools
   * answer `NO_WALLET` with {@link GatewayMcpOptions.noWalletHint} (keyed inference tools still work).
   */
  signer: Signer | undefined
  /** What a call that needs the missing wallet is told. Default: how `tollgate wallet` makes one. */
  noWalletHint?: string | undefined
  /** The ledger: a gRPC URL or a `Ledger`. */
  ledger: string | Ledger
  /** Network; default `sui:mainnet`. */
  network?: string | undefined
  /** Most one call may cost (USDC or base units): higher is refused with `PRICE_ABOVE_MAX`. */
  maxPrice?: PriceInput | undefined
  /** Most one MCP session may spend: beyond, `LIMIT_PER_SESSION`. Default: no session budget. */
  sessionBudget?: PriceInput | undefined
  /** Most all sessions may spend over a rolling 24 hours: beyond, `LIMIT_PER_DAY`. Default none. */
  dayBudget?: PriceInput | undefined
  /**
   * The wallet limits (see `createPayingFetch`); default the wallet's own (`spending.json`). The
   * daily budget is kept with their spending record: the MCP spends of the last 24 hours in it count
   * against `dayBudget` after a restart. With `false`, the daily budget lasts as long as the process.
   */
  limits?: WalletLimitsOptions | WalletLimits | false | undefined
  /** Dialect to pay in when both are offered. */
  prefer?: Dialect | undefined
  /**
   * An API key of the gateway's inference API: its models that need a key become tools too, paid
   * from the key's credit. Security: sent to the gateway only, never logged.
   */
  apiKey?: string | undefined
  /**
   * Let listed sellers' URLs reach loopback and private addresses. Default `false`. Security: with
   * `true` a listing can make this server call anything its host can reach; only for the local stack.
   */
  allowPrivateSellers?: boolean | undefined
  /**
   * Let `verify_receipt` accept a quote under a test root CA (the simulated enclave's, on the local
   * stack); such a verdict says `testRoot: true`. Default `false`: it fails with `test_root`.
   */
  allowTestRoot?: boolean | undefined
  /** The underlying fetch to the gateway; default `globalThis.fetch` (sellers: the SSRF-safe one). */
  fetch?: ((request: Request) => Promise<Response>) | undefined
  /**
   * Pay sellers that offer an MPP session through one channel each (reused across calls, kept in
   * the wallet's channel book); default off: every call is a payment of its own. Each deposit
   * counts against the budgets when it is made. Needs the wallet limits (not `false`).
   */
  sessions?: McpSessionsOptions | undefined
  /** Clock (tests). */
  now?: (() => number) | undefined
}

/** The loaded catalog and a factory of MCP servers, one per session. */
export type GatewayMcp = {
  /** The catalog's tools. */
  readonly tools: readonly CatalogTool[]
  /** How many tools a session lists: the catalog's and the server's own (wallet, spend, receipts). */
  readonly toolCount: number
  /** Parts of the catalog that could not be read (listed sellers, inference models). */
  readonly warnings: readonly string[]
  /** A new MCP server (one session: its own session budget; the daily budget is shared). */
  createServer(): Server
  /**
   * Closes the session channels this server opened: each seller captures what was spent, the rest
   * comes back to the wallet and is restored to the budgets. None without `sessions`.
   */
  closeSessions(): Promise<SessionClose[]>
}

/** The label of a spend made by a tool of this server in the wallet's spending record. */
const mcpLabel = 'mcp:'

/** Largest answer body passed on to the model, in characters. */
const maxAnswerChars = 1024 * 1024

/** The server's own tools, beside the catalog's. */
const ownTools = [
  {
    name: 'wallet_address',
    description: 'The Sui address of the wallet that pays for the tools.',
    inputSchema: { type: 'object', properties: {} },
  },
  {
    name: 'wallet_balance',
    description: "The wallet's USDC (what tools are paid with) and SUI (gas) balances.",
    inputSchema: { type: 'object', properties: {} },
  },
  {
    name: 'verify_receipt',
    description:
      "Verify a confidential answer's receipt (its x-receipt-id) step by step: attestation, signature by an attested key, hashes, the gateway's payment binding, the ledger anchor. Free; answers every step and what it does not prove.",
    inputSchema: {
      type: 'object',
      properties: {
        receipt_id: {
          type: 'string',
          description: 'The x-receipt-id of the answer',
          pattern: '^[A-Za-z0-9_-]{1,140}$',
        },
      },
      required: ['receipt_id'],
    },
  },
  {
    name: 'spend_report',
    description:
      'What the paid tools have cost so far: this session, the last 24 hours, per tool and per day, with the budgets.',
    inputSchema: { type: 'object', properties: {} },
  },
] as const

/**
 * Reads the gateway's catalog and returns a factory of MCP servers exposing it.
 *
 * @throws {PaymentError} `invalid_config` when the catalog cannot be read or the network has no USDC.
 * @example
 * ```ts
 * const mcp = await createGatewayMcp({ gateway, signer, ledger, maxPrice: '0.10', sessionBudget: '1' })
 * await mcp.createServer().connect(new StdioServerTransport())
 * ```
 */
export async function createGatewayMcp(options: GatewayMcpOptions): Promise<GatewayMcp> {
  const network = options.network ?? 'sui:mainnet'
  const usdc = usdcTypeOf(network)
  if (usdc === undefined) {
    throw new PaymentError('invalid_config', `No USDC is known on network ${network}.`)
  }
  const fetcher = options.fetch ?? ((request: Request) => globalThis.fetch(request))
  const { tools, warnings } = await loadGatewayTools({
    gateway: options.gateway,
    network,
    fetch: fetcher,
    apiKey: options.apiKey,
    reserved: ownTools.map((tool) => tool.name),
  })
  const sellerFetch = createSellerFetch({ allowPrivateNetwork: options.allowPrivateSellers })
  const maxPrice = options.maxPrice === undefined ? undefined : parseAmount(options.maxPrice)
  const byName = new Map(tools.map((tool) => [tool.name, tool]))
  const ledger =
    typeof options.ledger === 'string' ? createLedger({ url: options.ledger }) : options.ledger
  // One for the server's lifetime: each attested session's report is checked once.
  const receiptVerifier = createInferenceReceiptVerifier({
    inferenceUrl: options.gateway,
    ledger,
    fetch: (input, init) => fetcher(new Request(input, init)),
    allowTestRoot: options.allowTestRoot === true,
  })
  const limits =
    options.limits === false
      ? false
      : options.limits !== undefined && 'reserve' in options.limits
        ? options.limits
        : createWalletLimits(options.limits ?? {})
  // The daily budget continues from the spending record: what this server's tools paid in the
  // last 24 hours, before a restart included.
  const spentBefore =
    limits === false
      ? []
      : (await limits.recent())
          .filter((spend) => spend.label?.startsWith(mcpLabel) === true)
          .map((spend) => ({
            tool: (spend.label as string).slice(mcpLabel.length),
            amount: BigInt(spend.amount),
            at: spend.at,
          }))
  const budget: Budget = createBudget({
    perSession: options.sessionBudget,
    perDay: options.dayBudget,
    now: options.now,
    spent: spentBefore,
  })
  const signer = options.signer
  const address = signer?.toSuiAddress()
  const noWallet = () =>
    new PaymentError(
      'NO_WALLET',
      options.noWalletHint ??
        'No wallet is configured to pay with: create one (tollgate wallet new), fund it with USDC (tollgate wallet fund on the local ledger), and start the MCP server again.',
    )
  if (options.sessions !== undefined && limits === false) {
    throw new PaymentError(
      'invalid_config',
      'Paying through sessions needs the wallet limits: their record keeps each deposit.',
    )
  }
  const gatewayOrigin = new URL(options.gateway).origin
  const sessionPayments =
    options.sessions === undefined || signer === undefined || limits === false
      ? undefined
      : createMcpSessions({
          ...options.sessions,
          signer,
          limits,
          label: (tool) => `${mcpLabel}${tool}`,
          maxPrice,
          fetchOf: (url) => (new URL(url).origin === gatewayOrigin ? fetcher : sellerFetch),
        })
  /** The wallet limits, each spend labelled with the tool that made it (`mcp:<tool>`). */
  const limitsFor = (tool: string): WalletLimits | false =>
    limits === false
      ? false
      : { ...limits, reserve: (spend) => limits.reserve({ ...spend, label: `${mcpLabel}${tool}` }) }

  async function callCatalogTool(
    tool: CatalogTool,
    args: Record<string, unknown>,
    session: SessionBudget,
  ): Promise<ToolResult> {
    if (signer === undefined && tool.source !== 'keyed') return errorResult(noWallet())
    let hold: BudgetReservation | undefined
    const pay = createPayingFetch({
      signer: signer as Signer,
      ledger,
      network,
      maxPrice: options.maxPrice,
      limits: limitsFor(tool.name),
      prefer: options.prefer,
      fetch:
        sessionPayments?.fetchFor(tool, session) ??
        (tool.source === 'seller' ? sellerFetch : fetcher),
      onChallenge: (event) => {
        // What the model was shown is what may be paid: the listed price (and, for a seller, the
        // listed recipient), whoever lists the tool — a gateway's 402 may not ask more either.
        checkListedTerms(tool, event.selected)
        hold = session.reserve(tool.name, event.selected.amount)
      },
    })
    let response: Response
    try {
      response =
        tool.source === 'keyed'
          ? await sendKeyed(tool, args, session, {
              apiKey: options.apiKey ?? '',
              maxPrice,
              fetch: fetcher,
            })
          : tool.method === 'GET'
            ? await pay(tool.url)
            : await pay(tool.url, {
                method: tool.method,
                headers: { 'content-type': 'application/json' },
                body: JSON.stringify({ ...args, ...tool.fixed }),
              })
    } catch (error) {
      // Refused before signing: nothing moved. Anything else after the challenge may have paid.
      if (isRefusal(error)) hold?.release()
      else hold?.settle()
      return errorResult(error)
    }
    const payment = paymentOf(response)
    if (payment === undefined) hold?.release()
    else hold?.settle(payment.digest)
    const voucher = sessionPaymentOf(response)
    const text = (await response.text()).slice(0, maxAnswerChars)
    const body = parseJson(text)
    return {
      isError: !response.ok,
      content: [{ type: 'text', text }],
      structuredContent: {
        status: response.status,
        ...(voucher === undefined ? {} : { payment: voucher }),
        ...(payment === undefined
          ? {}
          : {
              payment: {
                dialect: payment.dialect,
                amount: formatAmount(payment.amount),
                digest: payment.digest,
                payTo: payment.payTo,
              },
            }),
        ...(body === undefined ? {} : { body }),
      },
    }
  }

  async function callOwnTool(
    name: string,
    args: Record<string, unknown>,
    session: SessionBudget,
  ): Promise<ToolResult> {
    switch (name) {
      case 'verify_receipt': {
        const id = args.receipt_id
        if (typeof id !== 'string') {
          throw new PaymentError('invalid_request_body', 'receipt_id: a string is required.')
        }
        const result = await receiptVerifier.verify(id)
        return json(result)
      }
      case 'wallet_address':
        if (address === undefined) return errorResult(noWallet())
        return json({ address, network })
      case 'wallet_balance': {
        if (address === undefined) return errorResult(noWallet())
        const [usdcBalance, sui] = await Promise.all([
          ledger.getBalance(address, usdc as string),
          ledger.getBalance(address, '0x2::sui::SUI'),
        ])
        return json({
          address,
          network,
          usdc: formatAmount(usdcBalance.total),
          sui: (Number(sui.total) / 1e9).toString(),
        })
      }
      default:
        return json(session.report())
    }
  }

  return {
    tools,
    toolCount: tools.length + ownTools.length,
    warnings,
    closeSessions: async () => (await sessionPayments?.close()) ?? [],
    createServer() {
      const session = budget.session()
      const server = new Server(
        // One version for the package, its CLI and this server.
        { name: 'tollgate', version: pkg.version },
        { capabilities: { tools: {} } },
      )
      server.setRequestHandler(ListToolsRequestSchema, async () => ({
        tools: [
          ...tools.map((tool) => ({
            name: tool.name,
            description: tool.description,
            inputSchema: tool.inputSchema as { type: 'object' },
          })),
          ...ownTools,
        ],
      }))
      server.setRequestHandler(CallToolRequestSchema, async (request) => {
        const { name } = request.params
        const args = (request.params.arguments ?? {}) as Record<string, unknown>
        try {
          if (ownTools.some((tool) => tool.name === name)) {
            return (await callOwnTool(name, args, session)) as never
          }
          const tool = byName.get(name)
          if (tool === undefined) {
            return errorResult(
              new PaymentError('invalid_request_body', `No tool named ${name}.`),
            ) as never
          }
          return (await callCatalogTool(tool, args, session)) as never
        } catch (error) {
          return errorResult(error) as never
        }
      })
      return server
    },
  }
}

function json(value: Record<string, unknown>): ToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value }
}

/** A refusal or failure as a tool error: `{ error: { code, message } }`, the code stable. */
function errorResult(error: unknown): ToolResult {
  const code = isPaymentError(error) ? error.code : 'tool_failed'
  const message = messageOf(error)
  return {
    isError: true,
    content: [{ type: 'text', text: `${code}: ${message}` }],
    structuredContent: { error: { code, message } },
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}
