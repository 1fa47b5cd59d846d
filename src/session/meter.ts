/**
 * Metering a streamed answer against a session channel, one unit per event (a token, a chunk), as
 * mppx meters its SSE answers: when the source has produced an event that is a unit, its price is
 * moved out of the channel's headroom into `spent` in one atomic step of the store just before the
 * event is handed on (so `spent` is durable before the bytes leave); events that are not units
 * (`[DONE]`) pass uncharged. At most one event of the source waits unpaid. When the headroom
 * runs out, one `payment-need-voucher` event asks the buyer for a higher voucher, and the stream
 * waits for it — a bounded wait, polling the store (the voucher may arrive at another process of
 * the seller). It ends with a `payment-receipt` event: the channel as the answer's last unit left
 * it. An event that is never handed on (the source
 * ended or failed, the buyer left before it) is never spent.
 *
 * @module
 */
import type { ChannelRecord, ChannelStore } from './channelStore.js'

/** What the metered stream yields. */
export type MeteredEvent<T> =
  /** An event of the source, paid. */
  | { readonly type: 'message'; readonly data: T }
  /** The headroom ran out: the buyer must sign a voucher for at least `requiredCumulative`. */
  | {
      readonly type: 'payment-need-voucher'
      readonly data: {
        channelId: string
        requiredCumulative: string
        acceptedCumulative: string
        deposit: string
      }
    }
  /** The end: what the channel has accepted and spent. */
  | {
      readonly type: 'payment-receipt'
      readonly data: { channelId: string; acceptedCumulative: string; spent: string; units: string }
    }

/** How a stream is metered. */
export type MeterOptions<T> = {
  readonly store: ChannelStore
  readonly channelId: string
  /** Price of one unit, base units. */
  readonly price: bigint
  /** Whether an event is a paid unit (default: every event); free ones pass uncharged. */
  readonly isUnit?: ((event: T) => boolean) | undefined
  /** How long to wait for a voucher when the headroom runs out, ms. Default 60 000. */
  readonly waitMs?: number | undefined
  /** How often the store is read while waiting, ms. Default 100. */
  readonly pollMs?: number | undefined
  /** Aborted when the buyer leaves. */
  readonly signal?: AbortSignal | undefined
  /**
   * A step of the store every unit must follow (the call's voucher, still being made durable while
   * the source starts): awaited before the first unit is spent; if it fails, the stream fails.
   */
  readonly after?: Promise<unknown> | undefined
  readonly now?: (() => number) | undefined
  readonly sleep?: ((ms: number) => Promise<void>) | undefined
}

/** Why a metered stream stopped before its source ended. */
export type MeterStop =
  | { readonly reason: 'no_voucher'; readonly required: bigint }
  | { readonly reason: 'not_open' }
  | { readonly reason: 'aborted' }

const noop = () => {}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/**
 * Meters `source` against the channel; see the module's description. When the buyer never sends
 * the voucher (or the channel closes, or the buyer leaves), the stream ends early and `onStop` is
 * told why — after the receipt event, which always comes last.
 *
 * @example
 * ```ts
 * for await (const event of meterStream(tokens, { store, channelId, price: 25n })) send(event)
 * ```
 */
export async function* meterStream<T>(
  source: AsyncIterable<T>,
  options: MeterOptions<T>,
  onStop?: (stop: MeterStop) => void,
): AsyncGenerator<MeteredEvent<T>> {
  const { store, channelId, price } = options
  const now = options.now ?? Date.now
  const sleep = options.sleep ?? defaultSleep
  const waitMs = options.waitMs ?? 60_000
  const pollMs = options.pollMs ?? 100
  const isUnit = options.isUnit ?? (() => true)
  let last: ChannelRecord | undefined
  let asked: bigint | undefined
  let after = options.after

  /**
   * Spends one unit's price (one atomic step of the store), waiting (bounded) for a voucher;
   * undefined when spent, else why not.
   */
  async function* spendOne(): AsyncGenerator<MeteredEvent<T>, MeterStop | undefined> {
    const deadline = now() + waitMs
    for (;;) {
      if (options.signal?.aborted) return { reason: 'aborted' }
      const held = await store.spend(channelId, price)
      if (held.status === 'spent') {
        last = held.channel
        return undefined
      }
      if (held.status !== 'insufficient') return { reason: 'not_open' }
      last = held.channel
      if (asked !== held.required) {
        asked = held.required
        yield {
          type: 'payment-need-voucher',
          data: {
            channelId,
            requiredCumulative: held.required.toString(),
            acceptedCumulative: held.channel.highest.toString(),
            deposit: held.channel.deposit.toString(),
          },
        }
      }
      if (now() >= deadline) return { reason: 'no_voucher', required: held.required }
      await sleep(pollMs)
    }
  }

  let stop: MeterStop | undefined
  let ended = false
  const iterator = source[Symbol.asyncIterator]()
  try {
    for (;;) {
      const next = await iterator.next()
      if (next.done) {
        ended = true
        break
      }
      if (isUnit(next.value)) {
        if (after !== undefined) {
          await after
          after = undefined
        }
        stop = yield* spendOne()
        if (stop !== undefined) break
      }
      yield { type: 'message', data: next.value }
    }
  } finally {
    // Stopped early (no voucher, the buyer left, an error): the source is told so.
    if (!ended) await iterator.return?.()
  }
  // An answer that spent no unit still ends after its voucher's step (whatever that step's fate).
  if (after !== undefined) await after.then(noop, noop)
  // The channel as this answer's last step of the store left it (read only when it took none): a
  // read at the end cost every metered answer one more round trip to the store before its end.
  const channel = last ?? (await store.get(channelId))
  yield {
    type: 'payment-receipt',
    data: {
      channelId,
      acceptedCumulative: (channel?.highest ?? 0n).toString(),
      spent: (channel?.spent ?? 0n).toString(),
      units: (channel?.units ?? 0n).toString(),
    },
  }
  if (stop !== undefined) onStop?.(stop)
}
