/**
 * Paid MCP tools for sellers: a price on a seller's own MCP tools, in both MCP payment transports in
 * use today, settled by the same engine as the HTTP routes (same replay and refund rules).
 *
 * ```
 * tools/call ─▶ _meta["org.paymentauth/credential"] ─▶ Authorization: Payment …  ┐
 *            ─▶ _meta["x402/payment"]               ─▶ X-PAYMENT …              ├▶ engine.handle(Request for <resourceBase>NAME)
 *            ─▶ neither                              ─▶ (no credential)          ┘
 *   402 unpaid    ─▶ MPP: JSON-RPC error -32042, data.challenges │ x402: result isError + PaymentRequired
 *   402 rejected  ─▶ MPP: -32042 again, fresh challenges + problem │ x402: result isError + PaymentRequired(error)
 *   paid          ─▶ the tool runs ─▶ ok: result + _meta receipt / payment-response
 *                                  ─▶ threw or isError: complete(failed) → refunded once, no receipt
 * ```
 *
 * Specifications followed: MPP's MCP transport (mppx `Mcp`: code -32042, `_meta` keys
 * `org.paymentauth/credential` and `org.paymentauth/receipt`, `error.data = { httpStatus: 402,
 * challenges, problem }`) and x402's MCP transport (coinbase/x402 `specs/transports-v2/mcp.md`:
 * `isError` result with `structuredContent` and `content[0].text` `{"x402/error": …}`,
 * `_meta["x402/payment"]`, `_meta["x402/payment-response"]`). docs/mcp.md says more.
 *
 * @module
 */
import { type CallToolResult, McpError } from '@modelcontextprotocol/sdk/types.js'
import { createSellerPaywall } from '../engine/seller.js'
import type { SellerOptions, SellerPaywall } from '../engine/sellerTypes.js'
import type { PaidDecision, PaymentInfo } from '../engine/types.js'
import { isPaymentError } from '../errors.js'
import { methodsFor } from '../methods/index.js'
import type { PriceInput } from '../money.js'
import {
  type Challenge,
  type Credential,
  decodeReceipt,
  decodeRequest,
  mppHeaders,
  parseChallenges,
  serializeCredential,
} from '../mpp.js'
import type { Dialect } from '../negotiate.js'
import { decodeXPaymentResponse, x402Headers } from '../x402.js'

/** JSON-RPC error code of an MPP payment challenge over MCP (mppx `Mcp.paymentRequiredCode`). */
export const mcpPaymentRequiredCode = -32042

/** The `_meta` keys of both MCP payment transports. */
export const mcpPaymentMeta = {
  /** MPP: the credential object, client → server. */
  mppCredential: 'org.paymentauth/credential',
  /** MPP: the receipt object, server → client. */
  mppReceipt: 'org.paymentauth/receipt',
  /** x402: the payment payload object, client → server. */
  x402Payment: 'x402/payment',
  /** x402: the settlement response object, server → client. */
  x402PaymentResponse: 'x402/payment-response',
} as const

/** A tool result (the SDK's `CallToolResult`). */
export type ToolResult = CallToolResult

/** What a tool handler receives from the MCP SDK as its last argument (only `_meta` is read). */
export type ToolExtra = { _meta?: Record<string, unknown> | undefined; [key: string]: unknown }

/** Options of {@link createPaidMcpTools}: the seller options of every adapter, plus two. */
export type PaidMcpToolsOptions = Omit<SellerOptions, 'routes' | 'caseSensitive' | 'trustProxy'> & {
  /**
   * The transport an unpaid call is answered in: `mpp` (JSON-RPC error -32042) or `x402` (an
   * `isError` result). One answer can be only one of them; a paid call is accepted in either
   * dialect that `offer` allows. Default `mpp`, or `x402` when `offer` is `x402`.
   */
  challenge?: 'mpp' | 'x402' | undefined
  /**
   * The prefix of each tool's resource URL (the URL a payment is bound to): an http(s) URL, as the
   * engine binds challenges to an origin. Default `https://mcp.localhost/tool/`; a seller with a
   * public MCP endpoint sets its own (`https://api.example.com/mcp/tool/`).
   */
  resourceBase?: string | undefined
}

/** Per-tool options of {@link PaidMcpTools.paidTool}. */
export type PaidToolOptions = {
  /** Shown in the challenge (x402 `description`). */
  description?: string | undefined
  /** Largest arguments JSON accepted, in bytes. Default the seller's body limit (1 MiB). */
  maxBodyBytes?: number | undefined
}

/**
 * A tool callback as the MCP SDK calls it: `(args, extra)`, or `(extra)` for a tool without input.
 * Inside a paid tool, `extra.payment` is the settled payment (see {@link PaidToolExtra}).
 */
// biome-ignore lint/suspicious/noExplicitAny: the SDK's callback type depends on the input schema
export type ToolHandler = (...params: any[]) => ToolResult | Promise<ToolResult>

/** What a paid tool's handler finds in its `extra` argument beside the SDK's fields. */
export type PaidToolExtra = { payment: PaymentInfo }

/** The priced-tools helper. */
export type PaidMcpTools = {
  /**
   * Wraps a tool handler: the call is paid before it runs. Register the result as the tool's
   * callback (`server.registerTool(name, config, tools.paidTool(name, '0.01', handler))`). The
   * handler sees the settled payment as `extra.payment`.
   *
   * @throws {TypeError} at once, for a price that is not a positive amount.
   */
  paidTool<H extends ToolHandler>(
    name: string,
    price: PriceInput,
    handler: H,
    options?: PaidToolOptions,
  ): H
  /** The engine, routes and refund worker behind the tools. */
  readonly seller: SellerPaywall
  /** Stops the refund worker. */
  close(): Promise<void>
}

/**
 * Creates the helper that puts prices on a seller's own MCP tools.
 *
 * @example
 * ```ts
 * const tools = createPaidMcpTools({ payTo, ledger, store: createMemoryStore(), secrets: [secret] })
 * server.registerTool('forecast', { inputSchema: { city: z.string() } },
 *   tools.paidTool('forecast', '0.01', async ({ city }) => ({ content: [{ type: 'text', text: await forecast(city) }] })))
 * ```
 */
export function createPaidMcpTools(options: PaidMcpToolsOptions): PaidMcpTools {
  const { challenge: challengeOption, resourceBase: baseOption, ...sellerOptions } = options
  const seller = createSellerPaywall({ ...sellerOptions, publicBaseUrl: undefined })
  const methods = options.methods ?? methodsFor(options.offer)
  const challengeWith: Dialect =
    challengeOption ?? (methods.some((m) => m.dialect === 'mpp') ? 'mpp' : 'x402')
  const resourceBase = baseOption ?? 'https://mcp.localhost/tool/'

  return {
    seller,
    close: () => seller.close(),
    paidTool(name, price, handler, toolOptions = {}) {
      const route = seller.route(price, {
        description: toolOptions.description,
        mimeType: 'application/json',
        maxBodyBytes: toolOptions.maxBodyBytes,
      })
      const url = `${resourceBase}${encodeURIComponent(name)}`
      const paid = async (...params: unknown[]): Promise<ToolResult> => {
        const extra = (params[params.length - 1] ?? {}) as ToolExtra
        const args = params.length > 1 ? params[0] : undefined
        const presented = credentialOf(extra._meta)
        const request = new Request(url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...(presented === undefined
              ? {}
              : { [transports[presented.dialect].header]: presented.value }),
          },
          body: JSON.stringify(args ?? {}),
        })
        const decision = await seller.engine.handle(request, route)
        if (decision.status === 'respond') {
          return refusal(
            decision.plain,
            presented?.dialect ?? challengeWith,
            presented !== undefined,
          )
        }
        const paidExtra = { ...extra, payment: decision.payment }
        return run(decision, () =>
          params.length > 1 ? handler(args, paidExtra) : handler(paidExtra),
        )
      }
      return paid as typeof handler
    },
  }
}

type Presented = { dialect: Dialect; value: string }

/**
 * An MCP payment transport: the `_meta` key its credential comes in and the header the engine reads
 * it from, the refusal of a call in its form, and its receipt key. There is one per dialect, as the
 * MCP specifications define them (a dialect's methods share its transport).
 */
type McpTransport = {
  /** The `_meta` key of the credential, client → server. */
  readonly credentialKey: string
  /** The request header the engine reads the credential from. */
  readonly header: string
  /** The credential as that header's value. */
  toHeader(value: unknown): string
  /** The engine's 402 in this transport's form, or undefined when the 402 does not offer it. */
  refuse(plain: PlainAnswer, body: unknown, paid: boolean): ToolResult | undefined
  /** The receipt of a served call, from the success headers, as `_meta` members. */
  receipt(headers: Readonly<Record<string, string>>): Record<string, unknown> | undefined
}

type PlainAnswer = { status: number; headers: Readonly<Record<string, string>>; body: string }

const transports: Readonly<Record<Dialect, McpTransport>> = {
  mpp: {
    credentialKey: mcpPaymentMeta.mppCredential,
    header: mppHeaders.authorization,
    toHeader: mppHeaderOf,
    refuse(plain, body, paid) {
      const wwwAuthenticate = headerOf(plain.headers, mppHeaders.wwwAuthenticate)
      if (plain.status !== 402 || wwwAuthenticate === undefined) return undefined
      const problem = problemOf(body)
      // A refused credential is answered with -32042 too (fresh challenges, and the problem naming
      // the refusal): the SDK's McpServer passes -32042 through as a JSON-RPC error but turns any
      // other error code (mppx's -32043 included) into a plain tool error.
      throw new McpError(
        mcpPaymentRequiredCode,
        paid ? `Payment refused: ${problem.code}` : 'Payment required',
        { httpStatus: 402, challenges: parseChallenges(wwwAuthenticate), problem },
      )
    },
    receipt(headers) {
      const receipt = headerOf(headers, mppHeaders.paymentReceipt)
      return receipt === undefined
        ? undefined
        : { [mcpPaymentMeta.mppReceipt]: { ...decodeReceipt(receipt) } }
    },
  },
  x402: {
    credentialKey: mcpPaymentMeta.x402Payment,
    header: x402Headers.payment,
    toHeader: x402HeaderOf,
    refuse(plain, body, paid) {
      const isPaymentRequired =
        plain.status === 402 && typeof body === 'object' && body !== null && 'accepts' in body
      if (!isPaymentRequired) return undefined
      const structured = body as Record<string, unknown>
      return {
        isError: true,
        structuredContent: structured,
        content: [
          {
            type: 'text',
            text: JSON.stringify({
              'x402/error': {
                code: 402,
                message: paid ? `Payment refused: ${problemOf(body).code}` : 'Payment required',
                data: structured,
              },
            }),
          },
        ],
      }
    },
    receipt(headers) {
      const response = headerOf(headers, x402Headers.paymentResponse)
      return response === undefined
        ? undefined
        : { [mcpPaymentMeta.x402PaymentResponse]: decodeXPaymentResponse(response) }
    },
  },
}

/** The order credentials are looked for: MPP first (its buyer has already moved the money). */
const lookupOrder: readonly Dialect[] = ['mpp', 'x402']

/** The credential of a call as the engine's header, or `undefined` when none was sent. */
function credentialOf(meta: Record<string, unknown> | undefined): Presented | undefined {
  if (meta === undefined || meta === null || typeof meta !== 'object') return undefined
  for (const dialect of lookupOrder) {
    const value = meta[transports[dialect].credentialKey]
    if (value !== undefined) return { dialect, value: transports[dialect].toHeader(value) }
  }
  return undefined
}

/**
 * Anything that cannot be turned into a header is sent as a header the engine refuses with its own
 * reason (`malformed_credential`, `invalid_encoding`): one place decides what is acceptable.
 */
const unreadable = '!'

/** Headers above this are refused by the engine anyway; nothing larger is serialised. */
const maxCredentialChars = 16 * 1024

function mppHeaderOf(value: unknown): string {
  if (typeof value === 'string') return value.length > maxCredentialChars ? unreadable : value
  try {
    const credential = value as Credential & { challenge: Challenge & { request: unknown } }
    if (typeof credential?.challenge !== 'object' || credential.challenge === null) {
      return `Payment ${unreadable}`
    }
    const request =
      typeof credential.challenge.request === 'string'
        ? decodeRequest(credential.challenge.request, 'malformed_credential')
        : credential.challenge.request
    const header = serializeCredential({
      ...credential,
      challenge: { ...credential.challenge, request },
    })
    return header.length > maxCredentialChars ? `Payment ${unreadable}` : header
  } catch {
    return `Payment ${unreadable}`
  }
}

function x402HeaderOf(value: unknown): string {
  if (typeof value === 'string') return value.length > maxCredentialChars ? unreadable : value
  try {
    const json = JSON.stringify(value)
    if (json === undefined || json.length > maxCredentialChars) return unreadable
    let binary = ''
    for (const byte of new TextEncoder().encode(json)) binary += String.fromCharCode(byte)
    return btoa(binary)
  } catch {
    return unreadable
  }
}

/**
 * The engine's answer (400, 402, 413, 503) in the call's MCP transport. A 402 that does not offer
 * the call's transport is answered in x402's form (a structured tool result any client can read).
 */
function refusal(plain: PlainAnswer, dialect: Dialect, paid: boolean): ToolResult {
  const body = parseJson(plain.body)
  const answered =
    transports[dialect].refuse(plain, body, paid) ?? transports.x402.refuse(plain, body, paid)
  if (answered !== undefined) return answered
  const problem = problemOf(body)
  // 400 (invalid arguments), 413 (too large), 503 (ledger unavailable): nothing was charged.
  return {
    isError: true,
    structuredContent: { error: problem },
    content: [{ type: 'text', text: `${problem.code}: ${problem.detail}` }],
  }
}

/** Runs a paid tool and records how it ended: a failed call is refunded exactly once. */
async function run(decision: PaidDecision, call: () => ToolResult | Promise<ToolResult>) {
  let result: ToolResult
  try {
    result = await call()
  } catch (error) {
    await decision.complete({ error })
    return failedResult(decision.payment, error)
  }
  if (result?.isError === true) {
    await decision.complete({ status: 500 })
    return {
      ...result,
      _meta: { ...result._meta, 'tollgate/refund': refundNote(decision.payment) },
    }
  }
  await decision.complete({ status: 200 })
  return { ...result, _meta: { ...result._meta, ...receiptMeta(decision) } }
}

function failedResult(payment: PaymentInfo, error: unknown): ToolResult {
  const message = isPaymentError(error) ? error.message : 'The tool failed.'
  return {
    isError: true,
    structuredContent: {
      error: { code: 'call_failed', detail: `${message} The payment will be refunded.` },
    },
    content: [{ type: 'text', text: `call_failed: ${message} The payment will be refunded.` }],
    _meta: { 'tollgate/refund': refundNote(payment) },
  }
}

function refundNote(payment: PaymentInfo) {
  return { status: 'refund_due', digest: payment.digest, amount: payment.amount.toString() }
}

/** The receipt of a served call, in its transport's `_meta` key. */
function receiptMeta(decision: PaidDecision): Record<string, unknown> {
  const headers = decision.headersFor(200)
  for (const dialect of lookupOrder) {
    const meta = transports[dialect].receipt(headers)
    if (meta !== undefined) return meta
  }
  return {}
}

function headerOf(headers: Readonly<Record<string, string>>, name: string): string | undefined {
  const lower = name.toLowerCase()
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === lower) return value
  return undefined
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

function problemOf(body: unknown): { code: string; detail: string } {
  const record = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>
  const code = typeof record.code === 'string' ? record.code : 'payment_required'
  const detail =
    typeof record.detail === 'string'
      ? record.detail
      : typeof record.error === 'string'
        ? record.error
        : 'Payment required.'
  return { code, detail }
}
