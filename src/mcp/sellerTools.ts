/**
 * The listed sellers of a gateway's marketplace as MCP tools. They are read from the gateway's
 * discovery, `/discovery/resources` (the x402 Bazaar shape: each item's payment requirement, its
 * request-body JSON Schema and who sells it), or, when that cannot be read, `/v1/services` (no
 * schema: any JSON object). One tool per listed endpoint, calling the SELLER's URL directly and
 * paying the seller, not the gateway.
 *
 * Everything here is untrusted (a listing is written by its seller): each item is parsed on its
 * own with size limits (a bad one is skipped, not the catalog), a URL must be `http(s)` without
 * credentials, and the calls go through {@link createSellerFetch}: every address the seller's name
 * resolves to is judged (no loopback, private or metadata address unless allowed), the connection
 * pinned to it, no redirect followed, the answer size and time capped.
 *
 * @module
 */
import { normalizeSuiAddress } from '@mysten/sui/utils'
import { z } from 'zod'
import { PaymentError } from '../errors.js'
import { isNullBodyStatus } from '../internal/nullBody.js'
import { formatAmount } from '../money.js'
import { safeFetch } from '../node/safeFetch.js'
import * as SellerText from '../sellerText.js'
import { type CatalogTool, readDocument, toolName } from './catalogTools.js'

/** Most listed endpoints read (the pages are read until this many resources were seen). */
const maxResources = 2000
/** Discovery page size (the gateway's maximum). */
const pageSize = 100
/** Largest request-body schema kept, in characters of JSON; a larger one becomes "any object". */
const maxSchemaChars = 64 * 1024
/** Longest seller description kept in a tool's description. */
const maxDescriptionChars = 600

const text = (max: number) => z.string().max(max)
const units = z.string().regex(/^[0-9]{1,18}$/)
const methodSchema = z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE'])

const resourceSchema = z.looseObject({
  resource: text(2048),
  accepts: z
    .array(z.looseObject({ maxAmountRequired: units, network: text(64), payTo: text(128) }))
    .min(1)
    .max(16),
  metadata: z.looseObject({
    source: text(16),
    id: text(128),
    name: text(256),
    description: text(4096).optional(),
    method: methodSchema,
    seller: text(128),
    inputSchema: z.record(z.string(), z.unknown()).optional(),
  }),
})

const pageSchema = z.looseObject({
  items: z.array(z.unknown()).max(pageSize),
  pagination: z.looseObject({ total: z.int().min(0) }),
})

const serviceSchema = z.looseObject({
  source: text(16),
  id: text(128),
  name: text(256),
  summary: text(4096).optional(),
  method: methodSchema,
  url: text(2048),
  network: text(64),
  price: units,
  payTo: text(128),
  seller: text(128),
})

const servicesPageSchema = z.looseObject({
  items: z.array(z.unknown()).max(pageSize),
  total: z.int().min(0),
})

/** One listed endpoint, as read from either document. */
export type SellerEndpoint = {
  /** The listing id. */
  id: string
  name: string
  description: string
  method: z.infer<typeof methodSchema>
  url: string
  network: string
  /** Base units per call. */
  price: bigint
  /** Who the listing is paid to. */
  payTo: string
  /** The seller's agent address. */
  seller: string
  inputSchema: Record<string, unknown> | undefined
}

/** An `http(s)` URL without credentials, or undefined. */
function sellerUrl(value: string): string | undefined {
  try {
    const url = new URL(value)
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined
    if (url.username !== '' || url.password !== '') return undefined
    return url.href
  } catch {
    return undefined
  }
}

/**
 * The listed endpoint of one `/discovery/resources` item; undefined for a gateway item, or one not
 * in the shape (too long, a bad amount or URL).
 *
 * @example
 * ```ts
 * const endpoints = page.items.map(sellerOfResource).filter((e) => e !== undefined)
 * ```
 */
export function sellerOfResource(item: unknown): SellerEndpoint | undefined {
  const parsed = resourceSchema.safeParse(item)
  if (!parsed.success || parsed.data.metadata.source !== 'seller') return undefined
  const { metadata, accepts } = parsed.data
  const offer = accepts[0] as (typeof accepts)[number]
  const url = sellerUrl(parsed.data.resource)
  if (url === undefined) return undefined
  return {
    id: metadata.id,
    name: metadata.name,
    description: metadata.description ?? '',
    method: metadata.method,
    url,
    network: offer.network,
    price: BigInt(offer.maxAmountRequired),
    payTo: offer.payTo,
    seller: metadata.seller,
    inputSchema: metadata.inputSchema,
  }
}

/**
 * The listed endpoint of one `/v1/services` item (no input schema); undefined for a gateway item,
 * or one not in the shape.
 *
 * @example
 * ```ts
 * const endpoints = page.items.map(sellerOfService).filter((e) => e !== undefined)
 * ```
 */
export function sellerOfService(item: unknown): SellerEndpoint | undefined {
  const parsed = serviceSchema.safeParse(item)
  if (!parsed.success || parsed.data.source !== 'seller') return undefined
  const url = sellerUrl(parsed.data.url)
  if (url === undefined) return undefined
  return {
    id: parsed.data.id,
    name: parsed.data.name,
    description: parsed.data.summary ?? '',
    method: parsed.data.method,
    url,
    network: parsed.data.network,
    price: BigInt(parsed.data.price),
    payTo: parsed.data.payTo,
    seller: parsed.data.seller,
    inputSchema: undefined,
  }
}

/**
 * A listed endpoint as a tool named `seller-<name>-<end of the listing id>`: the seller, its host
 * and the price in its description; the listing's request schema (at most 64 KiB) as input.
 * Whatever the seller wrote — and whatever the gateway says it wrote: it is not trusted either — is
 * shown as the seller's: its name and description one line each, capped, quoted and labelled
 * (`SellerText.quote`), every `title` and `description` in the schema the same way
 * (`SellerText.schema`).
 *
 * @example
 * ```ts
 * sellerTool(endpoint).name // 'seller-answer-oracle-3f2a9c01'
 * ```
 */
export function sellerTool(endpoint: SellerEndpoint): CatalogTool {
  const name = SellerText.unquote(endpoint.name)
  const slug = name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')
  const about = SellerText.oneLine(SellerText.unquote(endpoint.description), maxDescriptionChars)
  const title = SellerText.oneLine(name, 120)
  const schema = endpoint.inputSchema
  const kept =
    schema !== undefined &&
    endpoint.method !== 'GET' &&
    JSON.stringify(schema).length <= maxSchemaChars
      ? { ...SellerText.schema(schema), type: 'object' }
      : { type: 'object', properties: {} }
  const said =
    about === '' || about === title
      ? SellerText.quote('name', title, { max: 120 })
      : `${SellerText.quote('name', title, { max: 120 })}, ${SellerText.quote('description', about, { max: maxDescriptionChars })}`
  return {
    name: toolName(`seller-${slug.slice(0, 40)}-${endpoint.id.slice(-8)}`),
    description:
      `${said}. ` +
      `Listed seller ${endpoint.seller} (${new URL(endpoint.url).host}), not the gateway. ` +
      `Price: ${formatAmount(endpoint.price)} USDC per call, paid from your wallet to the seller.`,
    inputSchema: endpoint.method === 'GET' ? { type: 'object', properties: {} } : kept,
    method: endpoint.method,
    url: endpoint.url,
    price: endpoint.price,
    payTo: endpoint.payTo,
    source: 'seller',
  }
}

/**
 * Refuses a listed seller's 402 that asks more than its listing says, or asks to pay someone else
 * (what the model was shown is what may be paid): before anything is signed.
 *
 * @throws {PaymentError} `PRICE_ABOVE_MAX` or `NO_PAYABLE_REQUIREMENT`.
 * @example
 * ```ts
 * onChallenge: (event) => checkListedTerms(tool, event.selected)
 * ```
 */
export function checkListedTerms(
  tool: CatalogTool,
  offer: { amount: bigint; payTo: string },
): void {
  if (tool.price !== null && offer.amount > tool.price) {
    throw new PaymentError(
      'PRICE_ABOVE_MAX',
      `The seller asks ${formatAmount(offer.amount)} USDC, more than the ${formatAmount(tool.price)} USDC of its listing.`,
      { details: { amount: offer.amount.toString(), listed: tool.price.toString() } },
    )
  }
  if (
    tool.payTo !== undefined &&
    normalizeSuiAddress(offer.payTo) !== normalizeSuiAddress(tool.payTo)
  ) {
    throw new PaymentError(
      'NO_PAYABLE_REQUIREMENT',
      `The seller asks to pay ${offer.payTo}, not ${tool.payTo} as its listing says.`,
      { details: { payTo: offer.payTo, listed: tool.payTo } },
    )
  }
}

/** A `fetch` over Web `Request` and `Response`: how the tools reach the gateway and sellers. */
export type Fetcher = (request: Request) => Promise<Response>

/** Reads every page of a paged document; `read` answers a page's items and the total. */
async function readPages(
  base: string,
  path: (offset: number) => string,
  read: (document: unknown) => { items: unknown[]; total: number },
  fetcher: Fetcher,
): Promise<unknown[]> {
  const all: unknown[] = []
  for (let offset = 0; offset < maxResources; ) {
    const { items, total } = read(await readDocument(base, path(offset), fetcher))
    all.push(...items)
    offset += items.length
    if (items.length === 0 || offset >= total) break
  }
  return all
}

/** The result of {@link loadSellerTools}: the tools, and why some source could not be read. */
export type SellerTools = { tools: CatalogTool[]; warnings: string[] }

/**
 * Reads the listed seller endpoints of a gateway as tools: `/discovery/resources`, else
 * `/v1/services`. Only endpoints paid on `network` are kept. Never throws: a gateway without a
 * marketplace has no seller tools (and a warning says why).
 *
 * @example
 * ```ts
 * const { tools } = await loadSellerTools('http://127.0.0.1:4020', 'sui:mainnet', fetch)
 * ```
 */
export async function loadSellerTools(
  gateway: string,
  network: string,
  fetcher: Fetcher,
): Promise<SellerTools> {
  const base = gateway.replace(/\/+$/, '')
  const warnings: string[] = []
  const sources = [
    {
      path: '/discovery/resources',
      page: (offset: number) => `/discovery/resources?limit=${pageSize}&offset=${offset}`,
      read: (document: unknown) => {
        const page = pageSchema.parse(document)
        return { items: page.items, total: page.pagination.total }
      },
      endpoint: sellerOfResource,
    },
    {
      path: '/v1/services',
      page: (offset: number) => `/v1/services?limit=${pageSize}&offset=${offset}`,
      read: (document: unknown) => servicesPageSchema.parse(document),
      endpoint: sellerOfService,
    },
  ]
  for (const source of sources) {
    try {
      const items = await readPages(base, source.page, source.read, fetcher)
      const endpoints = items
        .map(source.endpoint)
        .filter((e): e is SellerEndpoint => e !== undefined && e.network === network)
      return { tools: endpoints.map(sellerTool), warnings }
    } catch (error) {
      warnings.push(
        `${source.path}: ${error instanceof Error ? error.message.slice(0, 200) : 'unreadable'}`,
      )
    }
  }
  return { tools: [], warnings: [`No listed sellers read from ${base} (${warnings.join('; ')}).`] }
}

/** Options of {@link createSellerFetch}. */
export type SellerFetchOptions = {
  /**
   * Let seller URLs reach loopback and private addresses. Default `false`. Security: with `true` a
   * listing can make this server call anything this host can reach; only for the local stack.
   */
  allowPrivateNetwork?: boolean | undefined
  /** Time for one request, its answer included. Default 60 000 ms. */
  timeoutMs?: number | undefined
  /** Largest answer read. Default 4 MiB. */
  maxBodyBytes?: number | undefined
}

/**
 * The `fetch` the buyer client calls sellers with: the SSRF-safe `safeFetch` (every resolved
 * address judged, the connection pinned to it, no redirect followed, size and time capped).
 *
 * @throws {PaymentError} `unreachable`, `bad_url`, `timeout`, `too_large` or `aborted`.
 * @example
 * ```ts
 * const pay = createPayingFetch({ signer, fetch: createSellerFetch() })
 * ```
 */
export function createSellerFetch(options: SellerFetchOptions = {}): Fetcher {
  return async (request) => {
    const headers: Record<string, string> = {}
    request.headers.forEach((value, name) => {
      headers[name] = value
    })
    const body =
      request.method === 'GET' || request.method === 'HEAD'
        ? undefined
        : new Uint8Array(await request.arrayBuffer())
    const result = await safeFetch(request.url, {
      method: request.method,
      headers,
      body,
      allowPrivateNetwork: options.allowPrivateNetwork ?? false,
      maxRedirects: 0,
      timeoutMs: options.timeoutMs ?? 60_000,
      maxBodyBytes: options.maxBodyBytes ?? 4 * 1024 * 1024,
      signal: request.signal,
    })
    if (result.status === 'failed') {
      throw new PaymentError(
        result.code,
        `The seller at ${new URL(request.url).host}: ${result.message}`,
      )
    }
    const { status, headers: answered, body: bytes } = result.response
    return new Response(isNullBodyStatus(status) ? null : bytes, {
      status,
      headers: answered,
    })
  }
}
