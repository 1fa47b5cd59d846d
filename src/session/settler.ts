/**
 * The seller's settlement of its session channels: on a schedule (units, amount, interval since the
 * last settlement), it takes what was **spent** — never more, whatever the highest voucher allows —
 * through `channel::settle` with the highest voucher; and it watches every open channel for a
 * buyer's close request, and settles at once when it sees one (the payee has the grace period, at
 * least 15 minutes, to do it; after it the payer may withdraw everything left). A channel seen
 * closing takes no more calls (its record moves to `closing`).
 *
 * Run {@link SessionSettler.runOnce} on a timer ({@link SessionSettler.start}) in one process of the
 * seller, or in each: a settlement already made by another process fails on the ledger
 * (`capture` not above what is settled) and changes nothing.
 *
 * @module
 */
import type { ClientWithCoreApi } from '@mysten/sui/client'
import type { Signer } from '@mysten/sui/cryptography'
import { fromHex, normalizeSuiAddress } from '@mysten/sui/utils'
import type { ChannelRecord, ChannelStore } from './channelStore.js'
import { buildSettle, readChannel } from './channelTx.js'

/** When to settle an open channel (any one suffices); a close request always settles at once. */
export type SettlementSchedule = {
  /** After this many calls (units) since the last settlement. */
  readonly units?: bigint | undefined
  /** When this much is spent and not settled, base units. */
  readonly amount?: bigint | undefined
  /** When this long has passed since the last settlement and something is unsettled, ms. */
  readonly intervalMs?: number | undefined
}

/** Options of {@link createSessionSettler}. */
export type SessionSettlerOptions = {
  readonly client: ClientWithCoreApi
  /** The payee's key (or the channels' operator's): signs the settlements. Never logged. */
  readonly signer: Signer
  /** The package holding the `channel` module. */
  readonly package: string
  /** The seller's channel books (the session method's store). */
  readonly store: ChannelStore
  /** Default: when 1 USDC (1 000 000 base units) is unsettled, or an hour has passed. */
  readonly schedule?: SettlementSchedule | undefined
  /** Clock in ms. Default `Date.now`. */
  readonly now?: (() => number) | undefined
  /**
   * Told of each settlement made (after the books record it): where a seller records its sales —
   * the money a session moves reaches the payee in these transactions, not in its calls.
   */
  readonly onSettled?: ((settlement: ChannelSettlement) => void) | undefined
}

/** One settlement made: a transaction that paid the payee from a channel. */
export type ChannelSettlement = {
  readonly channelId: string
  /** Who deposited (the buyer). */
  readonly payer: string
  /** What the payee has in all after it (= what was spent). */
  readonly settled: bigint
  /** What this transaction paid the payee (`settled` less what was settled before). */
  readonly amount: bigint
  readonly digest: string
  /**
   * Why: the schedule, the buyer's close request (a unilateral close, settled in its grace
   * period), or a cooperative close (the session method's, at the buyer's `close`).
   */
  readonly trigger: 'schedule' | 'close_requested' | 'close'
}

/** The settler; see the module's description. */
export type SessionSettler = {
  /** Settles one channel now, if anything spent is unsettled. */
  settle(
    channelId: string,
    trigger?: ChannelSettlement['trigger'],
  ): Promise<ChannelSettlement | undefined>
  /** One pass over the open channels: close requests first seen, then the schedule. */
  runOnce(): Promise<ChannelSettlement[]>
  /** Runs a pass every `everyMs` (default 60 000) until `stop`. */
  start(everyMs?: number): void
  stop(): Promise<void>
}

/**
 * Creates the settler.
 *
 * @example
 * ```ts
 * const settler = createSessionSettler({ client, signer, package: pkg, store, schedule: { amount: 5_000_000n } })
 * settler.start(30_000)
 * ```
 */
export function createSessionSettler(options: SessionSettlerOptions): SessionSettler {
  const { client, signer, store } = options
  const schedule = options.schedule ?? { amount: 1_000_000n, intervalMs: 3_600_000 }
  const now = options.now ?? Date.now
  const sender = normalizeSuiAddress(signer.toSuiAddress())
  /** Per channel: when it was last settled by this process, and its units then. */
  const last = new Map<string, { at: number; units: bigint }>()
  let timer: ReturnType<typeof setInterval> | undefined
  let running: Promise<unknown> = Promise.resolve()

  async function settle(
    channelId: string,
    trigger: ChannelSettlement['trigger'] = 'schedule',
  ): Promise<ChannelSettlement | undefined> {
    const record = await store.get(channelId)
    if (record === undefined || record.spent <= record.settled || record.highestSignature === '') {
      return undefined
    }
    const state = await readChannel(client, channelId)
    const capture = record.spent
    if (state.closed || capture <= state.settled) {
      await store.observe(channelId, {
        settled: state.settled,
        ...(state.closed ? { state: 'closed' } : {}),
      })
      return undefined
    }
    const tx = await buildSettle({
      client,
      package: options.package,
      sender,
      channel: state,
      voucher: {
        channelId,
        cumulativeAmount: record.highest,
        signature: fromHex(record.highestSignature),
      },
      capture,
    })
    const bytes = await tx.build({ client })
    const { signature } = await signer.signTransaction(bytes)
    const result = await client.core.executeTransaction({
      transaction: bytes,
      signatures: [signature],
    })
    if (result.$kind !== 'Transaction') return undefined
    await store.observe(channelId, { settled: capture })
    last.set(channelId, { at: now(), units: record.units })
    const made: ChannelSettlement = {
      channelId,
      payer: record.payer,
      settled: capture,
      amount: capture - state.settled,
      digest: result.Transaction.digest,
      trigger,
    }
    options.onSettled?.(made)
    return made
  }

  function due(record: ChannelRecord): boolean {
    const unsettled = record.spent - record.settled
    if (unsettled <= 0n) return false
    const since = last.get(record.channelId)
    if (schedule.amount !== undefined && unsettled >= schedule.amount) return true
    if (schedule.units !== undefined && record.units - (since?.units ?? 0n) >= schedule.units) {
      return true
    }
    if (schedule.intervalMs !== undefined) {
      if (since === undefined) {
        last.set(record.channelId, { at: now(), units: 0n })
        return false
      }
      return now() - since.at >= schedule.intervalMs
    }
    return false
  }

  async function runOnce(): Promise<ChannelSettlement[]> {
    const done: ChannelSettlement[] = []
    for (const record of await store.list('open')) {
      let closing = false
      try {
        const state = await readChannel(client, record.channelId)
        closing = state.closeRequestedMs > 0n || state.closed
        if (closing) {
          // No more calls on it; settle what was spent while the grace period lasts.
          await store.observe(record.channelId, { state: state.closed ? 'closed' : 'closing' })
        }
        if (closing || due(record)) {
          const made = await settle(record.channelId, closing ? 'close_requested' : 'schedule')
          if (made !== undefined) done.push(made)
        }
      } catch {
        // The ledger did not answer for this channel: the next pass tries again.
      }
    }
    // Channels seen closing by an earlier pass still hold spent and unsettled money: settle it.
    for (const record of await store.list('closing')) {
      if (record.spent > record.settled) {
        const made = await settle(record.channelId, 'close_requested').catch(() => undefined)
        if (made !== undefined) done.push(made)
      }
    }
    return done
  }

  return {
    settle,
    runOnce,
    start(everyMs = 60_000) {
      if (timer !== undefined) return
      timer = setInterval(() => {
        running = running.then(runOnce).catch(() => {})
      }, everyMs)
      ;(timer as { unref?: () => void }).unref?.()
    },
    async stop() {
      if (timer !== undefined) clearInterval(timer)
      timer = undefined
      await running
    },
  }
}
