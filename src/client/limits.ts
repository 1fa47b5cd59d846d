/**
 * Wallet spending limits: at most `perTransaction` per payment and `perDay` over any rolling 24
 * hours, both on by default (25 and 100 USDC). Every payment is recorded in a small JSON file
 * (written atomically) before it is signed, so a restart does not reset the day's total, and a
 * payment that may have moved money stays counted.
 *
 * A missing file is an empty record; an unreadable one refuses every payment (`invalid_config`)
 * rather than starting from zero. Reservations within one process are serialised; separate
 * processes sharing a file re-read it before each reservation (no cross-process lock).
 *
 * @module
 */
import { randomUUID } from 'node:crypto'
import { join } from 'node:path'
import { z } from 'zod'
import { PaymentError } from '../errors.js'
import { formatAmount, type PriceInput, parseAmount } from '../money.js'
import { tollgateHome } from './home.js'
import { createRecordFile } from './recordFile.js'

/** The rolling window of the daily limit: 24 hours. */
export const dayMs = 24 * 60 * 60 * 1000

/** Default per-transaction limit: 25 USDC. */
export const defaultPerTransaction = 25_000_000n

/** Default rolling-day limit: 100 USDC. */
export const defaultPerDay = 100_000_000n

/** The spending file's name in {@link tollgateHome}. */
export const spendingFileName = 'spending.json'

/** The most spends kept in the file (older ones fall out of the window anyway). */
const maxEntries = 100_000

const spendSchema = z.object({
  id: z.string().max(64),
  /** When, in ms since the epoch. */
  at: z.number().int().nonnegative(),
  /** Base units of USDC. */
  amount: z.string().regex(/^[0-9]{1,39}$/),
  resource: z.string().max(2048),
  digest: z.string().max(128).optional(),
  /** Who spent it, when not a plain payment: `mcp:<tool>` for a tool of `tollgate mcp`. */
  label: z.string().max(200).optional(),
})

/** The spending file. */
export const spendingFileSchema = z.object({
  version: z.literal(1),
  spends: z.array(spendSchema).max(maxEntries),
})

/** One recorded payment. */
export type Spend = z.infer<typeof spendSchema>

/** Options of {@link createWalletLimits}. */
export type WalletLimitsOptions = {
  /**
   * Most one payment may cost, in USDC (`"25"`) or base units (bigint). Default 25 USDC; `null`
   * turns the check off (security: a seller then decides what one call costs, up to `maxPrice`).
   */
  perTransaction?: PriceInput | null | undefined
  /** Most all payments may cost over any rolling 24 hours. Default 100 USDC; `null` turns it off. */
  perDay?: PriceInput | null | undefined
  /** The spending file. Default `spending.json` in {@link tollgateHome}. */
  file?: string | undefined
  /** Clock in ms; default `Date.now`. */
  now?: (() => number) | undefined
}

/** A payment counted against the limits. */
export type Reservation = {
  readonly id: string
  readonly amount: bigint
  /** Records the transaction digest beside the spend. */
  settle(digest: string): Promise<void>
  /** Removes the spend: only when it is certain that no money moved. */
  release(): Promise<void>
  /** Lowers the spend to `amount` when part of it came back (a session's deposit at close). */
  keep(amount: bigint): Promise<void>
}

/** The limits of one wallet. */
export type WalletLimits = {
  readonly perTransaction: bigint | null
  readonly perDay: bigint | null
  readonly file: string
  /**
   * Counts a payment, or refuses it.
   *
   * @throws {PaymentError} `LIMIT_PER_TX` when `amount` is above the per-transaction limit,
   *   `LIMIT_PER_DAY` when it would take the last 24 hours above the daily limit, `invalid_config`
   *   when the spending file cannot be read.
   */
  reserve(spend: {
    amount: bigint
    resource: string
    /** Recorded with the spend: who made it (`mcp:<tool>`). */
    label?: string | undefined
  }): Promise<Reservation>
  /**
   * Lowers the recorded spend `id` to `amount` (never raises it): what a session's close gave
   * back of its deposit is restored to the limits. A spend that fell out of the window is gone.
   */
  keep(id: string, amount: bigint): Promise<void>
  /** What was spent in the last 24 hours (base units). */
  spentToday(): Promise<bigint>
  /** The spends of the last 24 hours, oldest first. */
  recent(): Promise<Spend[]>
}

function limitOf(value: PriceInput | null | undefined, fallback: bigint): bigint | null {
  if (value === null) return null
  if (value === undefined) return fallback
  return parseAmount(value)
}

/**
 * Creates the wallet limits.
 *
 * @example
 * ```ts
 * const limits = createWalletLimits({ perDay: '20' })
 * const reservation = await limits.reserve({ amount: 20_000n, resource: url }) // may throw LIMIT_*
 * ```
 */
export function createWalletLimits(options: WalletLimitsOptions = {}): WalletLimits {
  const perTransaction = limitOf(options.perTransaction, defaultPerTransaction)
  const perDay = limitOf(options.perDay, defaultPerDay)
  const file = options.file ?? join(tollgateHome(), spendingFileName)
  const now = options.now ?? Date.now
  const windowOf = (spends: readonly Spend[]): Spend[] => {
    const cutoff = now() - dayMs
    return spends.filter((s) => s.at > cutoff)
  }
  const records = createRecordFile({
    file,
    schema: spendingFileSchema,
    key: 'spends',
    unreadable:
      'The spending record cannot be read; refusing to pay rather than forgetting what was spent.',
    prune: (spends) => windowOf(spends).slice(-maxEntries),
  })

  const sum = (spends: readonly Spend[]) => spends.reduce((t, s) => t + BigInt(s.amount), 0n)

  const update = (id: string, change: (s: Spend) => Spend | undefined): Promise<void> =>
    records.update((spends) => ({
      records: spends.flatMap((s) => (s.id === id ? (change(s) ?? []) : [s])),
      result: undefined,
    }))

  const keep = (id: string, amount: bigint) =>
    update(id, (s) => (amount < BigInt(s.amount) ? { ...s, amount: amount.toString() } : s))

  return {
    perTransaction,
    perDay,
    file,
    reserve({ amount, resource, label }) {
      return records.update((spends) => {
        if (perTransaction !== null && amount > perTransaction) {
          throw new PaymentError(
            'LIMIT_PER_TX',
            `${formatAmount(amount)} USDC is above the wallet's per-transaction limit of ${formatAmount(perTransaction)} USDC.`,
            { details: { amount: amount.toString(), limit: perTransaction.toString() } },
          )
        }
        const spent = sum(windowOf(spends))
        if (perDay !== null && spent + amount > perDay) {
          throw new PaymentError(
            'LIMIT_PER_DAY',
            `Paying ${formatAmount(amount)} USDC would take the last 24 hours to ${formatAmount(spent + amount)} USDC, above the wallet's daily limit of ${formatAmount(perDay)} USDC.`,
            {
              details: {
                amount: amount.toString(),
                spent: spent.toString(),
                limit: perDay.toString(),
              },
            },
          )
        }
        const id = randomUUID()
        const spend: Spend = { id, at: now(), amount: amount.toString(), resource }
        if (label !== undefined) spend.label = label
        const reservation: Reservation = {
          id,
          amount,
          settle: (digest) => update(id, (s) => ({ ...s, digest })),
          release: () => update(id, () => undefined),
          keep: (kept) => keep(id, kept),
        }
        return { records: [...spends, spend], result: reservation }
      })
    },
    keep,
    async spentToday() {
      return sum(windowOf(await records.read()))
    },
    async recent() {
      return windowOf(await records.read()).sort((a, b) => a.at - b.at)
    },
  }
}
