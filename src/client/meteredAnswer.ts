/**
 * The buyer's side of an answer metered per unit (a streamed answer paid per token through a
 * session): the events pass to the reader unchanged, and as they pass the buyer keeps the channel's
 * vouchers ahead of them — when what it has signed covers fewer than a quarter of `ahead` more
 * units, it signs up to `ahead` units beyond those received, so the seller's meter seldom waits;
 * when the seller asks anyway (`payment-need-voucher`), it signs what was asked and the same margin.
 * A buyer signs at most about `ahead` units beyond what it has been sent (a voucher is an
 * authorisation: the seller captures only what it spent).
 *
 * @module
 */
import { z } from 'zod'
import { isUnitEvent, sseFields, sseSplitter } from '../session/sse.js'

/**
 * How the buyer raises the channel's voucher: to `wish` if the deposit allows, and to `need` at
 * least (topping up when the deposit does not cover it); resolves to the amount now signed.
 */
export type RaiseVoucher = (need: bigint, wish: bigint) => Promise<bigint>

/** What {@link watchMeteredAnswer} needs to know. */
export type MeteredAnswerOptions = {
  /** Price of one unit, base units. */
  readonly price: bigint
  /**
   * What the channel had spent when this answer began, as far as the buyer knows (the last
   * receipt's `spent`; else what was signed before this answer): the answer's units are counted
   * above it.
   */
  readonly base: bigint
  /** What the voucher that started this answer covers. */
  readonly covered: bigint
  /** How many units to sign ahead of the events received. */
  readonly ahead: bigint
  readonly raise: RaiseVoucher
  /** Told when a raise fails (the stream may then end early, as the seller decides). */
  readonly onError?: ((error: unknown) => void) | undefined
  /** Told what the channel has spent, from the answer's closing `payment-receipt` event. */
  readonly onSpent?: ((spent: bigint) => void) | undefined
}

const amount = z.string().regex(/^[0-9]{1,20}$/)
const needSchema = z.object({ requiredCumulative: amount })
const receiptSchema = z.object({ spent: amount })

/**
 * Returns `response` with a body that raises the channel's voucher as the answer's units pass;
 * see the module's description. A body-less response is returned as it is.
 */
export function watchMeteredAnswer(response: Response, options: MeteredAnswerOptions): Response {
  if (response.body === null) return response
  const { price, base, ahead, raise } = options
  const lowWater = ahead / 4n > 0n ? ahead / 4n : 1n
  let covered = options.covered
  let units = 0n
  let split = sseSplitter()
  // One raise at a time; a later need is folded into the next one.
  let raising: Promise<void> | undefined
  let needed = 0n
  function want(need: bigint): void {
    if (need <= covered) return
    if (need > needed) needed = need
    if (raising !== undefined) return
    raising = (async () => {
      while (needed > covered) {
        const need = needed
        try {
          const signed = await raise(need, need + (ahead - lowWater) * price)
          if (signed > covered) covered = signed
          if (signed < need) return
        } catch (error) {
          options.onError?.(error)
          return
        }
      }
    })().finally(() => {
      raising = undefined
    })
  }
  function seen(event: string): void {
    if (isUnitEvent(event)) {
      units += 1n
      if (base + (units + lowWater) * price > covered) want(base + (units + lowWater) * price)
      return
    }
    const { name, data } = sseFields(event)
    if (data === undefined) return
    if (name !== 'payment-need-voucher' && name !== 'payment-receipt') return
    let parsed: unknown
    try {
      parsed = JSON.parse(data)
    } catch {
      return
    }
    if (name === 'payment-receipt') {
      const receipt = receiptSchema.safeParse(parsed)
      if (receipt.success) options.onSpent?.(BigInt(receipt.data.spent))
      return
    }
    const need = needSchema.safeParse(parsed)
    if (need.success) want(BigInt(need.data.requiredCumulative))
  }
  const watch = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      controller.enqueue(chunk)
      // An event longer than the seller's limit (1 MiB) is passed on unwatched.
      try {
        for (const event of split.push(chunk)) seen(event)
      } catch {
        split = sseSplitter()
      }
    },
  })
  return new Response(response.body.pipeThrough(watch), {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  })
}
