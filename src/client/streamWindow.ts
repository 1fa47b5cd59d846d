/**
 * The signing-ahead window of one channel's answers metered per unit (docs/protocol.md §7), shared
 * by every such answer streaming on the channel at once. The window counts the units received on
 * all of them — what the channel has consumed, as far as the buyer knows — and is `ahead` units per
 * answer streaming (each answer in flight may be sent `ahead` units before the buyer's next raise
 * reaches the seller, as a call in flight may cost its price): when what is signed covers fewer
 * than a quarter of the window, it raises the channel's voucher to the window beyond them, within
 * the deposit. A buyer signs at most about `ahead` units per answer in flight beyond what it has
 * been sent.
 *
 * Keeping the window ahead never tops the deposit up: when the deposit holds less than the window,
 * the window stops at it, and only a seller's `payment-need-voucher` (what is owed) makes a raise
 * top up.
 *
 * One raise is in flight per channel at a time; a need that comes meanwhile (a unit received, a
 * seller's `payment-need-voucher`) is folded into the next raise, and every need is answered by the
 * raise that covers it.
 *
 * @module
 */

/**
 * How the buyer raises the channel's voucher. `need` is what a seller asked for: the raise signs at
 * least that, topping up when the deposit does not cover it. `0n` means nothing is owed and the
 * raise only keeps the window ahead: it signs up to `wish` within the deposit and never tops up.
 * Both sign `wish` when the deposit allows. Resolves to the amount now signed, or to `0n` when a
 * raise with nothing owed found no room left in the deposit (nothing was signed).
 */
export type RaiseVoucher = (need: bigint, wish: bigint) => Promise<bigint>

/** Options of {@link createStreamWindow}. */
export type StreamWindowOptions = {
  /**
   * How many units the buyer signs ahead of those received on the channel, per answer streaming
   * on it. A larger window lets the seller's meter wait less and authorises more beyond what was
   * served.
   */
  readonly ahead: bigint
  /**
   * What the channel had consumed when the window begins, as far as the buyer knows (what was
   * signed before the first metered answer, counted as spent): units are counted above it.
   */
  readonly consumed: bigint
  /** Told when a raise fails (the seller then ends its answers early, as it decides). */
  readonly onError?: ((error: unknown) => void) | undefined
}

/** What one metered answer tells its channel's window. */
export type WindowStream = {
  /** A unit of the answer was received. */
  unit(): void
  /**
   * The seller asked for a voucher of at least `required` (`payment-need-voucher`): resolves to
   * the amount signed once a raise covers it, rejects when the raise meant to cover it fails.
   */
  needed(required: bigint): Promise<bigint>
  /** The answer's `payment-receipt` said what the channel has spent. */
  spent(spent: bigint): void
  /** The answer ended (read to its end, left by its reader, or broken). */
  close(): void
}

/** The window of one channel; see the module's description. */
export type StreamWindow = {
  /**
   * A metered answer begins: its call's voucher signed `amount` (which pays its first unit), each
   * unit costs `price`, and `raise` raises the voucher through its route.
   */
  open(answer: { amount: bigint; price: bigint; raise: RaiseVoucher }): WindowStream
  /**
   * A call on the channel that was not metered was served: its voucher signed `amount`, and it
   * consumed its `price`.
   */
  served(call: { amount: bigint; price: bigint }): void
  /**
   * What the call voucher of a new metered answer at `price` a unit may sign: the window beyond the
   * units received, counting the new answer — so that its first units need no raise.
   */
  opening(price: bigint): bigint
}

type Open = { received: bigint; price: bigint }
type Waiter = { need: bigint; resolve: (signed: bigint) => void; reject: (error: unknown) => void }

/**
 * Creates the window of one channel; see the module's description.
 *
 * @example
 * ```ts
 * const window = createStreamWindow({ ahead: 64n, consumed: signedBefore })
 * const stream = window.open({ amount, price, raise })
 * stream.unit() // as each unit arrives; a raise is sent when the window runs low
 * ```
 */
export function createStreamWindow(options: StreamWindowOptions): StreamWindow {
  const { ahead } = options
  const lowWater = ahead / 4n > 0n ? ahead / 4n : 1n
  /** What the channel has consumed, as far as the buyer knows. */
  let consumed = options.consumed
  /** The highest amount signed for the answers (their calls' vouchers and the raises). */
  let covered = 0n
  /** The highest amount a seller asked for. */
  let asked = 0n
  /** The price of a unit: the highest of the answers streaming (or of the last one). */
  let price = 0n
  /**
   * What was covered when a raise with nothing owed found no room in the deposit: the window is
   * not raised again until something else raises what is covered.
   */
  let stalled = -1n
  const streams = new Set<Open>()
  let waiters: Waiter[] = []
  let raiser: RaiseVoucher | undefined
  let raising = false

  /** The window's size in money: `ahead` units per answer streaming (one when none is). */
  const units = (count: bigint) => count * price * (streams.size > 1 ? BigInt(streams.size) : 1n)
  /** What a seller asked for and the buyer has not signed. */
  const owed = () => (asked > covered ? asked : 0n)
  const low = () => covered < consumed + units(lowWater) && covered !== stalled
  const wanted = () => owed() > 0n || low()

  function want(raise: RaiseVoucher): void {
    raiser = raise
    if (!raising && wanted()) {
      raising = true
      void run()
    }
  }

  /** Raises, one at a time, until the needs known are covered (or a raise fails). */
  async function run(): Promise<void> {
    try {
      while (raiser !== undefined && wanted()) {
        // The window beyond the units received (a seller's ask may count more: units on their
        // way, and the units other answers hold as they are sent).
        const need = owed()
        let wish = consumed + units(ahead)
        if (wish < need) wish = need
        const signed = await raiser(need, wish)
        if (signed > covered) covered = signed
        else if (need === 0n) stalled = covered
        settle()
        if (signed < need) throw new RangeError('The raise signed less than was needed.')
      }
    } catch (error) {
      options.onError?.(error)
      fail(error)
    } finally {
      // Cleared in the same turn as the last check: a need that comes after it starts a raise.
      raising = false
    }
  }

  /** Resolves every need the amount signed now covers. */
  function settle(): void {
    const left: Waiter[] = []
    for (const waiter of waiters) {
      if (waiter.need <= covered) waiter.resolve(covered)
      else left.push(waiter)
    }
    waiters = left
  }

  function fail(error: unknown): void {
    const failed = waiters
    waiters = []
    for (const waiter of failed) waiter.reject(error)
  }

  return {
    open(call) {
      const open: Open = { received: 0n, price: call.price }
      streams.add(open)
      if (call.amount > covered) covered = call.amount
      if (call.price > price || streams.size === 1) price = call.price
      return {
        unit() {
          open.received += open.price
          consumed += open.price
          if (low()) want(call.raise)
        },
        needed(required) {
          // What the seller counts as spent may include units still on their way: they are
          // counted when received, not from the ask.
          if (required > asked) asked = required
          if (required <= covered) return Promise.resolve(covered)
          const waiting = new Promise<bigint>((resolve, reject) => {
            waiters.push({ need: required, resolve, reject })
          })
          want(call.raise)
          return waiting
        },
        spent(spent) {
          // What was consumed is at most the receipt's and what the other answers received (each
          // may have come after the receipt was made). Never raised from it: units it counts may
          // still be on their way, and are counted when they come.
          let most = spent
          for (const other of streams) if (other !== open) most += other.received
          if (consumed > most) consumed = most
        },
        close() {
          if (!streams.delete(open) || streams.size === 0) return
          price = 0n
          for (const other of streams) if (other.price > price) price = other.price
        },
      }
    },
    served(call) {
      consumed += call.price
      if (call.amount > covered) covered = call.amount
    },
    opening(unit) {
      const top = unit > price ? unit : price
      return consumed + ahead * top * BigInt(streams.size + 1)
    },
  }
}
