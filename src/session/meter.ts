/**
 * Metering a streamed answer against a session channel, one unit per event (a token, a chunk), as
 * mppx meters its SSE answers: when the source has produced an event that is a unit, its price is
 * moved out of the channel's headroom into `spent` in one atomic step of the store just before the
 * event is handed on (so `spent` is durable before the bytes leave) — or, with a window of held
 * units ({@link MeterOptions.window}, {@link MeterOptions.unitHeld}), paid from a hold durable
 * before it leaves and committed with the window's other units; events that are not units
 * (`[DONE]`) pass uncharged. At most one event of the source waits unpaid (or, read ahead in
 * batches, the events it had ready). When the headroom runs out, one `payment-need-voucher` event
 * asks the buyer for a higher voucher, and the stream waits for it — a bounded wait, polling the
 * store (the voucher may arrive at another process of the seller). It ends with a
 * `payment-receipt` event: the channel as the answer's last unit left it. An event that is never
 * handed on (the source ended or failed, the buyer left before it) is never spent.
 *
 * @module
 */
import { afterThisTurn } from '../internal/afterThisTurn.js'
import type { ChannelRecord, ChannelStore, SpendResult } from './channelStore.js'

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
   * A step of the store the answer must follow (the call's voucher, still being made durable while
   * the source starts): awaited before the first event leaves, paid or free; if it fails, the
   * stream fails and nothing is spent.
   */
  readonly after?: Promise<unknown> | undefined
  /**
   * A hold of units' price taken with the call's voucher, in the same step of the store (its id,
   * how many units it holds and the channel that step left, once written; undefined when none was
   * taken): the answer's first units are paid from it, so that the first paid event leaves without
   * another write first. See {@link MeterOptions.window} for how a window of held units is paid
   * from and settled.
   */
  readonly unitHeld?: Promise<HeldUnit | undefined> | undefined
  /**
   * How many units one hold of the store pays for (default 1). Units are paid from a hold (a
   * **window**) as they are handed on — its hold is durable before they leave — and the window is
   * settled as its last unit leaves, or at the answer's end: the units it paid for committed into
   * `spent` and the rest given back, in one step of the store. When a unit finds no window, a new
   * one is held for up to `window` units (as many as the headroom last seen covers, when that is
   * at least two), and the unit waits for that hold alone; else it is spent alone. Every settling
   * is done before any unit is spent alone and before the receipt. An answer of `n` units thus
   * writes about `n / window` times instead of `n`.
   */
  readonly window?: number | undefined
  /**
   * How long a hold outlives a process that died while serving, ms (default 60 000): a window is
   * settled, and a new one held, once it is half that old.
   */
  readonly leaseMs?: number | undefined
  /**
   * The most events of the source taken together (default 1): the events the source has ready
   * when one arrives join it, and their units are spent at once — in one statement of a store that
   * merges them, in one round of the answer — then handed on together
   * ({@link meterBatches}). An answer whose source runs ahead of the store's writes (a model's
   * tokens under load) waits one write per batch instead of one per unit. {@link meterStream}
   * yields a batch's events one after another: its consumer takes them all.
   */
  readonly readAhead?: number | undefined
  readonly now?: (() => number) | undefined
  readonly sleep?: ((ms: number) => Promise<void>) | undefined
}

/** Units' price held with a call's voucher ({@link MeterOptions.unitHeld}). */
export type HeldUnit = {
  readonly holdId: string
  /** The channel as the step that took the hold left it. */
  readonly channel: ChannelRecord
  /** How many units' price it holds. Default 1. */
  readonly units?: number | undefined
}

/** A hold the answer's units are paid from (see {@link MeterOptions.window}). */
type Window = {
  readonly holdId: string
  /** Units it holds. */
  readonly size: number
  /** Units paid from it so far. */
  used: number
  /** The channel as the step that took it left it. */
  readonly channel: ChannelRecord
  /** When it is settled and another taken (half its lease), ms. */
  readonly until: number
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
  for await (const batch of meterBatches(source, options, onStop)) yield* batch
}

const notReady: unique symbol = Symbol('not ready')

/**
 * Resolves after the microtasks and I/O callbacks now due: what a source has ready by then.
 * `setImmediate` where the runtime has it (Node, Bun); a zero timeout on Web-standard runtimes.
 */
const shortly = () =>
  new Promise<typeof notReady>((resolve) => afterThisTurn(() => resolve(notReady)))

/**
 * {@link meterStream} in batches, each to be handed on whole (the paid events of a batch were
 * spent together: a consumer that sends part of a batch leaves units spent and unsent). With
 * `readAhead` 1 each batch is one event, and each unit is spent alone just before it.
 */
export async function* meterBatches<T>(
  source: AsyncIterable<T>,
  options: MeterOptions<T>,
  onStop?: (stop: MeterStop) => void,
): AsyncGenerator<MeteredEvent<T>[]> {
  const { store, channelId, price } = options
  const now = options.now ?? Date.now
  const sleep = options.sleep ?? defaultSleep
  const waitMs = options.waitMs ?? 60_000
  const pollMs = options.pollMs ?? 100
  const isUnit = options.isUnit ?? (() => true)
  const readAhead = Math.max(1, options.readAhead ?? 1)
  let last: ChannelRecord | undefined
  let asked: bigint | undefined
  let after = options.after
  const windowUnits = Math.max(1, Math.floor(options.window ?? 1))
  const leaseMs = options.leaseMs ?? 60_000
  let unitHeld = options.unitHeld
  /** The hold units are paid from now, if any. */
  let window: Window | undefined
  /** The settling of the windows done with, under way. */
  let committing: Promise<void> | undefined

  const windowOf = (held: HeldUnit): Window => ({
    holdId: held.holdId,
    size: held.units ?? 1,
    used: 0,
    channel: held.channel,
    until: now() + leaseMs / 2,
  })

  /**
   * Settles the window: the units paid from it committed into `spent` and the rest given back (a
   * commit awaited before the next unit spent alone and before the receipt), or all of it given
   * back when none was paid (awaited here).
   */
  async function settleWindow(): Promise<void> {
    const w = window
    window = undefined
    if (w === undefined) return
    if (w.used === 0) {
      // Should that fail, it lapses with its lease.
      await store.release(w.holdId).catch(noop)
      return
    }
    const part = { amount: price * BigInt(w.used), units: BigInt(w.used) }
    const step = store.settleHold(w.holdId, part).then((channel) => {
      // Gone only when it lapsed (its lease ended) and was swept: its units went unpaid. Else the
      // channel as it left it, unless a later step (a new window's hold, issued after) told since.
      if (channel !== undefined && (last === undefined || last.units <= channel.units)) {
        last = channel
      }
    })
    const before = committing
    committing = before === undefined ? step : Promise.all([before, step]).then(noop)
    // Awaited before the next step; never left unheard meanwhile.
    committing.catch(noop)
  }

  /** Pays up to `count` units from the window (settled once used up); how many it paid. */
  async function fromWindow(count: number): Promise<number> {
    const w = window
    if (w === undefined) return 0
    if (now() >= w.until) {
      await settleWindow()
      return 0
    }
    const paid = Math.min(count, w.size - w.used)
    w.used += paid
    if (w.used === w.size) await settleWindow()
    return paid
  }

  /**
   * Holds a new window of up to {@link windowUnits} units, as many as the headroom last seen
   * covers (at least two, or none is taken); whether one was.
   */
  async function newWindow(): Promise<boolean> {
    if (windowUnits < 2 || last === undefined) return false
    const room = (last.highest - last.spent - last.held) / price
    const size = room < BigInt(windowUnits) ? Number(room) : windowUnits
    if (size < 2) return false
    const holdId = crypto.randomUUID()
    const held = await store.hold(channelId, price * BigInt(size), holdId, now() + leaseMs)
    if (held.status !== 'held') {
      if (held.status === 'insufficient') last = held.channel
      return false
    }
    last = held.channel
    window = windowOf({ holdId, channel: held.channel, units: size })
    return true
  }

  /** Waits for the windows' settling, if one is under way (its failure is the stream's). */
  async function committed(): Promise<void> {
    const pending = committing
    committing = undefined
    if (pending !== undefined) await pending
  }

  /**
   * Spends one unit's price (one atomic step of the store), waiting (bounded) for a voucher;
   * undefined when spent, else why not. `refused`: what the store just answered a spend of it
   * (not asked again at once).
   */
  async function* spendOne(
    refused?: SpendResult,
  ): AsyncGenerator<MeteredEvent<T>[], MeterStop | undefined> {
    await committed()
    const deadline = now() + waitMs
    let known = refused
    for (;;) {
      if (options.signal?.aborted) return { reason: 'aborted' }
      const held = known ?? (await store.spend(channelId, price))
      known = undefined
      if (held.status === 'spent') {
        last = held.channel
        return undefined
      }
      if (held.status !== 'insufficient') return { reason: 'not_open' }
      last = held.channel
      if (asked !== held.required) {
        asked = held.required
        yield [
          {
            type: 'payment-need-voucher',
            data: {
              channelId,
              requiredCumulative: held.required.toString(),
              acceptedCumulative: held.channel.highest.toString(),
              deposit: held.channel.deposit.toString(),
            },
          },
        ]
      }
      if (now() >= deadline) return { reason: 'no_voucher', required: held.required }
      await sleep(pollMs)
    }
  }

  /**
   * Spends `count` units at once (each its own atomic step, issued together); how many were
   * spent, the store's error if one failed (the others may have been spent), and its answer to
   * one it refused.
   */
  async function spendMany(
    count: number,
  ): Promise<{ spent: number; error?: unknown; refused?: SpendResult }> {
    if (options.signal?.aborted) return { spent: 0 }
    await committed()
    const results = await Promise.allSettled(
      Array.from({ length: count }, () => store.spend(channelId, price)),
    )
    let spent = 0
    let error: unknown
    let failed = false
    let refused: SpendResult | undefined
    for (const result of results) {
      if (result.status === 'rejected') {
        if (!failed) error = result.reason
        failed = true
      } else if (result.value.status === 'spent') {
        spent++
        last = result.value.channel
      } else refused ??= result.value
    }
    if (failed) return { spent, error }
    return refused === undefined ? { spent } : { spent, refused }
  }

  let stop: MeterStop | undefined
  let ended = false
  /** Whether a batch with a unit was taken: the answer's first unit has left, or is leaving. */
  let firstUnitOut = false
  let pending: Promise<IteratorResult<T>> | undefined
  const iterator = source[Symbol.asyncIterator]()
  try {
    while (!ended) {
      const first = await (pending ?? iterator.next())
      pending = undefined
      if (first.done) {
        ended = true
        break
      }
      const batch = [first.value]
      // Asked once per event (a gateway's `isUnit` parses the event's JSON).
      const paidFor = [isUnit(first.value)]
      let units = paidFor[0] ? 1 : 0
      // The events the source has ready already join the batch (never waited for). Until the
      // answer's first unit has left, a batch ends with its first unit, which leaves at once (the
      // time to the first token) — with the free events before it (a model's role chunk), in one
      // round of the answer.
      while (batch.length < readAhead && (firstUnitOut || units === 0)) {
        const next = iterator.next()
        const ready = await Promise.race([next, shortly()])
        if (ready === notReady) {
          pending = next
          break
        }
        if (ready.done) {
          ended = true
          break
        }
        batch.push(ready.value)
        const paid = isUnit(ready.value)
        paidFor.push(paid)
        if (paid) units++
      }
      if (units > 0) firstUnitOut = true
      // Nothing of the answer leaves before the call's voucher step is done, free events included.
      if (after !== undefined) {
        await after
        after = undefined
      }
      if (unitHeld !== undefined) {
        const held = await unitHeld
        unitHeld = undefined
        if (held !== undefined) {
          window = windowOf(held)
          last = held.channel
        }
      }
      // Paid from the window, or from a new one, while there is one.
      let fromHold = 0
      if (units > 0 && !options.signal?.aborted) {
        fromHold = await fromWindow(units)
        if (fromHold < units && (await newWindow())) fromHold += await fromWindow(units - fromHold)
      }
      // Spent together, before any event of the batch leaves (so it leaves whole); what the
      // headroom did not cover is then spent one by one, asking for a voucher.
      let {
        spent: paid,
        error,
        refused,
      } = units - fromHold > 0 ? await spendMany(units - fromHold) : { spent: 0 }
      paid += fromHold
      let out: MeteredEvent<T>[] = []
      for (const [i, event] of batch.entries()) {
        if (paidFor[i]) {
          if (paid > 0) paid--
          else if (error === undefined) {
            if (out.length > 0) yield out
            out = []
            stop = yield* spendOne(refused)
            refused = undefined
            if (stop !== undefined) break
          } else break
        }
        out.push({ type: 'message', data: event })
      }
      if (out.length > 0) yield out
      if (error !== undefined) throw error
      if (stop !== undefined) break
    }
  } finally {
    // Stopped early (no voucher, the buyer left, an error): the source is told so. An event still
    // awaited is let go first (an async generator's return waits for it).
    if (!ended) {
      pending?.catch(noop)
      const done = iterator.return?.()
      if (pending === undefined) await done
      else void Promise.resolve(done).catch(noop)
    }
    // The window is settled: what it paid for committed, the rest given back — all of it when no
    // unit was paid from it (the source ended or failed first, the buyer left, the stream stopped).
    const unused = window === undefined ? await unitHeld?.catch(() => undefined) : undefined
    unitHeld = undefined
    if (unused !== undefined) window = windowOf(unused)
    await settleWindow()
  }
  // An answer that spent no unit still ends after its voucher's step (whatever that step's fate).
  if (after !== undefined) await after.then(noop, noop)
  await committed()
  // The channel as this answer's last step of the store left it (read only when it took none): a
  // read at the end cost every metered answer one more round trip to the store before its end.
  const channel = last ?? (await store.get(channelId))
  yield [
    {
      type: 'payment-receipt',
      data: {
        channelId,
        acceptedCumulative: (channel?.highest ?? 0n).toString(),
        spent: (channel?.spent ?? 0n).toString(),
        units: (channel?.units ?? 0n).toString(),
      },
    },
  ]
  if (stop !== undefined) onStop?.(stop)
}
