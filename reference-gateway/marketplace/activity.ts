/**
 * The activity feed: payments settled through the gateway, and payments made directly to a listed
 * seller that a buyer reported and the ledger confirms — newest first, paged, and live:
 *
 * ```
 * GET  /v1/activity?limit=&offset=        ─▶ 200 { items, total, limit, offset }
 * GET  /v1/activity/stream                ─▶ text/event-stream, one `activity` event per new item
 * POST /api/mpp/report {digest, seller}   ─▶ 201 item | 422 { error: { code: 'report_refused', reason } }
 * ```
 *
 * A report enters the feed only when its transaction is found on the ledger, succeeded, and paid
 * USDC to that seller (its address, or the `payTo` of one of its listings); each digest once (a
 * unique index, across processes). The stream reads the database, so it shows what every gateway
 * process recorded.
 *
 * Wash trading is marked, not hidden: an item is `wash: true` when its buyer and seller also appear
 * the other way round in the feed (the seller paid the buyer too, before or after), or are the same
 * address — money going round between two addresses makes a seller look busy for the price of gas.
 * The mark is computed when the feed is read, so a later payment back marks the earlier one too.
 *
 * @module
 */
import { isValidSuiAddress, normalizeSuiAddress } from '@mysten/sui/utils'
import { Hono } from 'hono'
import { streamSSE } from 'hono/streaming'
import type { Kysely } from 'kysely'
import type { Ledger } from 'tollgate'
import { z } from 'zod'
import { toBigint } from '../db/database.js'
import type { GatewaySchema } from '../db/schema.js'
import { bodyTooLarge, readJsonBody } from '../requestBody.js'
import { type MarketplaceStore, newId } from './store.js'

/** One payment in the feed. */
export type ActivityItem = {
  id: string
  /** `gateway`: settled through the gateway; `report`: reported and found on the ledger. */
  source: 'gateway' | 'report'
  digest: string
  seller: string
  buyer: string
  /** Base units. */
  amount: bigint
  asset: string
  /** The resource paid for, when known. */
  resource: string | null
  /** When it was paid, ISO 8601. */
  at: string
}

/**
 * An item as the feed shows it: with `wash` — its buyer and seller also appear the other way round
 * in the feed (or are the same address).
 */
export type FeedItem = ActivityItem & { wash: boolean }

/** An item with when the feed recorded it (ms), which orders the live stream. */
export type RecordedItem = FeedItem & { recordedMs: number }

/** The feed's storage. */
export type ActivityStore = {
  /** Records a payment; undefined when its digest is already in the feed. */
  add(item: Omit<ActivityItem, 'id'>): Promise<ActivityItem | undefined>
  /** Newest first. */
  page(limit: number, offset: number): Promise<{ items: FeedItem[]; total: number }>
  /**
   * Items recorded (by any process) at or after `afterMs`, in the order they were recorded; the
   * stream skips those it sent already.
   */
  since(afterMs: number, limit: number): Promise<RecordedItem[]>
}

type Row = {
  id: string
  source: 'gateway' | 'report'
  digest: string
  seller: string
  buyer: string
  amount: bigint | number | string
  asset: string
  resource: string | null
  at_ms: bigint | number | string
  recorded_ms: bigint | number | string
  /** SQLite answers 0/1, PostgreSQL a boolean. */
  wash: boolean | number | bigint | string
}

const fromRow = (r: Row): RecordedItem => ({
  id: r.id,
  source: r.source,
  digest: r.digest,
  seller: r.seller,
  buyer: r.buyer,
  amount: toBigint(r.amount),
  asset: r.asset,
  resource: r.resource,
  at: new Date(Number(r.at_ms)).toISOString(),
  recordedMs: Number(r.recorded_ms),
  wash: r.wash === true || r.wash === 1 || r.wash === 1n || r.wash === '1' || r.wash === 't',
})

/** The feed over the gateway's relational store (table `marketplace_activity`). */
export function createActivityStore(
  db: Kysely<GatewaySchema>,
  now: () => number = Date.now,
): ActivityStore {
  /** The feed's rows with the wash-trading mark: the pair also appears the other way round. */
  const items = () =>
    db
      .selectFrom('marketplace_activity as a')
      .selectAll('a')
      .select((eb) =>
        eb
          .or([
            eb('a.buyer', '=', eb.ref('a.seller')),
            eb.exists(
              eb
                .selectFrom('marketplace_activity as back')
                .select('back.id')
                .whereRef('back.seller', '=', 'a.buyer')
                .whereRef('back.buyer', '=', 'a.seller'),
            ),
          ])
          .as('wash'),
      )
  return {
    async add(item) {
      const id = newId('act')
      const result = await db
        .insertInto('marketplace_activity')
        .values({
          id,
          source: item.source,
          digest: item.digest,
          seller: item.seller,
          buyer: item.buyer,
          amount: item.amount,
          asset: item.asset,
          resource: item.resource,
          at_ms: BigInt(Date.parse(item.at)),
          recorded_ms: BigInt(now()),
        })
        .onConflict((oc) => oc.column('digest').doNothing())
        .executeTakeFirst()
      return (result.numInsertedOrUpdatedRows ?? 0n) > 0n ? { ...item, id } : undefined
    },
    async page(limit, offset) {
      const [rows, count] = await Promise.all([
        items()
          .orderBy('a.at_ms', 'desc')
          .orderBy('a.id', 'desc')
          .limit(limit)
          .offset(offset)
          .execute(),
        db
          .selectFrom('marketplace_activity')
          .select((eb) => eb.fn.countAll<number | string | bigint>().as('n'))
          .executeTakeFirst(),
      ])
      return {
        items: rows.map((r) => {
          const { recordedMs: _, ...item } = fromRow(r)
          return item
        }),
        total: Number(count?.n ?? 0),
      }
    },
    async since(afterMs, limit) {
      const rows = await items()
        .where('a.recorded_ms', '>=', BigInt(afterMs))
        .orderBy('a.recorded_ms')
        .orderBy('a.id')
        .limit(limit)
        .execute()
      return rows.map(fromRow)
    },
  }
}

/** An item as the API shows it (the amount as a decimal string of base units). */
export const activityJson = ({
  recordedMs: _,
  ...i
}: ActivityItem & { wash?: boolean; recordedMs?: number }) => ({
  ...i,
  amount: i.amount.toString(),
})

/** Options of {@link activityRoutes}. */
export type ActivityRoutesOptions = {
  activity: ActivityStore
  /** The listings (a report's seller must have one). */
  store: MarketplaceStore
  /** Reads reported transactions. */
  ledger: Pick<Ledger, 'getTransaction'>
  /** The USDC coin type a report must pay in. */
  asset: string
  /** How often the stream looks for new items, ms. Default 1 000. */
  pollMs?: number | undefined
  /** Clock, ms. Default `Date.now`. */
  now?: (() => number) | undefined
}

const reportSchema = z
  .object({
    digest: z.string().regex(/^[1-9A-HJ-NP-Za-km-z]{32,64}$/),
    seller: z
      .string()
      .max(66)
      .refine((a) => isValidSuiAddress(normalizeSuiAddress(a)), 'not a Sui address')
      .transform((a) => normalizeSuiAddress(a)),
  })
  .strict()

const pageSchema = z
  .object({
    limit: z.coerce.number().int().min(1).max(100).default(20),
    offset: z.coerce.number().int().min(0).max(100_000).default(0),
  })
  .strict()

const error = (status: 400 | 422 | 503, code: string, message: string, reason?: string) =>
  Response.json(
    { error: { code, message, ...(reason === undefined ? {} : { reason }) } },
    { status },
  )

/**
 * The feed's routes (a Hono app to mount at `/`).
 *
 * @example
 * ```ts
 * app.route('/', activityRoutes({ activity, store, ledger, asset }))
 * ```
 */
export function activityRoutes(options: ActivityRoutesOptions): Hono {
  const now = options.now ?? Date.now
  const app = new Hono()

  app.get('/v1/activity', async (c) => {
    const query = pageSchema.safeParse(c.req.query())
    if (!query.success) {
      const issue = query.error.issues[0]
      return error(400, 'invalid_request_body', `${issue?.path.join('.')}: ${issue?.message}`)
    }
    const { items, total } = await options.activity.page(query.data.limit, query.data.offset)
    return c.json({ items: items.map(activityJson), total, ...query.data })
  })

  app.get('/v1/activity/stream', (c) =>
    streamSSE(c, async (stream) => {
      // From now on: the page shows the past, the stream what happens next.
      let cursor = now()
      let sent = new Set<string>()
      while (!stream.aborted) {
        let items: RecordedItem[] = []
        try {
          items = await options.activity.since(cursor, 100)
        } catch {
          // The database is away for a moment: try again at the next tick.
        }
        for (const item of items) {
          if (sent.has(item.id)) continue
          await stream.writeSSE({
            event: 'activity',
            id: item.id,
            data: JSON.stringify(activityJson(item)),
          })
        }
        const last = items.at(-1)
        if (last !== undefined) {
          const lastMs = last.recordedMs
          // Keep the ids at the newest instant: the next read starts there again.
          const atLast = items.filter((i) => i.recordedMs === lastMs).map((i) => i.id)
          sent = lastMs === cursor ? new Set([...sent, ...atLast]) : new Set(atLast)
          cursor = lastMs
        }
        await stream.sleep(options.pollMs ?? 1_000)
      }
    }),
  )

  app.post('/api/mpp/report', async (c) => {
    const read = await readJsonBody(c.req.raw, 16 * 1024)
    if (read.status === 'too_large') return bodyTooLarge(read.limit)
    if (read.status === 'not_json')
      return error(400, 'invalid_request_body', 'The body is not JSON.')
    const parsed = reportSchema.safeParse(read.json)
    if (!parsed.success) {
      const issue = parsed.error.issues[0]
      return error(
        400,
        'invalid_request_body',
        `${issue?.path.join('.') || 'body'}: ${issue?.message}`,
      )
    }
    const { digest, seller } = parsed.data
    const refused = (reason: string, message: string) =>
      error(422, 'report_refused', message, reason)
    const listings = (await options.store.listingsOf(seller)).filter((l) => l.state !== 'delisted')
    if (listings.length === 0)
      return refused('not_a_seller', 'This address lists no endpoint here.')
    const found = await options.ledger.getTransaction(digest)
    if (found.status === 'unknown') {
      return error(503, 'ledger_unavailable', `The ledger did not answer: ${found.reason}`)
    }
    if (found.status === 'not_found' || !found.transaction.success) {
      return refused('not_found', 'No successful transaction with this digest on the ledger.')
    }
    const recipients = new Set([seller, ...listings.map((l) => normalizeSuiAddress(l.payTo))])
    const paid = found.transaction.balanceChanges.filter(
      (change) =>
        change.coinType === options.asset &&
        change.amount > 0n &&
        recipients.has(normalizeSuiAddress(change.address)),
    )
    const amount = paid.reduce((sum, change) => sum + change.amount, 0n)
    const buyer = normalizeSuiAddress(found.transaction.sender)
    if (amount === 0n || recipients.has(buyer)) {
      return refused('not_paying_seller', 'This transaction paid this seller no USDC.')
    }
    const added = await options.activity.add({
      source: 'report',
      digest,
      seller,
      buyer,
      amount,
      asset: options.asset,
      resource: null,
      at: new Date(found.transaction.timestampMs ?? now()).toISOString(),
    })
    if (added === undefined)
      return refused('already_reported', 'This payment is already in the feed.')
    return c.json(activityJson(added), 201)
  })

  return app
}

/**
 * Records a payment settled through the gateway (its paywall's `settled` event).
 *
 * @example
 * ```ts
 * onEvent: (e) => e.type === 'settled' && recordGatewaySale(activity, { payTo, asset }, e.payment)
 * ```
 */
export async function recordGatewaySale(
  activity: ActivityStore,
  gateway: { payTo: string; asset: string },
  payment: { digest: string; payer: string; amount: bigint; resource: string | null },
  at: Date = new Date(),
): Promise<void> {
  await activity.add({
    source: 'gateway',
    digest: payment.digest,
    seller: normalizeSuiAddress(gateway.payTo),
    buyer: normalizeSuiAddress(payment.payer),
    amount: payment.amount,
    asset: gateway.asset,
    resource: payment.resource,
    at: at.toISOString(),
  })
}
