/**
 * The books of a session method's calls: the receipt a session answer carries, a call priced per
 * request held with its voucher and committed when served (released when not), and a call metered
 * per unit, which pays nothing up front — remembered by its digest until it completes, with its
 * unit price and its voucher's step of the store, for the metering of its answer.
 *
 * @module
 * @internal
 */
import { isPaymentError, PaymentError } from '../errors.js'
import { encodeReceipt, mppHeaders } from '../mpp.js'
import type { ChannelRecord, ChannelStore, HoldOutcome } from '../session/channelStore.js'
import type { HeldUnit } from '../session/meter.js'
import type { PaymentBooks, SettlementResult } from '../settle.js'
import type { TakenVoucher } from './sessionChannels.js'

/** A metered call not yet completed: its unit price, and its voucher's step while it may run. */
export type MeteredCall = {
  readonly price: bigint
  /**
   * Its voucher's step of the store, started by the first call if not yet: what the answer's
   * first event waits for, with the hold of its first unit's price when one was taken.
   */
  readonly voucher: (() => Promise<TakenVoucher | PaymentError>) | undefined
  /**
   * Set when its answer is metered: the unit hold is then the meter's to pay from or give back;
   * otherwise the call's completion gives it back.
   */
  metering: boolean
}

/** The hold a metered call's voucher step took, if it took one. */
function voucherHold(taken: TakenVoucher | PaymentError) {
  return isPaymentError(taken) || taken.hold?.status !== 'held' ? undefined : taken.hold
}

/** The hold of `units` units a metered call's voucher step took, if it took one. */
export function unitHeldBy(
  taken: TakenVoucher | PaymentError,
  units: number,
): HeldUnit | undefined {
  const hold = voucherHold(taken)
  return hold === undefined ? undefined : { holdId: hold.holdId, channel: hold.channel, units }
}

/** A session method's call books; see the module's description. */
export type CallBooks = ReturnType<typeof createCallBooks>

/** A refused settlement. */
export const refuse = (error: PaymentError): SettlementResult => ({ status: 'rejected', error })

/** Creates the call books of one session method over its channel store. */
export function createCallBooks(store: ChannelStore, now: () => number) {
  /** Each metered call not yet completed, by its digest. */
  const unitPrices = new Map<string, MeteredCall>()

  /** The receipt of a session answer. */
  function receipt(
    challengeId: string,
    channel: ChannelRecord,
    extra: { spent?: bigint; units?: bigint; txHash?: string } = {},
  ): Readonly<Record<string, string>> {
    return {
      [mppHeaders.paymentReceipt]: encodeReceipt({
        method: 'sui',
        intent: 'session',
        status: 'success',
        timestamp: new Date(now()).toISOString(),
        reference: channel.channelId,
        challengeId,
        channelId: channel.channelId,
        acceptedCumulative: channel.highest.toString(),
        spent: (extra.spent ?? channel.spent).toString(),
        units: (extra.units ?? channel.units).toString(),
        ...(extra.txHash === undefined ? {} : { txHash: extra.txHash }),
      }),
    }
  }

  const answered = (headers: Readonly<Record<string, string>>): SettlementResult => ({
    status: 'answered',
    answer: { status: 204, headers },
  })

  /** What a taken voucher pays for a call: its hold, or why it pays nothing. */
  function heldBy(taken: TakenVoucher): Extract<HoldOutcome, { status: 'held' }> | PaymentError {
    // A call is paid by a voucher amount not used before: a repeated one pays nothing again.
    if (!taken.fresh) {
      return new PaymentError('replay', 'This voucher was already used; sign a higher one.', {
        details: { acceptedCumulative: taken.channel.highest.toString() },
      })
    }
    const held = taken.hold
    if (held === undefined) throw new Error('an accepted voucher answers its hold')
    if (held.status === 'held') return held
    return new PaymentError(
      'insufficient_balance',
      "The channel's vouchers do not cover this call.",
      {
        details: {
          channelId: held.channel.channelId,
          requiredCumulative: held.required.toString(),
          acceptedCumulative: held.channel.highest.toString(),
          deposit: held.channel.deposit.toString(),
        },
      },
    )
  }

  /** The receipt of a held call once committed (calls in flight aside). */
  const receiptAfter = (challengeId: string, channel: ChannelRecord, price: bigint) =>
    receipt(challengeId, channel, { spent: channel.spent + price, units: channel.units + 1n })

  /** A paid call's settlement, its books given. */
  const paidCall = (
    channel: ChannelRecord,
    price: bigint,
    holdId: string,
    books: PaymentBooks,
  ): SettlementResult => ({
    status: 'settled',
    digest: `${channel.channelId}/${holdId}`,
    payer: channel.payer,
    amount: price,
    dialect: 'mpp',
    resumed: false,
    books,
    channelId: channel.channelId,
  })

  /**
   * A call paid from the channel: its price held (with its voucher, in one step of the store),
   * committed when served, released if not.
   */
  function holdCall(
    channel: ChannelRecord,
    price: bigint,
    challengeId: string,
    taken: TakenVoucher,
  ): SettlementResult {
    const held = heldBy(taken)
    if (isPaymentError(held)) return refuse(held)
    const holdId = held.holdId
    const after = receiptAfter(challengeId, held.channel, price)
    const none = {}
    return paidCall(channel, price, holdId, {
      served: () => store.commit(holdId),
      failed: () => store.release(holdId),
      headersFor: (status) => (status < 200 || status > 299 ? none : after),
    })
  }

  /**
   * A call paid from the channel whose voucher and hold are still being written (`taking`) while
   * its handler starts; see {@link PaymentBooks.durable}. The answer waits for the write, and a
   * write that refuses the call (a repeat, short headroom, the channel closing, the store down)
   * refuses it after all, with nothing held; committed or released once written.
   */
  function heldLater(
    channel: ChannelRecord,
    price: bigint,
    challengeId: string,
    holdId: string,
    taking: Promise<TakenVoucher | PaymentError>,
  ): SettlementResult {
    const none = {}
    let after: Readonly<Record<string, string>> = none
    const durable = taking.then(
      (taken) => {
        const held = isPaymentError(taken) ? taken : heldBy(taken)
        if (isPaymentError(held)) return held
        after = receiptAfter(challengeId, held.channel, price)
        return undefined
      },
      (error: unknown) =>
        isPaymentError(error)
          ? error
          : new PaymentError('store_error', 'The channel store could not record the voucher.'),
    )
    return paidCall(channel, price, holdId, {
      served: async () => (await durable) === undefined && store.commit(holdId),
      failed: async () => (await durable) !== undefined || store.release(holdId),
      headersFor: (status) => (status < 200 || status > 299 ? none : after),
      durable,
    })
  }

  /**
   * A call on a metered route: its answer is charged per unit by `stream`, nothing up front.
   * `voucher` starts its voucher's step of the store, if not yet started (it may still be under
   * way): the answer's first event waits for it, and a call that completes without metering an
   * answer starts it then, and gives back the unit hold it took.
   */
  function meteredCall(
    channel: ChannelRecord,
    price: bigint,
    voucher?: () => Promise<TakenVoucher | PaymentError>,
  ): SettlementResult {
    const digest = `${channel.channelId}/${crypto.randomUUID()}`
    if (unitPrices.size >= 10_000) unitPrices.delete(unitPrices.keys().next().value as string)
    const call: MeteredCall = { price, voucher, metering: false }
    unitPrices.set(digest, call)
    const none = {}
    const completed = async () => {
      unitPrices.delete(digest)
      // A voucher whose answer never started (nothing metered) is recorded all the same.
      const taking = voucher?.()
      if (taking !== undefined && !call.metering) {
        void taking
          .then((taken) => {
            // Whatever its size, the hold is given back whole: no unit was paid from it.
            const hold = voucherHold(taken)
            return hold === undefined ? false : store.release(hold.holdId)
          })
          .catch(() => false)
      }
      return true
    }
    const books: PaymentBooks = {
      // Nothing was held for the call: what its answer sent is in the channel's books already.
      served: completed,
      failed: completed,
      headersFor: () => none,
    }
    return {
      status: 'settled',
      digest,
      payer: channel.payer,
      amount: 0n,
      dialect: 'mpp',
      resumed: false,
      books,
      channelId: channel.channelId,
    }
  }

  return {
    receipt,
    answered,
    holdCall,
    heldLater,
    meteredCall,
    /** The metered call of `digest`, while it has not completed. */
    meteredOf: (digest: string) => unitPrices.get(digest),
  }
}
