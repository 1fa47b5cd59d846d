/**
 * The budgets of the buyer's MCP server: a per-session and a per-day (rolling 24 hours) ceiling on
 * what its tools may spend, on top of the wallet limits of `tollgate/client`. A call is counted
 * before it is paid (so concurrent calls cannot overshoot together) and released only when it is
 * certain that no money moved. The record also answers "what was spent, per tool, per day".
 *
 * @module
 */
import { PaymentError } from '../errors.js'
import { formatAmount, type PriceInput, parseAmount } from '../money.js'

const dayMs = 24 * 60 * 60 * 1000

/** One counted spend. */
export type BudgetSpend = {
  tool: string
  amount: bigint
  at: number
  /** The payment's digest once known. */
  digest?: string | undefined
}

/** A spend counted against the budgets, not yet known to have moved money. */
export type BudgetReservation = {
  /** Keeps the spend (money moved, or may have). */
  settle(digest?: string): void
  /** Removes the spend: only when it is certain that no money moved. */
  release(): void
  /** Lowers the spend to `amount` (never raises it): what a session's close gave back. */
  keep(amount: bigint): void
}

/** Options of {@link createBudget}. */
export type BudgetOptions = {
  /** Most a session may spend, in USDC (`"1"`) or base units. Default: no session ceiling. */
  perSession?: PriceInput | undefined
  /** Most all sessions may spend over any rolling 24 hours. Default: no daily ceiling. */
  perDay?: PriceInput | undefined
  /** Clock in ms (tests). Default `Date.now`. */
  now?: (() => number) | undefined
  /**
   * Spends made before this budget was created (read back from the wallet's spending record), so
   * that a restart does not reset the daily budget. They count against `perDay` until they are 24
   * hours old; no session's. Default none.
   */
  spent?: readonly BudgetSpend[] | undefined
}

/** What was spent, per tool and per (UTC) day. */
export type SpendReport = {
  /** Base units spent by this session. */
  session: string
  /** Base units spent in the last 24 hours by every session. */
  lastDay: string
  perSessionBudget: string | null
  perDayBudget: string | null
  byTool: Record<string, string>
  byDay: Record<string, string>
}

/** The budgets shared by every session of one MCP server. */
export type Budget = {
  /** A new session's view of the budgets (its own session ceiling, the shared daily one). */
  session(): SessionBudget
}

/** One session's budgets. */
export type SessionBudget = {
  /**
   * Counts a spend or refuses it.
   *
   * @throws {PaymentError} `LIMIT_PER_SESSION` or `LIMIT_PER_DAY`.
   */
  reserve(tool: string, amount: bigint): BudgetReservation
  /** What was spent: this session, the last 24 hours, per tool and per day. */
  report(): SpendReport
}

/**
 * Creates the budgets.
 *
 * @example
 * ```ts
 * const session = createBudget({ perSession: '1', perDay: '5' }).session()
 * const hold = session.reserve('openai-chat', 20_000n) // may throw LIMIT_PER_SESSION / LIMIT_PER_DAY
 * hold.settle(digest)
 * ```
 */
export function createBudget(options: BudgetOptions = {}): Budget {
  const perSession = options.perSession === undefined ? null : parseAmount(options.perSession)
  const perDay = options.perDay === undefined ? null : parseAmount(options.perDay)
  const now = options.now ?? Date.now
  const all: BudgetSpend[] = [...(options.spent ?? [])].sort((a, b) => a.at - b.at)
  const sum = (spends: readonly BudgetSpend[]) => spends.reduce((total, s) => total + s.amount, 0n)
  const lastDay = () => {
    const since = now() - dayMs
    // Older spends no longer count against anything here: forget them (bounded memory).
    while (all.length > 0 && (all[0] as BudgetSpend).at <= since) all.shift()
    return sum(all)
  }
  return {
    session() {
      const mine: BudgetSpend[] = []
      return {
        reserve(tool, amount) {
          const session = sum(mine)
          if (perSession !== null && session + amount > perSession) {
            throw new PaymentError(
              'LIMIT_PER_SESSION',
              `This call costs ${formatAmount(amount)} USDC; this session has ${formatAmount(perSession - session)} of its ${formatAmount(perSession)} USDC budget left.`,
              {
                details: {
                  amount: amount.toString(),
                  spent: session.toString(),
                  budget: perSession.toString(),
                },
              },
            )
          }
          const day = lastDay()
          if (perDay !== null && day + amount > perDay) {
            throw new PaymentError(
              'LIMIT_PER_DAY',
              `This call costs ${formatAmount(amount)} USDC; ${formatAmount(perDay - day)} of the ${formatAmount(perDay)} USDC daily MCP budget is left.`,
              {
                details: {
                  amount: amount.toString(),
                  spent: day.toString(),
                  budget: perDay.toString(),
                },
              },
            )
          }
          const spend: BudgetSpend = { tool, amount, at: now() }
          mine.push(spend)
          all.push(spend)
          return {
            settle(digest) {
              spend.digest = digest
            },
            release() {
              for (const list of [mine, all]) {
                const at = list.indexOf(spend)
                if (at >= 0) list.splice(at, 1)
              }
            },
            keep(kept) {
              if (kept < spend.amount) spend.amount = kept
            },
          }
        },
        report() {
          const byTool: Record<string, bigint> = {}
          const byDay: Record<string, bigint> = {}
          for (const spend of mine) {
            byTool[spend.tool] = (byTool[spend.tool] ?? 0n) + spend.amount
            const day = new Date(spend.at).toISOString().slice(0, 10)
            byDay[day] = (byDay[day] ?? 0n) + spend.amount
          }
          const text = (record: Record<string, bigint>) =>
            Object.fromEntries(Object.entries(record).map(([k, v]) => [k, formatAmount(v)]))
          return {
            session: formatAmount(sum(mine)),
            lastDay: formatAmount(lastDay()),
            perSessionBudget: perSession === null ? null : formatAmount(perSession),
            perDayBudget: perDay === null ? null : formatAmount(perDay),
            byTool: text(byTool),
            byDay: text(byDay),
          }
        },
      }
    },
  }
}
