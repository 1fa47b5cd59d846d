/**
 * Reviews of paid calls, mounted at `/v1/reviews`:
 *
 * ```
 * GET  /v1/reviews?seller=<address>&limit=&offset=                         ─▶ 200 { seller, rating: { average, count }, reviews, total, limit, offset }
 * POST /v1/reviews {address, nonce, signature, body: {seller, purchase, rating, text}}  ─▶ 201 review | 401 {reason} | 403 {reason}
 * ```
 *
 * A review is signed by the buyer like any catalog mutation (`POST /v1/agent/endpoint/prepare` with
 * `action: "review"`), names the purchase by its payment digest, and is judged by the one set of
 * review rules (`reviews/rules.ts`): only the buyer, never a self-purchase, never a refunded
 * purchase, only a settled and served one, one review per purchase. Purchases are looked up where
 * the gateway can see that they were served: its own paid calls, in its payment store.
 *
 * A seller's rating resists sock puppets (a 1-base-unit purchase costs only gas): of each buyer,
 * only the LATEST review of a purchase worth at least the minimum value (default 0.10 USDC) counts,
 * and the average weighs each counted review by that purchase's value. Every review stays listed;
 * the rating says how many distinct buyers it is made of.
 *
 * @module
 */
import { normalizeSuiAddress } from '@mysten/sui/utils'
import { Hono } from 'hono'
import { type Kysely, type Selectable, sql } from 'kysely'
import type { PaymentStore } from 'tollgate'
import { z } from 'zod'
import { toBigint } from '../db/database.js'
import type { GatewaySchema, MarketplaceReviewTable } from '../db/schema.js'
import { problem, schemaProblem } from '../problem.js'
import { bodyTooLarge, readJsonBody } from '../requestBody.js'
import { type PurchaseOutcome, reviewEligibility } from '../reviews/rules.js'
import { type MutationSigner, signedMutationSchema, suiAddressSchema } from './signing.js'
import { newId } from './store.js'

/** A stored review. */
export type Review = {
  id: string
  seller: string
  buyer: string
  /** The payment digest of the purchase. */
  purchase: string
  rating: number
  text: string
  createdAt: string
  /** What the purchase paid, base units (0 when not recorded). */
  value: bigint
}

/** A purchase as the gateway knows it: who paid whom, how it ended, and how much (base units). */
export type Purchase = { buyer: string; seller: string; outcome: PurchaseOutcome; value: bigint }

/** Finds the purchase paid by a digest; undefined when the gateway knows no such purchase. */
export type PurchaseLookup = (digest: string) => Promise<Purchase | undefined>

/** The reviews' storage. */
export type ReviewStore = {
  /** Smallest purchase value (base units) whose review counts in a rating. */
  readonly minValue: bigint
  /** Adds a review; false when the purchase already has one (atomic across processes). */
  add(review: Omit<Review, 'id'>): Promise<Review | undefined>
  /** The review of a purchase (a payment digest, or an escrow job's id), if it has one. */
  get(purchase: string): Promise<Review | undefined>
  /** A seller's reviews, newest first, with its rating. */
  of(
    seller: string,
    page: { limit: number; offset: number },
  ): Promise<{ reviews: Review[]; total: number; rating: Rating }>
  /** The rating of each of `sellers` that has reviews (two queries). */
  ratings(sellers: readonly string[]): Promise<Map<string, Rating>>
}

/**
 * A seller's rating. Of each buyer only the latest review of a purchase worth at least the minimum
 * value counts; `average` weighs those reviews' stars by their purchases' values.
 */
export type Rating = {
  /** Value-weighted average stars of the reviews that count (two decimals); null when none does. */
  average: number | null
  /** Distinct buyers whose review counts. */
  buyers: number
  /** Every review of the seller, counted or not. */
  count: number
}

/** Options of {@link createReviewStore}. */
export type ReviewStoreOptions = {
  /**
   * Smallest purchase value (base units) whose review counts in a rating. Default 100 000
   * (0.10 USDC). Security: lower, and sock-puppet buyers rate a seller for almost nothing.
   */
  minValue?: bigint | undefined
}

/** The default {@link ReviewStoreOptions.minValue}: 0.10 USDC. */
export const defaultReviewMinValue = 100_000n

/** stars·value / value, two decimals; bigint all the way to the last division. */
const weightedAverage = (weighted: bigint, value: bigint): number | null =>
  value === 0n ? null : Number((weighted * 100n + value / 2n) / value) / 100

const reviewOf = (r: Selectable<MarketplaceReviewTable>): Review => ({
  id: r.id,
  seller: r.seller,
  buyer: r.buyer,
  purchase: r.purchase,
  rating: Number(r.rating),
  text: r.text,
  createdAt: r.created_at,
  value: toBigint(r.value),
})

/** A review as the API shows it (its value as a decimal string of base units). */
export const reviewJson = (r: Review) => ({ ...r, value: r.value.toString() })

/**
 * The reviews' storage over the gateway's relational store (table `marketplace_reviews`).
 *
 * @example
 * ```ts
 * const reviews = createReviewStore(db, { minValue: 100_000n })
 * ```
 */
export function createReviewStore(
  db: Kysely<GatewaySchema>,
  options: ReviewStoreOptions = {},
): ReviewStore {
  const minValue = options.minValue ?? defaultReviewMinValue

  /** Per seller: every review, and the buyers, stars·value and value of the reviews that count. */
  const rate = async (sellers: readonly string[]): Promise<Map<string, Rating>> => {
    const ratings = new Map<string, Rating>()
    const unique = [...new Set(sellers)]
    if (unique.length === 0) return ratings
    const [all, counted] = await Promise.all([
      db
        .selectFrom('marketplace_reviews')
        .select((eb) => ['seller', eb.fn.countAll<number | string | bigint>().as('n')])
        .where('seller', 'in', unique)
        .groupBy('seller')
        .execute(),
      db
        .selectFrom((eb) =>
          eb
            .selectFrom('marketplace_reviews')
            .select((e) => [
              'seller',
              'rating',
              'value',
              // Of each buyer, its latest review of a purchase worth at least the minimum.
              e.fn
                .agg<number | string | bigint>('row_number')
                .over((ob) =>
                  ob
                    .partitionBy(['seller', 'buyer'])
                    .orderBy('created_at', 'desc')
                    .orderBy('id', 'desc'),
                )
                .as('latest'),
            ])
            .where('seller', 'in', unique)
            .where('value', '>=', minValue)
            .as('r'),
        )
        .select((eb) => [
          'r.seller',
          eb.fn.countAll<number | string | bigint>().as('buyers'),
          sql<
            number | string | bigint | null
          >`sum(${sql.ref('r.rating')} * ${sql.ref('r.value')})`.as('weighted'),
          eb.fn.sum<number | string | bigint | null>('r.value').as('value'),
        ])
        .where('r.latest', '=', 1)
        .groupBy('r.seller')
        .execute(),
    ])
    const counts = new Map(counted.map((row) => [row.seller, row]))
    for (const row of all) {
      const count = Number(row.n)
      if (count === 0) continue
      const c = counts.get(row.seller)
      ratings.set(row.seller, {
        average:
          c === undefined
            ? null
            : weightedAverage(toBigint(c.weighted ?? 0), toBigint(c.value ?? 0)),
        buyers: c === undefined ? 0 : Number(c.buyers),
        count,
      })
    }
    return ratings
  }

  return {
    minValue,
    async add(review) {
      const row = { ...review, id: newId('rev') }
      const result = await db
        .insertInto('marketplace_reviews')
        .values({
          id: row.id,
          seller: row.seller,
          buyer: row.buyer,
          purchase: row.purchase,
          rating: row.rating,
          text: row.text,
          created_at: row.createdAt,
          value: row.value,
        })
        .onConflict((oc) => oc.column('purchase').doNothing())
        .executeTakeFirst()
      return (result.numInsertedOrUpdatedRows ?? 0n) > 0n ? row : undefined
    },
    async get(purchase) {
      const row = await db
        .selectFrom('marketplace_reviews')
        .selectAll()
        .where('purchase', '=', purchase)
        .executeTakeFirst()
      return row === undefined ? undefined : reviewOf(row)
    },
    async of(seller, page) {
      const [rows, ratings] = await Promise.all([
        db
          .selectFrom('marketplace_reviews')
          .selectAll()
          .where('seller', '=', seller)
          .orderBy('created_at', 'desc')
          .orderBy('id', 'desc')
          .limit(page.limit)
          .offset(page.offset)
          .execute(),
        rate([seller]),
      ])
      const rating = ratings.get(seller) ?? { average: null, buyers: 0, count: 0 }
      return { reviews: rows.map(reviewOf), total: rating.count, rating }
    },
    ratings: rate,
  }
}

/**
 * The gateway's own paid calls as purchases: the payer of a settled payment bought from `payTo`;
 * served → `served`, owed or paid back → `refunded`, still in flight → `pending`.
 *
 * @example
 * ```ts
 * const purchases = gatewayPurchases(paymentStore, payTo)
 * ```
 */
export function gatewayPurchases(payments: PaymentStore, payTo: string): PurchaseLookup {
  const seller = normalizeSuiAddress(payTo)
  return async (digest) => {
    const record = await payments.get(digest)
    if (record?.settlement === undefined) return undefined
    const outcome: PurchaseOutcome =
      record.state === 'served'
        ? 'served'
        : record.state === 'refund_due' || record.state === 'refunded'
          ? 'refunded'
          : 'pending'
    return {
      buyer: normalizeSuiAddress(record.settlement.payer),
      seller,
      outcome,
      value: record.settlement.amount,
    }
  }
}

const address = suiAddressSchema

/** The signed body of a review. The rating's range is a review rule (`invalid_rating`). */
export const reviewBodySchema = z
  .object({
    seller: address,
    /** The payment digest of the purchase (base58). */
    purchase: z.string().regex(/^[1-9A-HJ-NP-Za-km-z]{32,64}$/),
    rating: z.number(),
    text: z.string().max(2000),
  })
  .strict()

const postSchema = signedMutationSchema(z.record(z.string(), z.unknown()))

const querySchema = z
  .object({
    seller: address,
    limit: z.coerce.number().int().min(1).max(100).default(20),
    offset: z.coerce.number().int().min(0).max(100_000).default(0),
  })
  .strict()

/** Options of {@link reviewRoutes}. */
export type ReviewRoutesOptions = {
  reviews: ReviewStore
  purchases: PurchaseLookup
  signer: MutationSigner
  /** Clock, ms. Default `Date.now`. */
  now?: (() => number) | undefined
}

/** The review routes (a Hono app to mount at `/v1/reviews`). */
export function reviewRoutes(options: ReviewRoutesOptions): Hono {
  const now = options.now ?? Date.now
  const app = new Hono()

  app.get('/', async (c) => {
    const query = querySchema.safeParse(c.req.query())
    if (!query.success) return schemaProblem(query.error, 'query')
    const { seller, limit, offset } = query.data
    const { reviews, total, rating } = await options.reviews.of(seller, { limit, offset })
    return c.json({ seller, rating, reviews: reviews.map(reviewJson), total, limit, offset })
  })

  app.post('/', async (c) => {
    const read = await readJsonBody(c.req.raw, 64 * 1024)
    if (read.status === 'too_large') return bodyTooLarge(read.limit)
    if (read.status === 'not_json') return problem('invalid_request_body', 'The body is not JSON.')
    const parsed = postSchema.safeParse(read.json)
    if (!parsed.success) return schemaProblem(parsed.error, '')
    const request = parsed.data
    const body = reviewBodySchema.safeParse(request.body)
    if (!body.success) return schemaProblem(body.error, 'body')
    // The signature covers the body as sent; nothing is consumed when it does not hold.
    const verdict = await options.signer.verify({ ...request, action: 'review' })
    if (!verdict.ok) {
      return problem('mutation_refused', `The review was refused: ${verdict.reason}.`, {
        extra: {
          reason: verdict.reason,
        },
      })
    }
    const review = body.data
    const purchase = await options.purchases(review.purchase)
    if (purchase === undefined || purchase.seller !== review.seller) {
      return problem('review_refused', 'No purchase from this seller with this digest.', {
        extra: {
          reason: 'no_purchase',
        },
      })
    }
    const eligibility = reviewEligibility({
      kind: 'call',
      id: review.purchase,
      buyer: purchase.buyer,
      seller: purchase.seller,
      outcome: purchase.outcome,
      reviewer: request.address,
      rating: review.rating,
      alreadyReviewed: (await options.reviews.get(review.purchase)) !== undefined,
    })
    if (eligibility.status === 'refused') {
      return problem('review_refused', eligibility.message, {
        extra: { reason: eligibility.reason },
      })
    }
    const added = await options.reviews.add({
      seller: review.seller,
      buyer: request.address,
      purchase: review.purchase,
      rating: review.rating,
      text: review.text,
      createdAt: new Date(now()).toISOString(),
      value: purchase.value,
    })
    if (added === undefined) {
      return problem('review_refused', 'This purchase has already been reviewed.', {
        extra: {
          reason: 'already_reviewed',
        },
      })
    }
    return c.json({ ...reviewJson(added), counts: added.value >= options.reviews.minValue }, 201)
  })

  return app
}
