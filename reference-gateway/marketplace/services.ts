/**
 * `GET /v1/services`: the catalog for programs — the gateway's own paid endpoints first, then the
 * listed seller endpoints (suspended and delisted ones hidden), filtered by tag, network, highest
 * price and seller, paged.
 *
 * @module
 */
import { isValidSuiAddress, normalizeSuiAddress } from '@mysten/sui/utils'
import { SellerText } from 'tollgate'
import { z } from 'zod'
import type { ServicesDocument } from '../discovery/services.js'
import { type CatalogCursor, cursorSchema, encodeCursor } from './cursor.js'
import { tagSchema } from './routes.js'
import type { Listing, MarketplaceStore } from './store.js'

/** One entry of `GET /v1/services`. */
export type ServiceItem = {
  /** `gateway` for the gateway's own endpoints, `seller` for a listed endpoint. */
  source: 'gateway' | 'seller'
  /** The operation id, or the listing id. */
  id: string
  name: string
  summary: string
  method: string
  url: string
  tags: string[]
  network: string
  asset: string
  /** Base units per call. */
  price: string
  payTo: string
  /** Who is paid: the gateway's `payTo`, or the seller's agent address. */
  seller: string
}

/** The query of `GET /v1/services`. */
export const servicesQuerySchema = z
  .object({
    tag: tagSchema.optional(),
    network: z.string().max(64).optional(),
    /** Highest price, base units. */
    maxPrice: z
      .string()
      .regex(/^[0-9]{1,18}$/)
      .transform(BigInt)
      .optional(),
    seller: z
      .string()
      .max(66)
      .refine((a) => isValidSuiAddress(normalizeSuiAddress(a)), 'not a Sui address')
      .transform((a) => normalizeSuiAddress(a))
      .optional(),
    limit: z.coerce.number().int().min(1).max(100).default(20),
    offset: z.coerce.number().int().min(0).max(100_000).default(0),
    /** Where the page starts: the `nextCursor` of the page before (instead of `offset`). */
    cursor: cursorSchema.optional(),
  })
  .strict()
  .refine((q) => q.cursor === undefined || q.offset === 0, {
    message: 'give cursor or offset, not both',
    path: ['offset'],
  })

/** The gateway's own paid endpoints as service items. */
export function ownServiceItems(document: ServicesDocument): ServiceItem[] {
  const seller = normalizeSuiAddress(document.payTo)
  return document.services.flatMap((service) =>
    service.endpoints
      .filter((e) => e.amount !== null)
      .map((e) => ({
        source: 'gateway' as const,
        id: e.operationId,
        name: service.name,
        summary: e.summary,
        method: e.method,
        url: e.url,
        tags: [...new Set([...service.tags, ...e.tags])],
        network: document.network,
        asset: document.asset,
        price: e.amount as string,
        payTo: seller,
        seller,
      })),
  )
}

/** A listed endpoint as an item; what its seller wrote is quoted and labelled as the seller's. */
const listingItem = (l: Listing): ServiceItem => ({
  source: 'seller',
  id: l.id,
  name: SellerText.quote('name', l.name, { max: 120 }),
  summary: l.description === '' ? '' : SellerText.quote('description', l.description),
  method: l.method,
  url: l.url,
  tags: l.tags,
  network: l.network,
  asset: l.asset,
  price: l.price.toString(),
  payTo: l.payTo,
  seller: l.seller,
})

/**
 * One page of the catalog: the gateway's items matching the filters, then the listed endpoints,
 * from `offset` or from `cursor`; `nextCursor` is where the next page starts, when there is one.
 *
 * @example
 * ```ts
 * const first = await searchServices(own, store, servicesQuerySchema.parse({ limit: '20' }))
 * const next = await searchServices(own, store, servicesQuerySchema.parse({ cursor: first.nextCursor }))
 * ```
 */
export async function searchServices(
  own: readonly ServiceItem[],
  store: MarketplaceStore,
  query: z.infer<typeof servicesQuerySchema>,
): Promise<{
  items: ServiceItem[]
  total: number
  /** Present when more listings match than are counted (`total` then counts up to the cap). */
  totalCapped?: true
  limit: number
  offset: number
  /** Where the next page starts (`cursor`); absent on the last page. */
  nextCursor?: string
}> {
  const mine = own.filter(
    (i) =>
      (query.tag === undefined || i.tags.includes(query.tag)) &&
      (query.network === undefined || i.network === query.network) &&
      (query.maxPrice === undefined || BigInt(i.price) <= query.maxPrice) &&
      (query.seller === undefined || i.seller === query.seller),
  )
  // A cursor among the gateway's items is an offset; one after a listing is a keyset position.
  const after =
    query.cursor !== undefined && 'after' in query.cursor ? query.cursor.after : undefined
  const start =
    after !== undefined
      ? mine.length
      : query.cursor !== undefined && 'own' in query.cursor
        ? query.cursor.own
        : query.offset
  const head = mine.slice(start, start + query.limit)
  const { listings, hasMore, total, totalCapped } = await store.searchListings({
    state: 'listed',
    tag: query.tag,
    network: query.network,
    seller: query.seller,
    maxPrice: query.maxPrice,
    after,
    limit: query.limit - head.length,
    offset: after !== undefined ? 0 : Math.max(0, start - mine.length),
  })
  const last = listings.at(-1)
  const next: CatalogCursor | undefined =
    last !== undefined
      ? hasMore
        ? { after: { createdAt: last.createdAt, id: last.id } }
        : undefined
      : head.length > 0 && (start + head.length < mine.length || hasMore)
        ? { own: start + head.length }
        : undefined
  return {
    items: [...head, ...listings.map(listingItem)],
    total: mine.length + total,
    ...(totalCapped ? { totalCapped: true as const } : {}),
    limit: query.limit,
    offset: query.offset,
    ...(next !== undefined ? { nextCursor: encodeCursor(next) } : {}),
  }
}
