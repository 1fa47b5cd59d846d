/**
 * The MCP server's session channels (`tollgate mcp --session`): when a seller's 402 offers an MPP
 * session on a pinned channel package, a tool call is paid with a voucher over one channel per
 * seller, opened once and reused by every later call (kept in the wallet's channel book, where
 * `tollgate session list|close|withdraw` find it), instead of a ledger transaction per call. A
 * seller that offers no session, or one on a package not pinned, is paid per call as before.
 *
 * A deposit (the open, a top-up) counts when it is made against the MCP budgets of the session
 * whose call made it (and the day's) and against the wallet limits, labelled with the tool, so a
 * restart still counts it; the vouchers after it cost the budgets nothing more. What a close gives
 * back is restored to both.
 *
 * @module
 */
import type { ClientWithCoreApi } from '@mysten/sui/client'
import type { Signer } from '@mysten/sui/cryptography'
import type { ChannelBook } from '../client/channelBook.js'
import type { Reservation, WalletLimits } from '../client/limits.js'
import {
  createSessionFetch,
  type PinnedChannels,
  type SessionClose,
  type SessionFetch,
} from '../client/sessions.js'
import { formatAmount } from '../money.js'
import { decodeReceipt, mppHeaders } from '../mpp.js'
import type { BudgetReservation, SessionBudget } from './budget.js'
import type { CatalogTool } from './catalogTools.js'
import { checkListedTerms, type Fetcher } from './sellerTools.js'

/** How `tollgate mcp` pays through sessions (see the module's description). */
export type McpSessionsOptions = {
  /** The channel packages the buyer trusts; an offer naming another is refused before signing. */
  readonly pinned: readonly PinnedChannels[]
  /** Most one channel may hold, base units (the sum of its deposits). */
  readonly maxDeposit: bigint
  /** The ledger's client: channels are opened and topped up through it. */
  readonly client: ClientWithCoreApi
  /** Where channels are kept. Default: `sessions.json` in the tollgate home (the wallet's book). */
  readonly book?: ChannelBook | undefined
}

/** The server's session payments. */
export type McpSessions = {
  /**
   * The underlying fetch of one tool call (beneath the paying fetch): a session offer is paid over
   * the seller's channel, any other answer passes through.
   */
  fetchFor(tool: CatalogTool, session: SessionBudget): Fetcher
  /** Closes every channel this server opened, restoring what comes back to the budgets. */
  close(): Promise<SessionClose[]>
}

/**
 * Creates the server's session payments.
 *
 * @param options.limits - The wallet limits, with each spend labelled for its tool by `label`.
 * @param options.fetchOf - The fetch a URL is reached with (the seller fetch for sellers).
 * @example
 * ```ts
 * const sessions = createMcpSessions({ ...options.sessions, signer, limits, label, fetchOf })
 * const pay = createPayingFetch({ signer, fetch: sessions.fetchFor(tool, session) })
 * ```
 */
export function createMcpSessions(
  options: McpSessionsOptions & {
    signer: Signer
    limits: WalletLimits
    label: (tool: string) => string
    maxPrice?: bigint | undefined
    fetchOf: (url: string) => Fetcher
  },
): McpSessions {
  const { limits } = options
  /** The budget hold of each deposit this server made, by its wallet reservation. */
  const holds = new Map<string, BudgetReservation>()
  const sessions: SessionFetch = createSessionFetch({
    signer: options.signer,
    client: options.client,
    pinned: options.pinned,
    maxDeposit: options.maxDeposit,
    maxPrice: options.maxPrice,
    book: options.book,
    fetch: (input, init) => {
      const request = new Request(input, init)
      return options.fetchOf(request.url)(request)
    },
    // A close restores what came back to the wallet limits and, here, to the budget.
    limits: {
      ...limits,
      async keep(id, amount) {
        holds.get(id)?.keep(amount)
        await limits.keep(id, amount)
      },
    },
  })

  /** The wallet limits of one tool call: a deposit is held in the call's budgets first. */
  function limitsOf(tool: string, session: SessionBudget): WalletLimits {
    return {
      ...limits,
      async reserve(spend) {
        const hold = session.reserve(tool, spend.amount)
        let reservation: Reservation
        try {
          reservation = await limits.reserve({ ...spend, label: options.label(tool) })
        } catch (error) {
          hold.release()
          throw error
        }
        holds.set(reservation.id, hold)
        return {
          ...reservation,
          async settle(digest) {
            hold.settle(digest)
            await reservation.settle(digest)
          },
          async release() {
            hold.release()
            holds.delete(reservation.id)
            await reservation.release()
          },
        }
      },
    }
  }

  return {
    fetchFor(tool, session) {
      const call = sessions.forCall({
        limits: limitsOf(tool.name, session),
        // What the model was shown is what may be paid per call: the listed price and recipient.
        check: (offer) => checkListedTerms(tool, offer),
        // A session on a package not pinned here is not taken: the call is paid on its own.
        unpinned: 'pass',
        // A call's cost must be known before it is made (the budgets): per call, not per token.
        metered: 'pass',
      })
      return async (request) =>
        call(request.url, {
          method: request.method,
          headers: request.headers,
          signal: request.signal,
          ...(request.body === null ? {} : { body: await request.arrayBuffer() }),
        })
    },
    async close() {
      const mine = (await sessions.list()).filter(
        (c) => c.state === 'open' && c.reservation !== undefined && holds.has(c.reservation),
      )
      const closed: SessionClose[] = []
      for (const channel of mine) closed.push(await sessions.close(channel.channelId))
      return closed
    },
  }
}

/**
 * How a call was paid over a session channel (from the seller's receipt): the channel and what was
 * spent on it so far; `undefined` for any other answer.
 *
 * @example
 * ```ts
 * sessionPaymentOf(response) // { dialect: 'mpp', intent: 'session', channelId, spent: '0.020000' }
 * ```
 */
export function sessionPaymentOf(response: Response) {
  const header = response.headers.get(mppHeaders.paymentReceipt)
  if (header === null) return undefined
  try {
    const receipt = decodeReceipt(header)
    if (receipt.intent !== 'session') return undefined
    return {
      dialect: 'mpp',
      intent: 'session',
      channelId: String(receipt.channelId),
      spent: formatAmount(BigInt(String(receipt.spent))),
    }
  } catch {
    return undefined
  }
}
