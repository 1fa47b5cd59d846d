/**
 * Discovery for agents in the x402 Bazaar shape, over the gateway's own paid endpoints and the
 * listed seller endpoints (suspended and delisted ones hidden):
 *
 * ```
 * GET /discovery/resources?type=&payTo=&scheme=&network=&limit=&offset=   ─▶ { x402Version, items, pagination }
 * GET /discovery/search?query=…&(same filters)                            ─▶ { x402Version, query, items, pagination }
 * ```
 *
 * Each item is `{ resource, type: 'http', x402Version: 1, accepts: [x402 v1 requirement], lastUpdated,
 * metadata }`; the request body's JSON Schema is in `accepts[0].outputSchema.input.schema` and in
 * `metadata.inputSchema`. The gateway's items come first, then the listings, newest first.
 *
 * @module
 */
import { isValidSuiAddress, normalizeSuiAddress } from '@mysten/sui/utils'
import { formatAmount, SellerText } from 'tollgate'
import { z } from 'zod'
import type { Catalog } from '../catalog/catalog.js'
import { matchesWords, maxQueryWords, wordsOf } from '../marketplace/searchWords.js'
import type { Listing, MarketplaceStore } from '../marketplace/store.js'
import { x402Manifest } from './manifest.js'
import type { DiscoveryOptions } from './options.js'
import { servicesDocument } from './services.js'

/** An x402 v1 payment requirement with the Bazaar's description of the request. */
export type BazaarRequirement = {
  scheme: 'exact'
  network: string
  maxAmountRequired: string
  resource: string
  description: string
  mimeType: 'application/json'
  payTo: string
  maxTimeoutSeconds: number
  asset: string
  outputSchema: {
    input: {
      type: 'http'
      method: string
      bodyType: 'json'
      discoverable: true
      /** JSON Schema of the request body. */
      schema: Record<string, unknown>
    }
    output: null
  }
}

/** One discoverable resource. */
export type BazaarResource = {
  resource: string
  type: 'http'
  x402Version: 1
  accepts: BazaarRequirement[]
  /** ISO 8601. */
  lastUpdated: string
  metadata: {
    /** `gateway` for the gateway's own endpoints, `seller` for a listed endpoint. */
    source: 'gateway' | 'seller'
    /** The operation id, or the listing id. */
    id: string
    name: string
    description: string
    tags: string[]
    method: string
    /** USDC decimal (`0.020000`). */
    price: string
    /** Who is paid: the gateway's address, or the seller's agent address. */
    seller: string
    inputSchema: Record<string, unknown>
    /** An example body (the gateway's example, or the body the listing's probes send). */
    example: unknown
  }
}

/** A page of resources. */
export type BazaarPage = {
  x402Version: 1
  items: BazaarResource[]
  pagination: { limit: number; offset: number; total: number }
}

const optionalAddress = z
  .string()
  .max(66)
  .refine((a) => isValidSuiAddress(normalizeSuiAddress(a)), 'not a Sui address')
  .transform((a) => normalizeSuiAddress(a))
  .optional()

const filters = {
  /** Only `http` resources exist here. */
  type: z.string().max(32).optional(),
  payTo: optionalAddress,
  /** Only `exact` is offered. */
  scheme: z.string().max(32).optional(),
  network: z.string().max(64).optional(),
  limit: z.coerce.number().int().min(1).max(100).default(20),
  offset: z.coerce.number().int().min(0).max(100_000).default(0),
}

/** The query of `GET /discovery/resources`. */
export const resourcesQuerySchema = z.object(filters).strict()

/**
 * The query of `GET /discovery/search`: words that must each begin a word of a resource's name,
 * description, tags or URL (any case; `searchWords.ts`), and the filters.
 */
export const searchQuerySchema = z
  .object({
    ...filters,
    query: z
      .string()
      .max(200)
      .transform((q) => wordsOf(q).slice(0, maxQueryWords))
      .refine((words) => words.length > 0, { message: 'the query has no words' }),
  })
  .strict()

type Filters = z.infer<typeof resourcesQuerySchema> & { query?: string[] | undefined }

/** The request body schema when a listing has none: any JSON object. */
const anyObject = { type: 'object' }

/**
 * The gateway's own paid endpoints as resources (computed once: the catalog does not change).
 *
 * @example
 * ```ts
 * const own = ownResources(catalog, discovery, new Date().toISOString())
 * ```
 */
export function ownResources(
  catalog: Catalog,
  options: DiscoveryOptions,
  lastUpdated: string,
): BazaarResource[] {
  const manifest = x402Manifest(catalog, options)
  const endpoints = new Map(
    servicesDocument(catalog, options).services.flatMap((s) =>
      s.endpoints.map((e) => [e.url, { service: s, endpoint: e }] as const),
    ),
  )
  const seller = normalizeSuiAddress(options.payTo)
  return manifest.resources.map((r) => {
    const found = endpoints.get(r.resource)
    const schema = found?.endpoint.inputSchema ?? anyObject
    return {
      resource: r.resource,
      type: 'http',
      x402Version: 1,
      accepts: r.accepts.map((a) => ({
        ...a,
        outputSchema: {
          input: { type: 'http', method: r.method, bodyType: 'json', discoverable: true, schema },
          output: null,
        },
      })),
      lastUpdated,
      metadata: {
        source: 'gateway',
        id: found?.endpoint.operationId ?? r.resource,
        name: found?.service.name ?? r.description,
        description: r.description,
        tags: [...new Set([...(found?.service.tags ?? []), ...r.tags])],
        method: r.method,
        price: r.price,
        seller,
        inputSchema: schema,
        example: found?.endpoint.example ?? {},
      },
    }
  })
}

/**
 * A listing's probe body as one compact JSON line (a seller's pretty-printed body has new lines),
 * or the text as it is when it is not JSON.
 */
export function compactBody(probeBody: string): string {
  try {
    return JSON.stringify(JSON.parse(probeBody))
  } catch {
    return probeBody
  }
}

/** The description a listing is shown with: its description, else its name (quoted, labelled). */
export const listingDescription = (l: Listing): string =>
  l.description === ''
    ? SellerText.quote('name', l.name, { max: 120 })
    : SellerText.quote('description', l.description)

/**
 * A listed endpoint as a resource. What its seller wrote is shown as the seller's: the name and
 * description quoted and labelled (`SellerText.quote`), the request schema with every `title` and
 * `description` quoted the same way (`SellerText.schema`), the example body as JSON only when every
 * string in it is one short line (else quoted and labelled as text).
 */
export function listingResource(l: Listing): BazaarResource {
  const schema = l.inputSchema == null ? anyObject : SellerText.schema(l.inputSchema)
  let example: unknown = {}
  try {
    const body: unknown = JSON.parse(l.probeBody)
    example = SellerText.isPlain(body)
      ? body
      : SellerText.quote('example body', compactBody(l.probeBody))
  } catch {
    // Submissions are checked to be JSON; an old row that is not shows an empty example.
  }
  const description = listingDescription(l)
  return {
    resource: l.url,
    type: 'http',
    x402Version: 1,
    accepts: [
      {
        scheme: 'exact',
        network: l.network,
        maxAmountRequired: l.price.toString(),
        resource: l.url,
        description,
        mimeType: 'application/json',
        payTo: l.payTo,
        maxTimeoutSeconds: 60,
        asset: l.asset,
        outputSchema: {
          input: { type: 'http', method: l.method, bodyType: 'json', discoverable: true, schema },
          output: null,
        },
      },
    ],
    lastUpdated: l.updatedAt,
    metadata: {
      source: 'seller',
      id: l.id,
      name: SellerText.quote('name', l.name, { max: 120 }),
      description: l.description === '' ? '' : SellerText.quote('description', l.description),
      tags: l.tags,
      method: l.method,
      price: formatAmount(l.price),
      seller: l.seller,
      inputSchema: schema,
      example,
    },
  }
}

const matches = (r: BazaarResource, q: Filters): boolean => {
  const offer = r.accepts[0]
  if (offer === undefined) return false
  if (q.network !== undefined && offer.network !== q.network) return false
  if (q.payTo !== undefined && normalizeSuiAddress(offer.payTo) !== q.payTo) return false
  if (q.query === undefined) return true
  const words = [r.metadata.name, r.metadata.description, ...r.metadata.tags, r.resource].flatMap(
    wordsOf,
  )
  return matchesWords(words, q.query)
}

/**
 * One page of resources: the gateway's matching the filters, then the listed endpoints.
 *
 * @example
 * ```ts
 * const page = await discoverResources(own, store, resourcesQuerySchema.parse({ network: 'sui:mainnet' }))
 * ```
 */
export async function discoverResources(
  own: readonly BazaarResource[],
  store: MarketplaceStore,
  query: Filters,
): Promise<BazaarPage> {
  const page = { limit: query.limit, offset: query.offset }
  // Everything here is an HTTP resource paid with the `exact` scheme.
  if (
    (query.type !== undefined && query.type !== 'http') ||
    (query.scheme !== undefined && query.scheme !== 'exact')
  ) {
    return { x402Version: 1, items: [], pagination: { ...page, total: 0 } }
  }
  const mine = own.filter((r) => matches(r, query))
  const head = mine.slice(query.offset, query.offset + query.limit)
  const { listings, total, totalCapped } = await store.searchListings({
    state: 'listed',
    network: query.network,
    payTo: query.payTo,
    words: query.query,
    limit: query.limit - head.length,
    offset: Math.max(0, query.offset - mine.length),
  })
  return {
    x402Version: 1,
    items: [...head, ...listings.map(listingResource)],
    pagination: {
      ...page,
      total: mine.length + total,
      ...(totalCapped ? { totalCapped: true as const } : {}),
    },
  }
}
