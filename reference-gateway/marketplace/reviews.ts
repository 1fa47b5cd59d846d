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
 * @module
 */
import { isValidSuiAddress, normalizeSuiAddress } from '@mysten/sui/utils'
import { Hono } from 'hono'
import type { Kysely, Selectable } from 'kysely'
import { PaymentError, type PaymentErrorCode, type PaymentStore } from 'tollgate'
import { z } from 'zod'
import type { GatewaySchema, MarketplaceReviewTable } from '../db/schema.js'
import { bodyTooLarge, readJsonBody } from '../requestBody.js'
import { type PurchaseOutcome, reviewEligibility } from '../reviews/rules.js'
import type { MutationSigner } from './signing.js'
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
}

/** A purchase as the gateway knows it. */
export type Purchase = { buyer: string; seller: string; outcome: PurchaseOutcome }

/** Finds the purchase paid by a digest; undefined when the gateway knows no such purchase. */
export type PurchaseLookup = (digest: string) => Promise<Purchase | undefined>

/** The reviews' storage. */
export type ReviewStore = {
  /** Adds a review; false when the purchase already has one (atomic across processes). */
  add(review: Omit<Review, 'id'>): Promise<Review | undefined>
  /** The review of a purchase (a payment digest, or an escrow job's id), if it has one. */
  get(purchase: string): Promise<Review | undefined>
  /** A seller's reviews, newest first, with the average rating over all of them. */
  of(
    seller: string,
    page: { limit: number; offset: number },
  ): Promise<{ reviews: Review[]; total: number; average: number | null }>
  /** The average rating and review count of each of `sellers` that has reviews (one query). */
  ratings(sellers: readonly string[]): Promise<Map<string, Rating>>
}

/** A seller's rating: the average of its reviews' stars (two decimals) and how many there are. */
export type Rating = { average: number; count: number }

const averageOf = (stars: number, count: number) => Math.round((stars / count) * 100) / 100

const reviewOf = (r: Selectable<MarketplaceReviewTable>): Review => ({
  id: r.id,
  seller: r.seller,
  buyer: r.buyer,
  purchase: r.purchase,
  rating: Number(r.rating),
  text: r.text,
  createdAt: r.created_at,
})

/** The reviews' storage over the gateway's relational store (table `marketplace_reviews`). */
export function createReviewStore(db: Kysely<GatewaySchema>): ReviewStore {
  return {
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
      const [rows, summary] = await Promise.all([
        db
          .selectFrom('marketplace_reviews')
          .selectAll()
          .where('seller', '=', seller)
          .orderBy('created_at', 'desc')
          .orderBy('id', 'desc')
          .limit(page.limit)
          .offset(page.offset)
          .execute(),
        db
          .selectFrom('marketplace_reviews')
          .select((eb) => [
            eb.fn.countAll<number | string | bigint>().as('n'),
            eb.fn.sum<number | string | bigint | null>('rating').as('stars'),
          ])
          .where('seller', '=', seller)
          .executeTakeFirst(),
      ])
      const total = Number(summary?.n ?? 0)
      const stars = Number(summary?.stars ?? 0)
      return {
        reviews: rows.map(reviewOf),
        total,
        average: total === 0 ? null : averageOf(stars, total),
      }
    },
    async ratings(sellers) {
      const ratings = new Map<string, Rating>()
      if (sellers.length === 0) return ratings
      const rows = await db
        .selectFrom('marketplace_reviews')
        .select((eb) => [
          'seller',
          eb.fn.countAll<number | string | bigint>().as('n'),
          eb.fn.sum<number | string | bigint | null>('rating').as('stars'),
        ])
        .where('seller', 'in', [...new Set(sellers)])
        .groupBy('seller')
        .execute()
      for (const row of rows) {
        const count = Number(row.n)
        if (count > 0)
          ratings.set(row.seller, { average: averageOf(Number(row.stars ?? 0), count), count })
      }
      return ratings
    },
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
    return { buyer: normalizeSuiAddress(record.settlement.payer), seller, outcome }
  }
}

const address = z
  .string()
  .max(66)
  .refine((a) => isValidSuiAddress(normalizeSuiAddress(a)), 'not a Sui address')
  .transform((a) => normalizeSuiAddress(a))

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

const postSchema = z
  .object({
    address,
    nonce: z.string().regex(/^[0-9a-f]{32}$/),
    signature: z.string().min(1).max(4096),
    body: z.record(z.string(), z.unknown()),
  })
  .strict()

const querySchema = z
  .object({
    seller: address,
    limit: z.coerce.number().int().min(1).max(100).default(20),
    offset: z.coerce.number().int().min(0).max(100_000).default(0),
  })
  .strict()

function problem(code: PaymentErrorCode, message: string, extra = {}): Response {
  const error = new PaymentError(code, message)
  return Response.json(
    { ...error.toProblem(), ...extra },
    { status: error.status, headers: { 'content-type': 'application/problem+json' } },
  )
}

const invalid = (error: z.ZodError, prefix: string) => {
  const issue = error.issues[0]
  return problem(
    'invalid_request_body',
    `${[prefix, ...(issue?.path ?? [])].join('.') || 'body'}: ${issue?.message ?? 'invalid'}`,
  )
}

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
    if (!query.success) return invalid(query.error, 'query')
    const { seller, limit, offset } = query.data
    const { reviews, total, average } = await options.reviews.of(seller, { limit, offset })
    return c.json({ seller, rating: { average, count: total }, reviews, total, limit, offset })
  })

  app.post('/', async (c) => {
    const read = await readJsonBody(c.req.raw, 64 * 1024)
    if (read.status === 'too_large') return bodyTooLarge(read.limit)
    if (read.status === 'not_json') return problem('invalid_request_body', 'The body is not JSON.')
    const parsed = postSchema.safeParse(read.json)
    if (!parsed.success) return invalid(parsed.error, '')
    const request = parsed.data
    const body = reviewBodySchema.safeParse(request.body)
    if (!body.success) return invalid(body.error, 'body')
    // The signature covers the body as sent; nothing is consumed when it does not hold.
    const verdict = await options.signer.verify({ ...request, action: 'review' })
    if (!verdict.ok) {
      return problem('mutation_refused', `The review was refused: ${verdict.reason}.`, {
        reason: verdict.reason,
      })
    }
    const review = body.data
    const purchase = await options.purchases(review.purchase)
    if (purchase === undefined || purchase.seller !== review.seller) {
      return problem('review_refused', 'No purchase from this seller with this digest.', {
        reason: 'no_purchase',
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
      return problem('review_refused', eligibility.message, { reason: eligibility.reason })
    }
    const added = await options.reviews.add({
      seller: review.seller,
      buyer: request.address,
      purchase: review.purchase,
      rating: review.rating,
      text: review.text,
      createdAt: new Date(now()).toISOString(),
    })
    if (added === undefined) {
      return problem('review_refused', 'This purchase has already been reviewed.', {
        reason: 'already_reviewed',
      })
    }
    return c.json(added, 201)
  })

  return app
}
