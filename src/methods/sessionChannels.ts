/**
 * The channels a seller's session method is paid through, as it sees them: a credential's channel
 * descriptor checked against the route, the channel found (tracked from the ledger the first time
 * it is seen, then read from the store once and remembered), and each voucher's signature checked
 * and its amount recorded in the {@link ChannelStore} — before the call runs, or while its handler
 * starts: a call metered per unit, or one priced per request on a mount that holds its answer
 * ({@link SellerChannels.earlyVoucher}).
 *
 * @module
 * @internal
 */
import type { ClientWithCoreApi } from '@mysten/sui/client'
import { fromHex, normalizeStructTag, normalizeSuiAddress } from '@mysten/sui/utils'
import { withRetries } from '../backoff.js'
import type { PreparedTerms } from '../challenge.js'
import { isPaymentError, PaymentError } from '../errors.js'
import { afterThisTurn } from '../internal/afterThisTurn.js'
import { hexToBytes } from '../internal/hex.js'
import type {
  ChannelRecord,
  ChannelStore,
  HoldOutcome,
  HoldRequest,
} from '../session/channelStore.js'
import { type ChannelState, readChannel } from '../session/channelTx.js'
import { channelIdOf } from '../session/voucher.js'
import { createVoucherVerifier } from '../session/voucherKeys.js'
import type { sessionPayloadSchema } from '../session/wire.js'

/** A session credential's payload, as its schema reads it. */
export type SessionPayload = ReturnType<typeof sessionPayloadSchema.parse>

/** A voucher taken: whether its amount was new, the channel after it, and the call's hold. */
export type TakenVoucher = { fresh: boolean; channel: ChannelRecord; hold?: HoldOutcome }

/** A voucher being recorded while its call's handler starts (`SellerChannels.earlyVoucher`). */
export type EarlyVoucher = {
  /** Starts the voucher's step of the store, if it has not started yet; its outcome. */
  readonly record: () => Promise<TakenVoucher | PaymentError>
  /** The outcome of the voucher's step of the store, started now or on the next turn. */
  readonly recorded: Promise<TakenVoucher | PaymentError>
}

/** What {@link createSellerChannels} needs of its session method. */
export type SellerChannelsOptions = {
  readonly client: ClientWithCoreApi
  readonly store: ChannelStore
  /** The package holding the `channel` module, normalised. */
  readonly packageId: string
  /** The shared `Registry` channel ids are derived under, normalised. */
  readonly registry: string
  /** The shortest grace period a channel may have, ms. */
  readonly graceMs: number
  /** The seller's own address, normalised: a channel's operator is it or nobody. */
  readonly seller: string
  /** The smallest raise of a voucher taken, base units. */
  readonly minVoucherDelta: bigint | undefined
  /** Told when this process took a voucher on a channel (streams waiting for one wake). */
  readonly wake: (channelId: string) => void
}

/** A session method's channels; see the module's description. */
export type SellerChannels = ReturnType<typeof createSellerChannels>

const zeroAddress = normalizeSuiAddress('0x0')

/** Creates the channels of one session method. */
export function createSellerChannels(options: SellerChannelsOptions) {
  const { client, store, packageId, registry, graceMs, seller, minVoucherDelta, wake } = options
  const vouchers = createVoucherVerifier()
  const derived = new Map<string, string>()
  const firstSeen = new Map<string, ChannelRecord>()

  /** The descriptor's facts against the route and the seller's policy; the id derived from them. */
  function checkDescriptor(p: SessionPayload, terms: PreparedTerms): PaymentError | undefined {
    const d = p.descriptor
    const mismatch = (what: string) =>
      new PaymentError('invalid_payload', `The channel's ${what} is not this route's.`)
    if (normalizeSuiAddress(d.payee) !== normalizeSuiAddress(terms.payTo)) return mismatch('payee')
    if (normalizeStructTag(d.coinType) !== normalizeStructTag(terms.asset)) return mismatch('coin')
    const operator = normalizeSuiAddress(d.operator)
    if (operator !== zeroAddress && operator !== seller) return mismatch('operator')
    if (d.gracePeriodMs < graceMs) return mismatch('grace period')
    // Derived once per channel and descriptor (a blake2b over BCS: about 0.2 ms).
    const key = `${p.channelId}|${d.coinType}|${d.payer}|${d.payee}|${d.salt}`
    let id = derived.get(key)
    if (id === undefined) {
      id = channelIdOf({
        packageId,
        registry,
        coinType: d.coinType,
        payer: d.payer,
        payee: d.payee,
        salt: fromHex(d.salt.slice(2)),
      })
      if (derived.size >= 10_000) derived.delete(derived.keys().next().value as string)
      derived.set(key, id)
    }
    if (id !== normalizeSuiAddress(p.channelId)) {
      return new PaymentError(
        'invalid_payload',
        'The channel id is not derived from its descriptor.',
      )
    }
    return undefined
  }

  /** The channel on the ledger, checked against the descriptor (reads lag execution: retried). */
  async function readOpened(p: SessionPayload): Promise<ChannelState | PaymentError> {
    const read = await withRetries<ChannelState | undefined>(
      async () => {
        try {
          return { retry: false, value: await readChannel(client, p.channelId) }
        } catch {
          return { retry: true, value: undefined }
        }
      },
      { attempts: 5 },
    )
    const state = read.value
    if (state === undefined) {
      return new PaymentError('channel_not_found', 'No such channel on the ledger.')
    }
    const d = p.descriptor
    const same =
      state.payer === normalizeSuiAddress(d.payer) &&
      state.payee === normalizeSuiAddress(d.payee) &&
      state.operator === normalizeSuiAddress(d.operator) &&
      state.signer === d.signerPublicKey.slice(2) &&
      state.graceMs >= BigInt(graceMs) &&
      normalizeStructTag(state.coinType) === normalizeStructTag(d.coinType)
    if (!same) return new PaymentError('invalid_payload', 'The channel is not the one described.')
    if (state.closed || state.closeRequestedMs > 0n) {
      return new PaymentError('channel_finalized', 'The channel is closing or closed.')
    }
    return state
  }

  /** The channel's books, tracking it from the ledger when this seller has not seen it yet. */
  async function channelOf(p: SessionPayload): Promise<ChannelRecord | PaymentError> {
    const channelId = normalizeSuiAddress(p.channelId)
    // A channel's signer, payer and coin never change: a voucher is checked against the record
    // first read (its state and amounts are the store's to judge, atomically, as it accepts).
    const seen = minVoucherDelta === undefined ? firstSeen.get(channelId) : undefined
    if (seen !== undefined) return seen
    const known = await store.get(channelId)
    if (known !== undefined) {
      if (firstSeen.size >= 10_000) firstSeen.delete(firstSeen.keys().next().value as string)
      firstSeen.set(channelId, known)
      return known
    }
    const state = await readOpened(p)
    if (isPaymentError(state)) return state
    return store.track({
      channelId: state.id,
      payer: state.payer,
      payee: state.payee,
      coinType: state.coinType,
      signer: state.signer,
      deposit: state.deposited,
      settled: state.settled,
    })
  }

  /** Keeps a newer record of a channel this process has seen (its amounts, its state). */
  function remember(channel: ChannelRecord): void {
    if (firstSeen.has(channel.channelId)) firstSeen.set(channel.channelId, channel)
  }

  /** Checks a voucher's signature and raise; undefined when it may be taken. */
  async function checkVoucher(
    channel: ChannelRecord,
    cumulative: bigint,
    signature: string,
  ): Promise<PaymentError | undefined> {
    const signed = await vouchers.verify(
      {
        channelId: channel.channelId,
        cumulativeAmount: cumulative,
        signature: hexToBytes(signature.slice(2)),
      },
      hexToBytes(channel.signer),
    )
    if (!signed) {
      return new PaymentError('voucher_invalid', "The voucher is not signed by the channel's key.")
    }
    const delta = minVoucherDelta
    if (
      delta !== undefined &&
      cumulative > channel.highest &&
      cumulative - channel.highest < delta
    ) {
      return new PaymentError(
        'delta_too_small',
        `A voucher must raise the last by ${delta} at least.`,
      )
    }
    return undefined
  }

  /** Records a checked voucher's amount as used (the highest kept), with a call's hold. */
  async function recordVoucher(
    channel: ChannelRecord,
    cumulative: bigint,
    signature: string,
    hold?: HoldRequest,
  ): Promise<TakenVoucher | PaymentError> {
    const accepted = await store.acceptVoucher(
      channel.channelId,
      cumulative,
      signature.slice(2),
      hold,
    )
    if (accepted.status !== 'unknown') remember(accepted.channel)
    switch (accepted.status) {
      case 'accepted':
        wake(channel.channelId)
        return {
          fresh: true,
          channel: accepted.channel,
          ...(accepted.hold === undefined ? {} : { hold: accepted.hold }),
        }
      case 'same':
        return { fresh: false, channel: accepted.channel }
      case 'over_deposit':
        return new PaymentError('amount_exceeds_deposit', 'The voucher is above the deposit.', {
          details: { deposit: accepted.channel.deposit.toString() },
        })
      case 'not_open':
        return new PaymentError('channel_finalized', 'The channel is closing or closed.')
      case 'unknown':
        return new PaymentError('channel_not_found', 'No such channel.')
    }
  }

  /** Checks a voucher and records it (see {@link checkVoucher} and {@link recordVoucher}). */
  async function takeVoucher(
    channel: ChannelRecord,
    amount: string,
    signature: string,
    hold?: HoldRequest,
  ): Promise<TakenVoucher | PaymentError> {
    const cumulative = BigInt(amount)
    const wrong = await checkVoucher(channel, cumulative, signature)
    return wrong ?? recordVoucher(channel, cumulative, signature, hold)
  }

  /** Per channel, the calls' holds this process is writing early: their highest amount, their sum. */
  const writing = new Map<string, { above: bigint; held: bigint }>()

  /**
   * A voucher taken while the handler starts, when the channel's books as this process last saw
   * them show it will be taken — the channel open and the amount within its deposit (a deposit only
   * grows): its signature checked now, its step of the store started and not awaited, so the
   * handler's work (an upstream request, a model's answer) starts while the voucher is made
   * durable. A store that writes inline (SQLite) would hold the handler up as much as before: its
   * step starts on the next turn of the event loop, after the handler sent its upstream request, or
   * at the first call of `record` if that comes first (`recorded` follows it). Undefined when the voucher must be taken
   * first.
   *
   * For a metered call (`for: 'unit'`), the hold, if any, is its first unit's price, taken if the
   * headroom covers it and not otherwise: the voucher goes early whatever its headroom, and should
   * the store refuse it after all (the channel began to close meanwhile), the answer's units are
   * spent only within what earlier vouchers cover, as for a channel that closes while an answer
   * streams. For a call priced per request (`for: 'call'`, the default), whose answer waits for
   * `recorded` (`PaymentBooks.durable`): only an amount above every one this process has taken or
   * is writing (a repeated voucher is still refused before any work starts) whose headroom covers
   * the hold as this process sees it, its own early holds counted (a voucher that raises too
   * little is too). The map of those holds is as large as the channels with a call being written,
   * at most one entry per channel.
   */
  async function earlyVoucher(
    channel: ChannelRecord,
    p: Extract<SessionPayload, { action: 'open' | 'voucher' }>,
    hold?: HoldRequest,
    use: { for: 'call' | 'unit' } = { for: 'call' },
  ): Promise<EarlyVoucher | PaymentError | undefined> {
    const cumulative = BigInt(p.cumulativeAmount)
    if (channel.state !== 'open' || cumulative > channel.deposit) return undefined
    const gated = hold !== undefined && use.for === 'call'
    const channelId = channel.channelId
    // A call's hold goes early only on a new amount whose headroom, as this process sees it (its
    // own early holds counted), covers the price: what the store will then accept unless another
    // process took that headroom meanwhile.
    const covers = (amount: bigint): boolean => {
      const w = writing.get(channelId)
      return (
        cumulative > channel.highest &&
        (w === undefined || cumulative > w.above) &&
        cumulative - channel.spent - channel.held - (w?.held ?? 0n) >= amount
      )
    }
    if (gated && !covers(hold.amount)) return undefined
    const wrong = await checkVoucher(channel, cumulative, p.signature)
    if (wrong !== undefined) return wrong
    if (hold !== undefined) {
      // Checked again: the same amount, or another hold, may have come in meanwhile.
      if (gated && !covers(hold.amount)) return undefined
      const w = writing.get(channelId) ?? { above: 0n, held: 0n }
      w.above = cumulative > w.above ? cumulative : w.above
      w.held += hold.amount
      writing.set(channelId, w)
    }
    let started: Promise<TakenVoucher | PaymentError> | undefined
    const record = () => {
      if (started === undefined) {
        started = recordVoucher(channel, cumulative, p.signature, hold)
        if (hold !== undefined) {
          const amount = hold.amount
          const written = () => {
            const w = writing.get(channelId)
            if (w === undefined) return
            w.held -= amount
            if (w.held <= 0n) writing.delete(channelId)
          }
          started.then(written, written)
        }
        // Awaited by the answer's meter or the call's books; never left unheard.
        started.catch(() => {})
      }
      return started
    }
    // A store that writes inline would hold the handler up by its write: it starts on the next turn
    // of the event loop, once the handler has sent its upstream request, while the upstream works.
    const recorded =
      store.writesInline !== true
        ? record()
        : new Promise<TakenVoucher | PaymentError>((resolve) =>
            afterThisTurn(() => resolve(record())),
          )
    return { record, recorded }
  }

  return {
    checkDescriptor,
    readOpened,
    channelOf,
    takeVoucher,
    earlyVoucher,
    remember,
    /** Forgets a channel this process closed. */
    forget: (channelId: string) => firstSeen.delete(channelId),
  }
}
