/**
 * What a seller knows of each session channel, kept where every process of the seller sees it,
 * and the rules that keep a session's money safe:
 *
 * - each voucher amount is accepted once (a repeat is `same`), never above the deposit, only while
 *   the channel is open; the highest is kept with its signature (what settlement needs) — and it
 *   is durable before anything it pays for is served;
 * - a call first **holds** its price out of the headroom (`highest − spent − held`), atomically, so
 *   that concurrent calls in any number of processes never spend more than the highest voucher;
 * - a served call **commits** its hold into `spent` before its bytes leave; a call that fails, or
 *   whose buyer left before the work started, **releases** it — `spent` never grows for it;
 * - a hold whose process died lapses after its lease and is released by `releaseLapsed`.
 *
 * Amounts are base units as bigint, at most 2^63 − 1 (what every store keeps exactly).
 *
 * @module
 */
import { PaymentError } from '../errors.js'

/** The states of a channel as the seller sees it. */
export type ChannelPhase = 'open' | 'closing' | 'closed'

/** A channel: what the ledger says of it, and what the seller has accepted and served. */
export type ChannelRecord = {
  readonly channelId: string
  readonly payer: string
  readonly payee: string
  readonly coinType: string
  /** The session key that signs vouchers: 32-byte Ed25519 public key, hex. */
  readonly signer: string
  /** Base units deposited on the ledger in all. */
  readonly deposit: bigint
  /** Base units the payee has settled from it on the ledger. */
  readonly settled: bigint
  /** The highest voucher accepted (0 before any). */
  readonly highest: bigint
  /** Its signature, hex (settlement needs it); empty before any. */
  readonly highestSignature: string
  /** Base units served and committed. */
  readonly spent: bigint
  /** Base units held by calls in flight. */
  readonly held: bigint
  /** Calls (or units) committed. */
  readonly units: bigint
  readonly state: ChannelPhase
}

/** A channel's facts from the ledger, to start tracking it. */
export type OpenedChannel = Pick<
  ChannelRecord,
  'channelId' | 'payer' | 'payee' | 'coinType' | 'signer' | 'deposit' | 'settled'
>

/** A hold to take in the same atomic step as a voucher ({@link ChannelStore.acceptVoucher}). */
export type HoldRequest = {
  /** Base units to hold out of the headroom. */
  readonly amount: bigint
  readonly holdId: string
  /** When the hold lapses if its process dies, ms since the epoch. */
  readonly leaseUntil: number
}

/** What part of a hold {@link ChannelStore.settleHold} moves into `spent`; the rest is given back. */
export type HoldPart = {
  /** Base units, at most the hold's amount. */
  readonly amount: bigint
  /** The units they paid for. */
  readonly units: bigint
}

/** What came of the hold asked with an accepted voucher. */
export type HoldOutcome = Extract<HoldResult, { status: 'held' | 'insufficient' }>

/** The outcome of {@link ChannelStore.acceptVoucher}. */
export type VoucherAcceptance =
  /**
   * First seen: this amount is now used (only one caller, in any process, gets `accepted` for an
   * amount); stored as the highest when above it. With a hold asked, `hold` says whether it was
   * taken out of the headroom the voucher left (`channel` is then the record after both).
   */
  | { status: 'accepted'; channel: ChannelRecord; hold?: HoldOutcome }
  /** This amount was accepted before: a repeat, which must not pay a second call. */
  | { status: 'same'; channel: ChannelRecord }
  /** Above the deposit: the buyer must top up first. */
  | { status: 'over_deposit'; channel: ChannelRecord }
  /** The channel is closing or closed: no voucher is accepted any more. */
  | { status: 'not_open'; channel: ChannelRecord }
  | { status: 'unknown' }

/** The outcome of {@link ChannelStore.hold}. */
export type HoldResult =
  | { status: 'held'; holdId: string; channel: ChannelRecord }
  /** Not enough headroom: the buyer must sign a voucher for at least `required`. */
  | { status: 'insufficient'; required: bigint; channel: ChannelRecord }
  | { status: 'not_open'; channel: ChannelRecord }
  | { status: 'unknown' }

/** The outcome of {@link ChannelStore.spend}. */
export type SpendResult =
  | { status: 'spent'; channel: ChannelRecord }
  /** Not enough headroom: the buyer must sign a voucher for at least `required`. */
  | { status: 'insufficient'; required: bigint; channel: ChannelRecord }
  | { status: 'not_open'; channel: ChannelRecord }
  | { status: 'unknown' }

/** A store of channels; see the module's description. Every method is atomic. */
export type ChannelStore = {
  /**
   * Whether the store's steps run on the calling thread and block it while they write (SQLite).
   * The session method then starts a metered call's voucher write once the call's answer starts,
   * not while its handler sends the upstream request. Default: false (a step waits on I/O).
   */
  readonly writesInline?: boolean | undefined
  /** Starts tracking a channel opened on the ledger; an already tracked one is returned as it is. */
  track(channel: OpenedChannel): Promise<ChannelRecord>
  /** The channel, or undefined when it is not tracked. */
  get(channelId: string): Promise<ChannelRecord | undefined>
  /** The channels in `state` (the ones to settle, or to watch for a close request). */
  list(state: ChannelPhase): Promise<ChannelRecord[]>
  /**
   * Accepts a voucher whose signature the caller verified against the channel's `signer`, within
   * the deposit: each amount is accepted once (the buyer signs a new amount for each call, so a
   * voucher copied off the wire pays nothing), in any order — a call's voucher may arrive after a
   * later call's — and the highest is kept with its signature. Of several callers presenting the
   * same amount, one gets `accepted` and the others `same`, in every process.
   *
   * With `hold`, an accepted voucher also holds the call's price in the same atomic step (one
   * transaction, one round trip): what {@link ChannelStore.hold} would do right after. A voucher
   * that is not accepted holds nothing.
   */
  acceptVoucher(
    channelId: string,
    cumulativeAmount: bigint,
    signature: string,
    hold?: HoldRequest,
  ): Promise<VoucherAcceptance>
  /** Holds `amount` of the headroom for a call, until `now + leaseMs`. */
  hold(channelId: string, amount: bigint, holdId: string, leaseUntil: number): Promise<HoldResult>
  /**
   * Moves `amount` of the headroom straight into `spent` (one unit): a hold committed at once, in
   * one atomic step — a metered answer's unit, spent just before it is sent.
   */
  spend(channelId: string, amount: bigint): Promise<SpendResult>
  /** Moves a hold into `spent` (one unit). False when the hold is gone (released, or lapsed and swept). */
  commit(holdId: string): Promise<boolean>
  /**
   * Settles a hold in one atomic step: `part.amount` of it (`part.units` units) moved into `spent`
   * and the rest given back to the headroom — a metered answer's window of units, of which the
   * answer used that many. Answers the channel as the step left it; undefined, with nothing
   * changed, when the hold is gone (released, or lapsed and swept) or holds less than `part.amount`.
   */
  settleHold(holdId: string, part: HoldPart): Promise<ChannelRecord | undefined>
  /** Gives a hold back to the headroom. False when it is gone. */
  release(holdId: string): Promise<boolean>
  /** Releases every hold whose lease ended before `now`; returns how many. */
  releaseLapsed(now: number): Promise<number>
  /**
   * Records what the ledger shows: a larger deposit (a top-up), a settlement, a close requested
   * (`closing`) or done (`closed`). Amounts never go down.
   */
  observe(
    channelId: string,
    facts: { deposit?: bigint; settled?: bigint; state?: ChannelPhase },
  ): Promise<ChannelRecord | undefined>
  close(): Promise<void>
}

/** The refusal of a hold or a spend of `amount` the headroom of `channel` does not cover. */
export function insufficient(
  channel: ChannelRecord,
  amount: bigint,
): { status: 'insufficient'; required: bigint; channel: ChannelRecord } {
  return { status: 'insufficient', required: channel.spent + channel.held + amount, channel }
}

/** The largest amount a store keeps: 2^63 − 1. */
export const maxStoredAmount = 2n ** 63n - 1n

/** Refuses an amount no store keeps exactly. */
export function checkStoredAmount(amount: bigint, what: string): void {
  if (amount < 0n || amount > maxStoredAmount) {
    throw new PaymentError(
      'invalid_amount',
      `The ${what} must be between 0 and 2^63 − 1 base units.`,
    )
  }
}

/** Refuses a part of a hold no store keeps exactly. */
export function checkPart(part: HoldPart): void {
  checkStoredAmount(part.amount, 'committed amount')
  checkStoredAmount(part.units, 'committed units')
}

const stateOrder: Readonly<Record<ChannelPhase, number>> = { open: 0, closing: 1, closed: 2 }

/** The state after observing `next` (a channel never goes back to an earlier state). */
export function laterState(current: ChannelPhase, next: ChannelPhase | undefined): ChannelPhase {
  return next !== undefined && stateOrder[next] > stateOrder[current] ? next : current
}

/** A store in this process's memory (tests, one process). */
export function createMemoryChannelStore(): ChannelStore {
  const channels = new Map<string, ChannelRecord>()
  const holds = new Map<string, { channelId: string; amount: bigint; leaseUntil: number }>()
  const used = new Map<string, Set<bigint>>()
  const put = (channel: ChannelRecord) => {
    channels.set(channel.channelId, channel)
    return channel
  }
  /** Holds `hold.amount` of an open channel's headroom. */
  const holdIn = (channel: ChannelRecord, hold: HoldRequest): HoldOutcome => {
    if (channel.highest - channel.spent - channel.held < hold.amount) {
      return insufficient(channel, hold.amount)
    }
    holds.set(hold.holdId, {
      channelId: channel.channelId,
      amount: hold.amount,
      leaseUntil: hold.leaseUntil,
    })
    const held = put({ ...channel, held: channel.held + hold.amount })
    return { status: 'held', holdId: hold.holdId, channel: held }
  }
  /**
   * Gives a hold back, with `spend` of it (and its units) moved into `spent`: the channel after, or
   * undefined when the hold is gone or holds less than `spend`.
   */
  const drop = (holdId: string, spend?: HoldPart): ChannelRecord | undefined => {
    const held = holds.get(holdId)
    if (held === undefined || (spend !== undefined && spend.amount > held.amount)) return undefined
    holds.delete(holdId)
    const channel = channels.get(held.channelId) as ChannelRecord
    return put({
      ...channel,
      held: channel.held - held.amount,
      ...(spend === undefined
        ? {}
        : { spent: channel.spent + spend.amount, units: channel.units + spend.units }),
    })
  }
  return {
    async track(opened) {
      checkStoredAmount(opened.deposit, 'deposit')
      checkStoredAmount(opened.settled, 'settled amount')
      return (
        channels.get(opened.channelId) ??
        put({
          ...opened,
          highest: 0n,
          highestSignature: '',
          spent: 0n,
          held: 0n,
          units: 0n,
          state: 'open',
        })
      )
    },
    async get(channelId) {
      return channels.get(channelId)
    },
    async list(state) {
      return [...channels.values()].filter((c) => c.state === state)
    },
    async acceptVoucher(channelId, cumulativeAmount, signature, hold) {
      checkStoredAmount(cumulativeAmount, 'voucher amount')
      if (hold !== undefined) checkStoredAmount(hold.amount, 'price')
      const channel = channels.get(channelId)
      if (channel === undefined) return { status: 'unknown' }
      if (channel.state !== 'open') return { status: 'not_open', channel }
      if (cumulativeAmount > channel.deposit) return { status: 'over_deposit', channel }
      let amounts = used.get(channelId)
      if (amounts === undefined) {
        amounts = new Set()
        used.set(channelId, amounts)
      }
      if (amounts.has(cumulativeAmount)) return { status: 'same', channel }
      amounts.add(cumulativeAmount)
      const raised =
        cumulativeAmount <= channel.highest
          ? channel
          : put({ ...channel, highest: cumulativeAmount, highestSignature: signature })
      if (hold === undefined) return { status: 'accepted', channel: raised }
      const held = holdIn(raised, hold)
      return { status: 'accepted', channel: held.channel, hold: held }
    },
    async hold(channelId, amount, holdId, leaseUntil) {
      checkStoredAmount(amount, 'price')
      const channel = channels.get(channelId)
      if (channel === undefined) return { status: 'unknown' }
      if (channel.state !== 'open') return { status: 'not_open', channel }
      return holdIn(channel, { amount, holdId, leaseUntil })
    },
    async spend(channelId, amount) {
      checkStoredAmount(amount, 'price')
      const channel = channels.get(channelId)
      if (channel === undefined) return { status: 'unknown' }
      if (channel.state !== 'open') return { status: 'not_open', channel }
      if (channel.highest - channel.spent - channel.held < amount) {
        return insufficient(channel, amount)
      }
      const spent = { ...channel, spent: channel.spent + amount, units: channel.units + 1n }
      return { status: 'spent', channel: put(spent) }
    },
    async commit(holdId) {
      return drop(holdId, { amount: holds.get(holdId)?.amount ?? 0n, units: 1n }) !== undefined
    },
    async settleHold(holdId, part) {
      checkPart(part)
      return drop(holdId, part)
    },
    async release(holdId) {
      return drop(holdId) !== undefined
    },
    async releaseLapsed(now) {
      let count = 0
      for (const [holdId, held] of holds) {
        if (held.leaseUntil < now && drop(holdId) !== undefined) count++
      }
      return count
    },
    async observe(channelId, facts) {
      const channel = channels.get(channelId)
      if (channel === undefined) return undefined
      return put({
        ...channel,
        deposit:
          facts.deposit !== undefined && facts.deposit > channel.deposit
            ? facts.deposit
            : channel.deposit,
        settled:
          facts.settled !== undefined && facts.settled > channel.settled
            ? facts.settled
            : channel.settled,
        state: laterState(channel.state, facts.state),
      })
    },
    async close() {},
  }
}
