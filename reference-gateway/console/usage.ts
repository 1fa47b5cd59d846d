/**
 * What the console shows of a key's use, read from the usage ledger the inference API already
 * writes (`inference_ledger`: one row per keyed call, with its model, cost and the upstream's
 * token counts) and from the stored receipts of confidential answers (`aci_receipts`, each naming
 * the call it answered in the gateway's receipt).
 *
 * - Per day (UTC) and model: served calls, tokens in and out, USDC spent. A call whose reservation
 *   was restored (the upstream failed) cost nothing and is not counted; one still in flight neither.
 * - The recent calls, newest first, with the receipt id of a confidential answer.
 *
 * @module
 */
import { type Kysely, sql } from 'kysely'
import { toBigint } from '../db/database.js'
import type { GatewaySchema, LedgerState } from '../db/schema.js'

/** One day and model of a key's use. */
export type UsageDay = {
  /** `YYYY-MM-DD`, UTC. */
  day: string
  model: string
  calls: number
  promptTokens: number
  completionTokens: number
  /** USDC base units. */
  spent: bigint
}

/** One recent call. */
export type RecentCall = {
  /** The call id (`call_…`, the `x-call-id` header of its answer). */
  id: string
  model: string
  state: LedgerState
  /** USDC base units: the call's cost once served, its reservation while in flight or restored. */
  amount: bigint
  promptTokens: number | null
  completionTokens: number | null
  createdAt: string
  /** The receipt id of a confidential answer (`x-receipt-id`), else null. */
  receiptId: string | null
}

/** Options of {@link keyUsage}. */
export type KeyUsageOptions = {
  /** Days back from now (UTC) to sum. Default 30. */
  days?: number | undefined
  /** Recent calls listed at most. Default 20. */
  recent?: number | undefined
  /** Clock, ms. Default `Date.now`. */
  now?: (() => number) | undefined
}

/**
 * A key's use per day and model, and its recent calls.
 *
 * @example
 * ```ts
 * const { days, recent } = await keyUsage(db, 'key_0123456789abcdef')
 * ```
 */
export async function keyUsage(
  db: Kysely<GatewaySchema>,
  keyId: string,
  options: KeyUsageOptions = {},
): Promise<{ days: UsageDay[]; recent: RecentCall[] }> {
  const now = options.now ?? Date.now
  const since = new Date(now() - (options.days ?? 30) * 86_400_000).toISOString().slice(0, 10)
  const day = sql<string>`substr(created_at, 1, 10)`
  const grouped = await db
    .selectFrom('inference_ledger')
    .select((eb) => [
      day.as('day'),
      'model',
      eb.fn.countAll<string | number | bigint>().as('calls'),
      eb.fn.sum<string | number | bigint | null>('prompt_tokens').as('prompt_tokens'),
      eb.fn.sum<string | number | bigint | null>('completion_tokens').as('completion_tokens'),
      eb.fn.sum<string | number | bigint>('amount').as('spent'),
    ])
    .where('key_id', '=', keyId)
    .where('kind', '=', 'call')
    .where('state', '=', 'served')
    .where('created_at', '>=', since)
    .groupBy([day, 'model'])
    .orderBy('day', 'desc')
    .orderBy('model')
    .execute()
  const days = grouped.map((row) => ({
    day: row.day,
    model: row.model ?? '',
    calls: Number(row.calls),
    promptTokens: Number(row.prompt_tokens ?? 0),
    completionTokens: Number(row.completion_tokens ?? 0),
    spent: toBigint(row.spent ?? 0),
  }))

  const calls = await db
    .selectFrom('inference_ledger')
    .select(['id', 'model', 'state', 'amount', 'prompt_tokens', 'completion_tokens', 'created_at'])
    .where('key_id', '=', keyId)
    .where('kind', '=', 'call')
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(Math.min(Math.max(options.recent ?? 20, 1), 200))
    .execute()
  const ids = calls.map((row) => row.id)
  const receipts = new Map(
    ids.length === 0
      ? []
      : (
          await db
            .selectFrom('aci_receipts')
            .select(['id', 'call_id'])
            .where('call_id', 'in', ids)
            .execute()
        ).map((row) => [row.call_id, row.id]),
  )
  const recent = calls.map((row) => ({
    id: row.id,
    model: row.model ?? '',
    state: row.state,
    amount: toBigint(row.amount),
    // SQLite hands integers back as bigints: token counts are small and shown as numbers.
    promptTokens: row.prompt_tokens === null ? null : Number(row.prompt_tokens),
    completionTokens: row.completion_tokens === null ? null : Number(row.completion_tokens),
    createdAt: row.created_at,
    receiptId: receipts.get(row.id) ?? null,
  }))
  return { days, recent }
}

/**
 * When each key was last used (its newest call), by key id.
 *
 * @example
 * ```ts
 * const lastUsed = await lastUsedOf(db, keys.map((k) => k.id))
 * ```
 */
export async function lastUsedOf(
  db: Kysely<GatewaySchema>,
  keyIds: readonly string[],
): Promise<Map<string, string>> {
  if (keyIds.length === 0) return new Map()
  const rows = await db
    .selectFrom('inference_ledger')
    .select((eb) => ['key_id', eb.fn.max('created_at').as('last')])
    .where('key_id', 'in', keyIds)
    .where('kind', '=', 'call')
    .groupBy('key_id')
    .execute()
  return new Map(rows.map((row) => [row.key_id, String(row.last)]))
}

/**
 * The key a stored receipt belongs to, and the call it answered: the receipt names its call (its
 * ledger entry), and the entry its key. Undefined for an unknown receipt and a keyless answer's.
 *
 * @example
 * ```ts
 * const owner = await receiptKeyOf(db, 'rcpt_…')
 * ```
 */
export async function receiptKeyOf(
  db: Kysely<GatewaySchema>,
  receiptId: string,
): Promise<{ keyId: string; callId: string } | undefined> {
  const row = await db
    .selectFrom('aci_receipts')
    .innerJoin('inference_ledger', 'inference_ledger.id', 'aci_receipts.call_id')
    .select(['inference_ledger.key_id', 'inference_ledger.id'])
    .where('aci_receipts.id', '=', receiptId)
    .executeTakeFirst()
  return row === undefined ? undefined : { keyId: row.key_id, callId: row.id }
}
