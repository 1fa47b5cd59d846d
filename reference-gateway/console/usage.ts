/**
 * What the console shows of a key's use, read from the usage ledger the inference API already
 * writes (`inference_ledger`: one row per keyed call, with its model, price and the upstream's
 * token counts) and from the stored receipts of confidential answers (`aci_receipts`, each naming
 * the call it answered in the gateway's receipt).
 *
 * - Per day (UTC) and model: served calls, tokens in and out, USDC spent. A call whose debit was
 *   restored (the upstream failed) cost nothing and is not counted; one still in flight neither.
 * - The recent calls, newest first, with the receipt id of a confidential answer.
 *
 * @module
 */
import { decodeJwt } from 'jose'
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
  /** USDC base units debited. */
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
  const receipts = await receiptsByCall(db, keyId, calls.length * 2)
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
 * The receipt id of each recent confidential call of a key, by call id: the gateway's receipt of
 * each answer names the ledger entry that paid for it.
 */
async function receiptsByCall(
  db: Kysely<GatewaySchema>,
  keyId: string,
  limit: number,
): Promise<Map<string, string>> {
  const rows = await db
    .selectFrom('aci_receipts')
    .select(['id', 'gateway_receipt'])
    .where('key_id', '=', keyId)
    .orderBy('stored_at', 'desc')
    .limit(Math.max(limit, 1))
    .execute()
  const byCall = new Map<string, string>()
  for (const row of rows) {
    if (row.gateway_receipt === null) continue
    try {
      const payment = decodeJwt(row.gateway_receipt).payment as { entry_id?: unknown } | undefined
      if (typeof payment?.entry_id === 'string') byCall.set(payment.entry_id, row.id)
    } catch {
      // A damaged row names no call.
    }
  }
  return byCall
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
 * The key a stored receipt belongs to, and the call it answered (from the gateway's receipt).
 *
 * @example
 * ```ts
 * const owner = await receiptKeyOf(db, 'rcpt_…')
 * ```
 */
export async function receiptKeyOf(
  db: Kysely<GatewaySchema>,
  receiptId: string,
): Promise<{ keyId: string; callId: string | undefined } | undefined> {
  const row = await db
    .selectFrom('aci_receipts')
    .select(['key_id', 'gateway_receipt'])
    .where('id', '=', receiptId)
    .executeTakeFirst()
  if (row === undefined) return undefined
  let callId: string | undefined
  try {
    const payment =
      row.gateway_receipt === null
        ? undefined
        : (decodeJwt(row.gateway_receipt).payment as { entry_id?: unknown } | undefined)
    if (typeof payment?.entry_id === 'string') callId = payment.entry_id
  } catch {
    callId = undefined
  }
  return { keyId: row.key_id, callId }
}
