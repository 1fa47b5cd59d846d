/**
 * The marketplace's storage: listings, their probes, the nonces of signed mutations and the
 * re-probe lease, over the gateway's relational store (one Kysely query layer for SQLite and
 * PostgreSQL; tables created by the migrations of `db/migrations.ts`).
 *
 * @module
 */
import { randomBytes } from 'node:crypto'
import { type Kysely, type Selectable, SqliteAdapter, sql } from 'kysely'
import { toBigint } from '../db/database.js'
import type { GatewaySchema, ListingState, ListingTable, ProbeTable } from '../db/schema.js'
import { maxQueryWords, searchTextOf, wordsOf } from './searchWords.js'

/** The largest total a search counts (more matches are reported as this many, capped). */
export const maxTotal = 1000

/** A seller listing as the marketplace uses it. */
export type Listing = {
  id: string
  seller: string
  url: string
  method: string
  /** The request body probes send (JSON text). */
  probeBody: string
  name: string
  description: string
  tags: string[]
  network: string
  asset: string
  /** USDC base units per call. */
  price: bigint
  payTo: string
  state: ListingState
  consecutiveFailures: number
  nextProbeAtMs: number
  createdAt: string
  updatedAt: string
  /** JSON Schema of the request body, as the seller submitted it; null when it gave none. */
  inputSchema: Record<string, unknown> | null
}

/** A stored probe. */
export type ProbeRecord = {
  id: string
  listingId: string
  kind: 'submission' | 'reprobe'
  passed: boolean
  failedGate: string | null
  message: string
  probedAt: string
}

/** Why a nonce could not be consumed. */
export type NonceRefusal =
  | 'unknown_nonce'
  | 'nonce_used'
  | 'nonce_expired'
  | 'wrong_signer'
  | 'wrong_body'
  | 'wrong_action'

/** A listing's place in the newest-first order of the catalog. */
export type ListingPosition = Pick<Listing, 'createdAt' | 'id'>

/** What a new listing needs. */
export type NewListing = Omit<
  Listing,
  'id' | 'state' | 'consecutiveFailures' | 'createdAt' | 'updatedAt' | 'inputSchema'
> & { inputSchema?: Record<string, unknown> | null | undefined }

/** The terms of a listing, as read from the seller's challenge. */
export type ListingTerms = Pick<Listing, 'network' | 'asset' | 'price' | 'payTo'>

/** The fields a seller may change on its listing. */
export type ListingUpdate = {
  name?: string | undefined
  description?: string | undefined
  tags?: string[] | undefined
}

/** The marketplace storage. */
export type MarketplaceStore = {
  /**
   * Records a nonce for `address` to sign `action` over the body whose hash is `bodyHash` — unless
   * `maxOutstanding` nonces are already outstanding (unused and unexpired at `nowMs`): then
   * `full`, and nothing is recorded. The count and the insert are two statements, so processes
   * issuing at the same instant may pass the cap by the number of requests in flight.
   */
  issueNonce(nonce: {
    nonce: string
    address: string
    action: string
    bodyHash: string
    expiresAtMs: number
    nowMs: number
    maxOutstanding: number
  }): Promise<{ status: 'issued' } | { status: 'full' }>
  /** Deletes the nonces that expired before `beforeMs` (used or not); resolves with how many. */
  purgeNonces(beforeMs: number): Promise<number>
  /**
   * Marks the nonce used, once: only when it exists, was issued to `address` for `action` over
   * `bodyHash`, is unused and has not expired at `nowMs`. Atomic across processes.
   */
  consumeNonce(use: {
    nonce: string
    address: string
    action: string
    bodyHash: string
    nowMs: number
  }): Promise<{ ok: true } | { ok: false; reason: NonceRefusal }>
  /** Adds a listed endpoint, or re-lists the seller's existing listing of the same method and URL. */
  putListing(listing: NewListing, at: Date): Promise<Listing>
  getListing(id: string): Promise<Listing | undefined>
  listingsOf(seller: string): Promise<Listing[]>
  /**
   * Listings in `state`, newest first, with optional filters. Prices are compared as bigints.
   */
  searchListings(query: {
    state: ListingState
    tag?: string | undefined
    network?: string | undefined
    seller?: string | undefined
    payTo?: string | undefined
    maxPrice?: bigint | undefined
    /**
     * Words that must each begin a word of the name, description, tags or URL (any case; see
     * `searchWords.ts`).
     */
    words?: readonly string[] | undefined
    /** Only listings after this one in the newest-first order (a keyset page). */
    after?: ListingPosition | undefined
    limit: number
    offset: number
  }): Promise<{
    listings: Listing[]
    /** True when more listings follow this page. */
    hasMore: boolean
    /** How many match, counted up to {@link maxTotal}. */
    total: number
    /** True when more than {@link maxTotal} match (`total` is then the cap). */
    totalCapped: boolean
  }>
  /** Changes a listing's descriptive fields; false when it does not exist. */
  updateListing(id: string, update: ListingUpdate, at: Date): Promise<boolean>
  /**
   * Changes a listing's state and failure count (the state machine's moves), and with `terms` the
   * terms read by a passing probe. A delisted listing stays delisted. With `ifNextProbeAtMs`, only
   * while the listing's next probe is still at that time: a re-probe's verdict, written only if no
   * other re-probe (a process that took the lease over from a stalled one) has moved it since.
   */
  setListingState(
    id: string,
    change: {
      state: ListingState
      consecutiveFailures: number
      nextProbeAtMs?: number
      terms?: ListingTerms | undefined
      ifNextProbeAtMs?: number | undefined
    },
    at: Date,
  ): Promise<void>
  /** Listings (`listed` or `suspended`) whose re-probe is due at `nowMs`, earliest first. */
  dueListings(nowMs: number, limit: number): Promise<Listing[]>
  addProbe(probe: Omit<ProbeRecord, 'id'>): Promise<ProbeRecord>
  /** A listing's probes, newest first. */
  probesOf(listingId: string, limit: number): Promise<ProbeRecord[]>
  /**
   * Takes or renews the lease `name` for `holder` until `nowMs + ttlMs`: true when `holder` holds
   * it afterwards (it was free, expired, or already `holder`'s). Atomic across processes.
   */
  acquireLease(name: string, holder: string, nowMs: number, ttlMs: number): Promise<boolean>
}

/** A new random id with a prefix (`lst_…`, `prb_…`). */
export const newId = (prefix: string): string => `${prefix}_${randomBytes(12).toString('hex')}`

/** The columns a listing is read from (not its search text, vector or tag set). */
const listingColumns = [
  'id',
  'seller',
  'url',
  'method',
  'probe_body',
  'name',
  'description',
  'tags',
  'network',
  'asset',
  'price',
  'pay_to',
  'state',
  'consecutive_failures',
  'next_probe_at_ms',
  'created_at',
  'updated_at',
  'input_schema',
] as const

type ListingRow = Pick<Selectable<ListingTable>, (typeof listingColumns)[number]>

const fromListingRow = (r: ListingRow): Listing => ({
  id: r.id,
  seller: r.seller,
  url: r.url,
  method: r.method,
  probeBody: r.probe_body,
  name: r.name,
  description: r.description,
  tags: JSON.parse(r.tags) as string[],
  network: r.network,
  asset: r.asset,
  price: toBigint(r.price),
  payTo: r.pay_to,
  state: r.state,
  consecutiveFailures: Number(r.consecutive_failures),
  nextProbeAtMs: Number(r.next_probe_at_ms),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  inputSchema: r.input_schema ? (JSON.parse(r.input_schema) as Record<string, unknown>) : null,
})

const fromProbeRow = (r: Selectable<ProbeTable>): ProbeRecord => ({
  id: r.id,
  listingId: r.listing_id,
  kind: r.kind,
  passed: Number(r.passed) === 1,
  failedGate: r.failed_gate,
  message: r.message,
  probedAt: r.probed_at,
})

/**
 * The marketplace storage over an open relational store.
 *
 * @example
 * ```ts
 * const { db } = await openDatabase({ kind: 'sqlite', file: ':memory:' })
 * const store = createMarketplaceStore(db)
 * ```
 */
export function createMarketplaceStore(db: Kysely<GatewaySchema>): MarketplaceStore {
  const sqlite = db.getExecutor().adapter instanceof SqliteAdapter
  return {
    async issueNonce(n) {
      const outstanding = await db
        .selectFrom('marketplace_nonces')
        .select((eb) => eb.fn.countAll<string | number | bigint>().as('count'))
        .where('used_at_ms', 'is', null)
        .where('expires_at_ms', '>', BigInt(n.nowMs))
        .executeTakeFirst()
      if (Number(outstanding?.count ?? 0) >= n.maxOutstanding) return { status: 'full' }
      await db
        .insertInto('marketplace_nonces')
        .values({
          nonce: n.nonce,
          address: n.address,
          action: n.action,
          body_hash: n.bodyHash,
          expires_at_ms: BigInt(n.expiresAtMs),
          used_at_ms: null,
        })
        .execute()
      return { status: 'issued' }
    },

    async purgeNonces(beforeMs) {
      const result = await db
        .deleteFrom('marketplace_nonces')
        .where('expires_at_ms', '<', BigInt(beforeMs))
        .executeTakeFirst()
      return Number(result.numDeletedRows)
    },

    async consumeNonce(use) {
      const result = await db
        .updateTable('marketplace_nonces')
        .set({ used_at_ms: BigInt(use.nowMs) })
        .where('nonce', '=', use.nonce)
        .where('address', '=', use.address)
        .where('action', '=', use.action)
        .where('body_hash', '=', use.bodyHash)
        .where('used_at_ms', 'is', null)
        .where('expires_at_ms', '>', BigInt(use.nowMs))
        .executeTakeFirst()
      if (result.numUpdatedRows === 1n) return { ok: true }
      // Not consumed: say why (read after the failed update, so a race only changes the reason).
      const row = await db
        .selectFrom('marketplace_nonces')
        .selectAll()
        .where('nonce', '=', use.nonce)
        .executeTakeFirst()
      const reason: NonceRefusal =
        row === undefined
          ? 'unknown_nonce'
          : row.address !== use.address
            ? 'wrong_signer'
            : row.used_at_ms !== null
              ? 'nonce_used'
              : toBigint(row.expires_at_ms) <= BigInt(use.nowMs)
                ? 'nonce_expired'
                : row.action !== use.action
                  ? 'wrong_action'
                  : 'wrong_body'
      return { ok: false, reason }
    },

    async putListing(l, at) {
      const now = at.toISOString()
      const values = {
        probe_body: l.probeBody,
        name: l.name,
        description: l.description,
        tags: JSON.stringify(l.tags),
        search_text: searchTextOf(l),
        network: l.network,
        asset: l.asset,
        price: l.price,
        pay_to: l.payTo,
        state: 'listed' as const,
        consecutive_failures: 0,
        next_probe_at_ms: BigInt(l.nextProbeAtMs),
        input_schema: l.inputSchema ? JSON.stringify(l.inputSchema) : null,
        updated_at: now,
      }
      await db
        .insertInto('marketplace_listings')
        .values({
          id: newId('lst'),
          seller: l.seller,
          url: l.url,
          method: l.method,
          created_at: now,
          ...values,
        })
        .onConflict((oc) => oc.columns(['seller', 'method', 'url']).doUpdateSet(values))
        .execute()
      const row = await db
        .selectFrom('marketplace_listings')
        .selectAll()
        .where('seller', '=', l.seller)
        .where('method', '=', l.method)
        .where('url', '=', l.url)
        .executeTakeFirstOrThrow()
      return fromListingRow(row)
    },

    async getListing(id) {
      const row = await db
        .selectFrom('marketplace_listings')
        .selectAll()
        .where('id', '=', id)
        .executeTakeFirst()
      return row && fromListingRow(row)
    },

    async listingsOf(seller) {
      const rows = await db
        .selectFrom('marketplace_listings')
        .selectAll()
        .where('seller', '=', seller)
        .orderBy('created_at', 'desc')
        .orderBy('id')
        .execute()
      return rows.map(fromListingRow)
    },

    async searchListings(q) {
      const conditions = [sql`state = ${q.state}`]
      if (q.network !== undefined) conditions.push(sql`network = ${q.network}`)
      if (q.seller !== undefined) conditions.push(sql`seller = ${q.seller}`)
      if (q.maxPrice !== undefined) conditions.push(sql`price <= ${q.maxPrice}`)
      if (q.tag !== undefined) {
        // One whole element of the tags: PostgreSQL through the GIN index of `tag_set`; SQLite over
        // the JSON text, where the quoted word (tags are [a-z0-9-] words) matches one element.
        conditions.push(
          sqlite
            ? sql`tags LIKE ${`%${JSON.stringify(q.tag)}%`}`
            : sql`tag_set @> ${JSON.stringify([q.tag])}::jsonb`,
        )
      }
      if (q.payTo !== undefined) conditions.push(sql`pay_to = ${q.payTo}`)
      // Each word begins a word of the listing (searchWords.ts), through the store's text index.
      const words = (q.words ?? []).flatMap(wordsOf).slice(0, maxQueryWords)
      const filters = sql.join(conditions, sql` AND `)
      let matching = filters
      // The matches up to the cap, found from the most selective index.
      let hits = sql`SELECT id, created_at FROM marketplace_listings WHERE ${filters}`
      if (words.length > 0 && sqlite) {
        const match = words.map((w) => `"${w}"*`).join(' AND ')
        matching = sql`${filters} AND id IN (SELECT id FROM marketplace_listings_fts WHERE marketplace_listings_fts MATCH ${match})`
        // From the text index to the listings (CROSS JOIN keeps that order): SQLite would rather
        // walk the newest-first index and look every row up in the matches.
        hits = sql`SELECT l.id, l.created_at FROM marketplace_listings_fts f CROSS JOIN marketplace_listings l ON l.id = f.id WHERE f.marketplace_listings_fts MATCH ${match} AND ${filters}`
      } else if (words.length > 0) {
        matching = sql`${filters} AND search_vector @@ to_tsquery('simple', ${words.map((w) => `${w}:*`).join(' & ')})`
        hits = sql`SELECT id, created_at FROM marketplace_listings WHERE ${matching}`
      }
      // A keyset page: after the given listing in the newest-first order.
      const after =
        q.after === undefined
          ? sql``
          : sql`AND (created_at, id) < (${q.after.createdAt}, ${q.after.id})`
      // One statement (one round trip): the matches counted up to the cap, and the page. Up to the
      // cap, the matches were all found through the filters' best index and the page is sorted from
      // them; past it they are dense (over a thousand) and the page walks the newest-first index
      // `(state, created_at, id)`, which soon meets the page's rows. The one extra row says whether
      // another page follows.
      // A page past the last match is one row: the count, and nulls.
      const { rows } = await sql<
        { matched: number | string | bigint } & (ListingRow | { id: null })
      >`WITH hits AS (
  ${hits} LIMIT ${maxTotal + 1}
), counted AS (
  SELECT count(*) AS matched FROM hits
), sparse AS (
  SELECT id, created_at FROM hits WHERE (SELECT matched FROM counted) <= ${maxTotal} ${after}
  ORDER BY created_at DESC, id DESC LIMIT ${q.limit + 1} OFFSET ${q.offset}
), dense AS (
  SELECT id, created_at FROM marketplace_listings
  WHERE (SELECT matched FROM counted) > ${maxTotal} AND ${matching} ${after}
  ORDER BY created_at DESC, id DESC LIMIT ${q.limit + 1} OFFSET ${q.offset}
), page AS (
  SELECT id FROM sparse UNION ALL SELECT id FROM dense
)
SELECT counted.matched, ${sql.join(listingColumns.map((c) => sql.ref(`l.${c}`)))}
FROM counted LEFT JOIN page ON 1 = 1 LEFT JOIN marketplace_listings l ON l.id = page.id
ORDER BY l.created_at DESC, l.id DESC`.execute(db)
      const counted = Number(rows[0]?.matched ?? 0)
      const found = rows
        .filter((r): r is ListingRow & typeof r => r.id !== null)
        .map(fromListingRow)
      return {
        listings: found.slice(0, q.limit),
        hasMore: found.length > q.limit,
        total: Math.min(counted, maxTotal),
        totalCapped: counted > maxTotal,
      }
    },

    async updateListing(id, update, at) {
      return db.transaction().execute(async (tx) => {
        const row = await tx
          .selectFrom('marketplace_listings')
          .select(['name', 'description', 'tags', 'url'])
          .where('id', '=', id)
          .executeTakeFirst()
        if (row === undefined) return false
        const name = update.name ?? row.name
        const description = update.description ?? row.description
        const tags = update.tags ?? (JSON.parse(row.tags) as string[])
        const result = await tx
          .updateTable('marketplace_listings')
          .set({
            name,
            description,
            tags: JSON.stringify(tags),
            search_text: searchTextOf({ name, description, tags, url: row.url }),
            updated_at: at.toISOString(),
          })
          .where('id', '=', id)
          .executeTakeFirst()
        return result.numUpdatedRows === 1n
      })
    },

    async setListingState(id, change, at) {
      await db
        .updateTable('marketplace_listings')
        .set({
          state: change.state,
          consecutive_failures: change.consecutiveFailures,
          ...(change.nextProbeAtMs !== undefined
            ? { next_probe_at_ms: BigInt(change.nextProbeAtMs) }
            : {}),
          ...(change.terms !== undefined
            ? {
                network: change.terms.network,
                asset: change.terms.asset,
                price: change.terms.price,
                pay_to: change.terms.payTo,
              }
            : {}),
          updated_at: at.toISOString(),
        })
        .where('id', '=', id)
        // Only the seller brings a delisted endpoint back (a new submission), never a probe that
        // was under way when it delisted.
        .$if(change.state !== 'delisted', (q) => q.where('state', '!=', 'delisted'))
        .$if(change.ifNextProbeAtMs !== undefined, (q) =>
          q.where('next_probe_at_ms', '=', BigInt(change.ifNextProbeAtMs ?? 0)),
        )
        .execute()
    },

    async dueListings(nowMs, limit) {
      const rows = await db
        .selectFrom('marketplace_listings')
        .selectAll()
        .where('state', 'in', ['listed', 'suspended'])
        .where('next_probe_at_ms', '<=', BigInt(nowMs))
        .orderBy('next_probe_at_ms')
        .orderBy('id')
        .limit(limit)
        .execute()
      return rows.map(fromListingRow)
    },

    async addProbe(p) {
      const record = { ...p, id: newId('prb') }
      await db
        .insertInto('marketplace_probes')
        .values({
          id: record.id,
          listing_id: p.listingId,
          kind: p.kind,
          passed: p.passed ? 1 : 0,
          failed_gate: p.failedGate,
          message: p.message,
          probed_at: p.probedAt,
        })
        .execute()
      return record
    },

    async probesOf(listingId, limit) {
      const rows = await db
        .selectFrom('marketplace_probes')
        .selectAll()
        .where('listing_id', '=', listingId)
        .orderBy('probed_at', 'desc')
        .orderBy('id', 'desc')
        .limit(limit)
        .execute()
      return rows.map(fromProbeRow)
    },

    async acquireLease(name, holder, nowMs, ttlMs) {
      const until = BigInt(nowMs + ttlMs)
      // One statement: insert, or take over only an expired lease or one's own.
      const result = await db
        .insertInto('marketplace_leases')
        .values({ name, holder, expires_at_ms: until })
        .onConflict((oc) =>
          oc
            .column('name')
            .doUpdateSet({ holder, expires_at_ms: until })
            .where((eb) =>
              eb.or([
                eb('marketplace_leases.expires_at_ms', '<=', BigInt(nowMs)),
                eb('marketplace_leases.holder', '=', holder),
              ]),
            ),
        )
        .executeTakeFirst()
      return (result.numInsertedOrUpdatedRows ?? 0n) > 0n
    },
  }
}
