/**
 * `createSessionFetch()`: the buyer of MPP sessions (docs/protocol.md §7). A `fetch` that, when a
 * seller's 402 offers a session on a package and registry the buyer pinned, opens a payment channel
 * once (the wallet signs the open; the deposit counts against the wallet's limits when it is made)
 * and then pays each call with a voucher signed by the channel's own session key — no ledger
 * transaction per call. Vouchers are cumulative: each call signs a new amount, what was signed
 * before plus its price, covered by the {@link ChannelBook}'s mark before it is sent (the mark is
 * written a block of calls ahead, so most calls write nothing). When the seller says the vouchers do
 * not cover a call (`insufficient-balance`), the buyer signs the amount asked, within the deposit;
 * beyond it, it tops up, within `maxDeposit`. `close` ends a channel cooperatively: the seller
 * captures what was spent, the rest of the deposit comes back and is restored to the limits.
 *
 * Concurrent calls on one channel sign ahead by at most the prices of the calls in flight (each
 * takes `signed + price` atomically), and may reach the seller in any order: the seller takes each
 * amount once. Answers metered per unit (streams paid per token) share their channel's window:
 * the buyer signs about `streamAhead` units per answer streaming beyond those received on all of
 * them, within the deposit, one raise in flight per channel (`createStreamWindow`).
 *
 * This module pays the calls and keeps metered answers' vouchers ahead; the offers it reads and
 * checks are sessionOffers.ts, what moves a channel's money (the channel a call is paid through, its
 * open, top-ups, close and withdrawal) is channelFunds.ts, and its vouchers and the amounts they are
 * for, channelVouchers.ts.
 *
 * @module
 */
import type { ClientWithCoreApi } from '@mysten/sui/client'
import type { Signer } from '@mysten/sui/cryptography'
import { normalizeSuiAddress } from '@mysten/sui/utils'
import { PaymentError } from '../errors.js'
import { prepareCredentials } from '../mpp.js'
import { type ChannelBook, type ChannelEntry, createChannelBook } from './channelBook.js'
import { createChannelFunds } from './channelFunds.js'
import { createChannelVouchers } from './channelVouchers.js'
import type { WalletLimits } from './limits.js'
import { watchMeteredAnswer } from './meteredAnswer.js'
import {
  createOfferCache,
  createOfferChecks,
  problemOf,
  type SessionOffer,
  sessionOffer,
} from './sessionOffers.js'
import { createStreamWindow, type StreamWindow } from './streamWindow.js'

/** A channel package and registry the buyer trusts, for one network (the seller names its own). */
export type PinnedChannels = {
  readonly network: string
  readonly package: string
  readonly registry: string
}

/** Options of {@link createSessionFetch}. */
export type SessionFetchOptions = {
  /** The wallet: signs the transactions that open and top up a channel (never a voucher). */
  readonly signer: Signer
  /** The ledger's client: the channel is opened and topped up through it. */
  readonly client: ClientWithCoreApi
  /** The channel packages the buyer trusts; an offer naming another is refused before signing. */
  readonly pinned: readonly PinnedChannels[]
  /** Most one channel may hold, base units (the sum of its deposits). */
  readonly maxDeposit: bigint
  /** The deposit of a new channel: default the seller's suggestion, else 100 calls, within `maxDeposit`. */
  readonly deposit?: ((price: bigint, suggested: bigint | undefined) => bigint) | undefined
  /** Most one call (unit) may cost, base units. Default: no cap beyond `maxDeposit`. */
  readonly maxPrice?: bigint | undefined
  /** Counts each deposit when it is made; what a close gives back is restored. */
  readonly limits?: WalletLimits | undefined
  /** Where channels are kept. Default: `sessions.json` in the tollgate home. */
  readonly book?: ChannelBook | undefined
  readonly fetch?: typeof globalThis.fetch | undefined
  /**
   * On answers metered per unit (streams paid per token), how many units the buyer signs ahead of
   * the events it has received, per answer streaming (the answers streaming at once on a channel
   * share one window of that many units each), within the deposit. Default 64.
   */
  readonly streamAhead?: bigint | undefined
  /** Told when raising a voucher during a metered answer fails (the seller then ends it early). */
  readonly onStreamError?: ((error: unknown) => void) | undefined
  /** Clock in ms. Default `Date.now`. */
  readonly now?: (() => number) | undefined
}

/** What a close did. */
export type SessionClose = {
  readonly channelId: string
  /** What the seller captured in all. */
  readonly spent: bigint
  /** What came back to the wallet. */
  readonly refunded: bigint
  readonly digest: string | undefined
}

/** What {@link SessionFetch.withdraw} did. */
export type SessionWithdrawal =
  /** The close is asked (or was already): withdraw again after `graceEndsMs` (the ledger's clock). */
  | { readonly status: 'requested' | 'waiting'; readonly graceEndsMs: bigint }
  /** Everything left came back. */
  | { readonly status: 'withdrawn'; readonly refunded: bigint; readonly digest: string }

/** What one call of {@link SessionFetch.forCall} adds to the buyer's options. */
export type SessionCallOptions = {
  /**
   * Counts a deposit (an open or a top-up) this call makes, instead of the buyer's `limits`; what
   * a close gives back is still restored through the buyer's `limits.keep`.
   */
  readonly limits?: WalletLimits | undefined
  /**
   * Checks the session offer (price per call, payee) before anything is signed, beside the pinned
   * packages and `maxPrice`: throw to refuse it.
   */
  readonly check?: ((offer: { amount: bigint; payTo: string }) => void) | undefined
  /**
   * A session offer on a channel package or registry that is not pinned: `refuse` it
   * (`terms_mismatch`, the default), or `pass` the 402 back as it is, for the caller to pay it
   * another way (the MCP server pays it per call).
   */
  readonly unpinned?: 'refuse' | 'pass' | undefined
  /**
   * A session priced per streamed unit (`unitType` other than `request`, the cost of a call not
   * known before it streams): `take` it (the default), or `pass` the 402 back as it is, for the
   * caller to pay it per call (the MCP server does: its budgets bound each call before it is made).
   */
  readonly metered?: 'take' | 'pass' | undefined
}

/** The session buyer. */
export type SessionFetch = {
  /** A `fetch` that pays a session offer through a channel (other 402s are returned as they are). */
  fetch(input: string | URL, init?: RequestInit): Promise<Response>
  /**
   * The same `fetch` over the same channels, with `call`'s deposit accounting and offer check: for
   * a caller that pays on behalf of several budgets (an MCP server's tools).
   */
  forCall(call: SessionCallOptions): (input: string | URL, init?: RequestInit) => Promise<Response>
  /** Closes a channel cooperatively at the seller it was opened with. */
  close(channelId: string): Promise<SessionClose>
  /**
   * The payer's way out when the seller does not close: the first call asks to close on the
   * ledger (the seller may still settle what was spent during the grace period); a call after
   * the grace period takes back everything left.
   */
  withdraw(channelId: string): Promise<SessionWithdrawal>
  /** The channels in the book. */
  list(): Promise<ChannelEntry[]>
}

/** How many times a call is paid again after a refusal (a used voucher, a short headroom). */
const maxRepays = 4

/**
 * Creates the session buyer; see the module's description.
 *
 * @example
 * ```ts
 * const sessions = createSessionFetch({ signer: wallet, client, maxDeposit: 1_000_000n,
 *   pinned: [{ network: 'mainnet', package: pkg, registry }] })
 * const answer = await sessions.fetch('https://api.example.com/v1/quote')
 * ```
 */
export function createSessionFetch(options: SessionFetchOptions): SessionFetch {
  const { signer, client } = options
  const book = options.book ?? createChannelBook()
  const send = options.fetch ?? globalThis.fetch
  const now = options.now ?? Date.now
  const payer = normalizeSuiAddress(signer.toSuiAddress())

  const { cachedOffer, remember } = createOfferCache(now)
  const { isPinned, checkOffer } = createOfferChecks(options)
  const vouchers = createChannelVouchers(book)
  const { keysOf, voucher, nextAmount, lastSigned } = vouchers

  /** Per channel: the window its metered answers share (made by the first of them). */
  const windows = new Map<string, StreamWindow>()

  const { channelFor, topUp, close, withdraw } = createChannelFunds({
    signer,
    client,
    book,
    payer,
    options,
    now,
    vouchers,
    present,
    onClosed: (channelId) => windows.delete(channelId),
  })

  /** Each offer's credentials, its challenge's echo written once (see `prepareCredentials`). */
  const prepared = new WeakMap<SessionOffer, ReturnType<typeof prepareCredentials>>()
  function credentialsOf(offer: SessionOffer): ReturnType<typeof prepareCredentials> {
    let credentialOf = prepared.get(offer)
    if (credentialOf === undefined) {
      credentialOf = prepareCredentials(offer.challenge)
      prepared.set(offer, credentialOf)
    }
    return credentialOf
  }

  /** Sends `init` to the channel's URL (or `url`) with a session credential for `payload`. */
  async function present(
    c: ChannelEntry,
    init: RequestInit,
    payload: Record<string, unknown>,
    url = c.url,
  ): Promise<Response> {
    let offer = cachedOffer(url)
    if (offer === undefined) {
      const first = await send(url, { ...init, method: init.method ?? 'GET' })
      offer = first.status === 402 ? sessionOffer(first) : undefined
      if (offer === undefined) {
        throw new PaymentError('NO_PAYABLE_REQUIREMENT', 'The seller no longer offers a session.')
      }
      remember(url, offer)
    }
    const headers = new Headers(init.headers)
    headers.set(
      'authorization',
      credentialsOf(offer)({
        channelId: c.channelId,
        descriptor: keysOf(c).descriptor,
        ...payload,
      }),
    )
    const response = await send(url, { ...init, headers })
    const fresh = response.status === 402 ? sessionOffer(response) : undefined
    if (fresh !== undefined) remember(url, fresh)
    return response
  }

  /**
   * Raises the voucher of `c` during a metered answer (a body-less `POST` to the route, answered
   * 204), as `RaiseVoucher` says: to `need` at least, topping up when the deposit is short,
   * and to `wish` within the deposit; with nothing owed (`need` 0), never topping up, and sending
   * nothing (`0n`) when the deposit has no room left.
   */
  async function raise(
    c: ChannelEntry,
    url: string,
    need: bigint,
    wish: bigint,
    limits: WalletLimits | undefined,
  ): Promise<bigint> {
    let entry = (await book.get(c.channelId)) ?? c
    const signed = lastSigned(c.channelId) ?? BigInt(entry.signed)
    let deposit = BigInt(entry.deposit)
    let target = wish < deposit ? wish : deposit
    if (need === 0n) {
      if (target <= signed) return 0n
    } else {
      if (target < need) target = need
      if (target <= signed) target = signed + 1n
      if (target > deposit) {
        entry = await topUp(entry, target, limits)
        deposit = BigInt(entry.deposit)
      }
    }
    const { amount } = await nextAmount(entry, { atLeast: target, price: 1n, raise: true })
    const bare = new URL(url)
    bare.search = ''
    const response = await present(
      entry,
      { method: 'POST' },
      { action: 'voucher', ...(await voucher(entry, amount)) },
      bare.toString(),
    )
    if (response.status !== 204) {
      throw new PaymentError(
        'PAYMENT_REJECTED',
        `The seller answered a voucher with ${response.status}.`,
      )
    }
    return amount
  }

  /**
   * A metered answer's body, watched to keep the channel's vouchers ahead of it; a call served
   * otherwise is counted in the channel's window, if it has one.
   */
  function metered(
    response: Response,
    c: ChannelEntry,
    url: string,
    amount: bigint,
    price: bigint,
    limits: WalletLimits | undefined,
  ): Response {
    const type = response.headers.get('content-type') ?? ''
    let window = windows.get(c.channelId)
    if (!response.ok || !type.includes('text/event-stream')) {
      if (response.ok) window?.served({ amount, price })
      return response
    }
    if (window === undefined) {
      // What was signed before counts as spent until a receipt says otherwise.
      window = createStreamWindow({
        ahead: options.streamAhead ?? 64n,
        consumed: amount - price,
        onError: options.onStreamError,
      })
      windows.set(c.channelId, window)
    }
    const stream = window.open({
      amount,
      price,
      raise: (need, wish) => raise(c, url, need, wish, limits),
    })
    return watchMeteredAnswer(response, stream)
  }

  /**
   * Pays one call on channel `c`, answering a refusal (a short headroom, a used voucher). A call
   * whose answer is metered per unit signs its channel's window ahead in its own voucher (within
   * the deposit), as the raise its first units would otherwise send at once.
   */
  async function payCall(
    c: ChannelEntry,
    url: string,
    init: RequestInit,
    price: bigint,
    limits: WalletLimits | undefined,
    perUnit: boolean,
  ): Promise<Response> {
    let entry = c
    const window = perUnit ? windows.get(c.channelId) : undefined
    let ahead = window?.opening(price) ?? 0n
    const deposit = BigInt(entry.deposit)
    if (ahead > deposit) ahead = deposit
    let { amount, first } = await nextAmount(entry, { price, atLeast: ahead, raise: ahead > 0n })
    let action = first && entry.openDigest !== undefined ? 'open' : 'voucher'
    for (let attempt = 0; ; attempt++) {
      const payload = {
        action,
        ...(action === 'open' ? { type: 'digest', digest: entry.openDigest } : {}),
        ...(await voucher(entry, amount, perUnit ? undefined : price)),
      }
      const response = await present(entry, init, payload, url)
      if (response.status !== 402 || attempt >= maxRepays)
        return metered(response, entry, url, amount, price, limits)
      const problem = await problemOf(response)
      if (problem === undefined) return response
      const { code, requiredCumulative } = problem
      action = 'voucher'
      if (code === 'insufficient_balance' && requiredCumulative !== undefined) {
        const required = BigInt(requiredCumulative)
        if (required > BigInt(entry.deposit)) entry = await topUp(entry, required, limits)
        ;({ amount } = await nextAmount(entry, { atLeast: required, price }))
      } else if (code === 'replay') {
        ;({ amount } = await nextAmount(entry, { price }))
      } else if (code === 'amount_exceeds_deposit') {
        entry = await topUp(entry, amount, limits)
        // Refused above the deposit, the amount was not used: it pays once the deposit covers it.
      } else {
        return response
      }
    }
  }

  /** The paying `fetch` of one call's options. */
  const fetchFor =
    (call: SessionCallOptions) =>
    async (input: string | URL, init: RequestInit = {}): Promise<Response> => {
      const url = String(input)
      // A live session offer for this URL is paid at once: one request per call.
      let offer = cachedOffer(url)
      if (offer !== undefined && call.metered === 'pass' && offer.request.unitType !== 'request') {
        offer = undefined
      }
      if (offer === undefined) {
        const first = await send(url, init)
        if (first.status !== 402) return first
        offer = sessionOffer(first)
        if (offer === undefined) return first
        if (!isPinned(offer) && call.unpinned === 'pass') return first
        if (offer.request.unitType !== 'request' && call.metered === 'pass') return first
        // Only a pinned offer is kept: an offer taken from the cache never needs its 402 again.
        if (isPinned(offer)) remember(url, offer)
      }
      checkOffer(offer, call)
      const limits = call.limits ?? options.limits
      const channel = await channelFor(url, offer, limits)
      const perUnit = offer.request.unitType !== 'request'
      return payCall(channel, url, init, BigInt(offer.request.amount), limits, perUnit)
    }

  return {
    fetch: fetchFor({}),
    forCall: fetchFor,
    close,
    withdraw,
    list: () => book.list(),
  }
}
