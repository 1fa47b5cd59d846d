/**
 * A session method's metered answers (`SessionMethod.stream`): an upstream's event stream sent on
 * to the buyer one paid unit per event, against the channel that paid the call — its units paid
 * from windows of held units (`meterBatches`), a `payment-need-voucher` event and a bounded wait
 * when the vouchers run out, a `payment-receipt` event at the end. Its option types are public
 * (`Methods.SessionStreamOptions`, `Methods.MeteredPayment`); the rest is the method's own.
 *
 * @module
 */
import { PaymentError } from '../errors.js'
import type { ChannelStore } from '../session/channelStore.js'
import { type MeterStop, meterBatches } from '../session/meter.js'
import { formatMeteredEvent, isUnitEvent, sseEvents } from '../session/sse.js'
import type { VoucherWaits } from '../session/voucherWaits.js'
import { type MeteredCall, unitHeldBy } from './sessionBooks.js'

/** Options of `SessionMethod.stream`. */
export type SessionStreamOptions = {
  /** Aborted when the buyer leaves: the stream stops, and the event not yet sent is not charged. */
  readonly signal?: AbortSignal | undefined
  /** Told why a stream stopped before its source ended (no voucher came, the channel closed). */
  readonly onStop?: ((stop: MeterStop) => void) | undefined
  /** Which events are paid units (each event's text). Default {@link isUnitEvent}. */
  readonly isUnit?: ((event: string) => boolean) | undefined
}

/** What `SessionMethod.stream` reads of a paid call's payment (its `PaymentInfo`). */
export type MeteredPayment = {
  readonly method: string
  readonly digest: string
  readonly channelId?: string | undefined
}

/**
 * The most events of a metered answer spent together: those the upstream has ready when one
 * arrives (see `meterBatches`).
 */
const meterReadAhead = 32

/** What {@link createSessionStream} needs of its session method. */
export type SessionStreamContext = {
  readonly store: ChannelStore
  /** Streams waiting for a voucher on a channel, woken when the method takes one. */
  readonly waits: VoucherWaits
  /** The metered call of a payment's digest, while it has not completed. */
  readonly meteredOf: (digest: string) => MeteredCall | undefined
  /** How many units one hold pays for. */
  readonly unitWindow: number
  /** How long a hold outlives a process that died while serving it, ms. */
  readonly holdLeaseMs: number
  /** How long a stream waits for a higher voucher, ms (the meter's default when undefined). */
  readonly voucherWaitMs: number | undefined
  readonly now: () => number
}

/** The `stream` of a session method; see the module's description. */
export function createSessionStream(context: SessionStreamContext) {
  const { store, waits, meteredOf, unitWindow, holdLeaseMs, voucherWaitMs, now } = context
  return function stream(
    payment: MeteredPayment,
    body: ReadableStream<Uint8Array>,
    streamOptions: SessionStreamOptions = {},
  ): ReadableStream<Uint8Array> {
    const channelId = payment.channelId
    const call = meteredOf(payment.digest)
    if (payment.method !== 'mppSession' || channelId === undefined || call === undefined) {
      throw new PaymentError('invalid_options', 'This payment was not made through this session.')
    }
    const { sleep, done } = waits.sleeper(channelId)
    // The call's voucher step, started here at the latest (the answer has started); the unit hold
    // taken with it is the meter's from now on.
    call.metering = true
    const voucher = call.voucher?.()
    const batches = meterBatches(
      sseEvents(body),
      {
        store,
        channelId,
        price: call.price,
        after: voucher,
        unitHeld: voucher?.then((taken) => unitHeldBy(taken, unitWindow)),
        window: unitWindow,
        leaseMs: holdLeaseMs,
        isUnit: streamOptions.isUnit ?? isUnitEvent,
        waitMs: voucherWaitMs,
        signal: streamOptions.signal,
        now,
        sleep,
        readAhead: meterReadAhead,
      },
      streamOptions.onStop,
    )
    const encoder = new TextEncoder()
    return new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const next = await batches.next()
          if (next.done) {
            done()
            controller.close()
          } else {
            // A batch's units were spent together: its events leave together, in one chunk.
            let text = ''
            for (const event of next.value) text += formatMeteredEvent(event)
            controller.enqueue(encoder.encode(text))
          }
        } catch (error) {
          done()
          throw error
        }
      },
      async cancel() {
        done()
        await batches.return(undefined)
      },
    })
  }
}
