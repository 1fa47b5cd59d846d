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
 * @module
 */
import type { ClientWithCoreApi } from '@mysten/sui/client'
import type { Signer } from '@mysten/sui/cryptography'
import type { Transaction } from '@mysten/sui/transactions'
import { normalizeStructTag, normalizeSuiAddress, toHex } from '@mysten/sui/utils'
import { ed25519 } from '@noble/curves/ed25519.js'
import { z } from 'zod'
import { PaymentError } from '../errors.js'
import { formatAmount } from '../money.js'
import {
  type Challenge,
  decodeReceipt,
  mppHeaders,
  parseChallenges,
  serializeCredential,
} from '../mpp.js'
import {
  buildOpen,
  buildRequestClose,
  buildTopUp,
  buildWithdraw,
  readChannel,
} from '../session/channelTx.js'
import { channelIdOf, signVoucher, type VoucherSigner } from '../session/voucher.js'
import { nativeVoucherSigner } from '../session/voucherKeys.js'
import { sessionRequestSchema } from '../session/wire.js'
import { type ChannelBook, type ChannelEntry, createChannelBook } from './channelBook.js'
import type { WalletLimits } from './limits.js'
import { watchMeteredAnswer } from './meteredAnswer.js'
import { createStreamWindow, type StreamWindow } from './streamWindow.js'
import { createTurns, walletTurns } from './turns.js'

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
 * How many amounts the book's mark is written ahead (one write per block): `markBlock` calls'
 * prices, or for a raise during a metered answer, `markBlock` raises of its own step — never past
 * the deposit.
 */
const markBlock = 32n

const problemSchema = z.looseObject({
  code: z.string().max(64).optional(),
  requiredCumulative: z
    .string()
    .regex(/^[0-9]{1,20}$/)
    .optional(),
  acceptedCumulative: z
    .string()
    .regex(/^[0-9]{1,20}$/)
    .optional(),
})

/** What a new amount must be (see `nextAmount` in {@link createSessionFetch}). */
type NextAmount = {
  /** The least amount. Default 0. */
  readonly atLeast?: bigint | undefined
  /** How far above the last amount signed, at least: a call's price (default the channel's). */
  readonly price?: bigint | undefined
  /**
   * A raise during a metered answer, or a call voucher signing its window ahead: the mark's block
   * is of its own step, not of `price`.
   */
  readonly raise?: boolean | undefined
}

/** How many times a close refused while calls are still running is asked again. */
const closeRetries = 5

/** The problem document of a 402 (untrusted: schema-checked), or `undefined`. */
async function problemOf(response: Response): Promise<z.infer<typeof problemSchema> | undefined> {
  if (response.status !== 402) return undefined
  const problem = problemSchema.safeParse(
    await response
      .clone()
      .json()
      .catch(() => ({})),
  )
  return problem.success ? problem.data : undefined
}

/** Whether a refusal says calls are still running on the channel (`settlement_pending`). */
async function isPending(response: Response): Promise<boolean> {
  return (await problemOf(response))?.code === 'settlement_pending'
}

type SessionOffer = { challenge: Challenge; request: z.infer<typeof sessionRequestSchema> }

/** The session offer of a 402, if any (untrusted: schema-checked). */
function sessionOffer(response: Response): SessionOffer | undefined {
  const header = response.headers.get(mppHeaders.wwwAuthenticate)
  if (header === null) return undefined
  try {
    for (const challenge of parseChallenges(header)) {
      if (challenge.method !== 'sui' || challenge.intent !== 'session') continue
      const request = sessionRequestSchema.safeParse(challenge.request)
      if (request.success) return { challenge, request: request.data }
    }
  } catch {
    return undefined
  }
  return undefined
}

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

  /** Whether the offer's channel package and registry are pinned for its network. */
  function isPinned(offer: SessionOffer): boolean {
    const { methodDetails } = offer.request
    return options.pinned.some(
      (p) =>
        p.network === methodDetails.network &&
        normalizeSuiAddress(p.package) === normalizeSuiAddress(methodDetails.package) &&
        normalizeSuiAddress(p.registry) === normalizeSuiAddress(methodDetails.registry),
    )
  }

  function checkOffer(offer: SessionOffer, call: SessionCallOptions): void {
    const { amount } = offer.request
    if (!isPinned(offer)) {
      throw new PaymentError(
        'terms_mismatch',
        'The session offer names a channel package or registry this buyer has not pinned.',
      )
    }
    const price = BigInt(amount)
    if (options.maxPrice !== undefined && price > options.maxPrice) {
      throw new PaymentError(
        'PRICE_ABOVE_MAX',
        `${formatAmount(price)} USDC per call is above the cap of ${formatAmount(options.maxPrice)} USDC.`,
      )
    }
    call.check?.({ amount: price, payTo: normalizeSuiAddress(offer.request.recipient) })
  }

  /** Channels being opened, by what they are for: a concurrent call waits for the same one. */
  const opening = new Map<string, Promise<ChannelEntry>>()

  /** An open channel of this buyer's to the offer's payee, on its package, or a new one. */
  async function channelFor(
    url: string,
    offer: SessionOffer,
    limits: WalletLimits | undefined,
  ): Promise<ChannelEntry> {
    const { request } = offer
    const details = request.methodDetails
    const payee = normalizeSuiAddress(request.recipient)
    const coinType = normalizeStructTag(request.currency)
    const origin = new URL(url).origin
    const found = (await book.list()).find(
      (c) =>
        c.state === 'open' &&
        c.payer === payer &&
        c.payee === payee &&
        normalizeStructTag(c.coinType) === coinType &&
        c.package === normalizeSuiAddress(details.package) &&
        c.registry === normalizeSuiAddress(details.registry) &&
        new URL(c.url).origin === origin,
    )
    if (found !== undefined) return found
    const key = [payee, coinType, details.package, details.registry, origin].join(' ')
    let pending = opening.get(key)
    if (pending === undefined) {
      pending = open(url, offer, limits).finally(() => opening.delete(key))
      opening.set(key, pending)
    }
    return pending
  }

  async function open(
    url: string,
    offer: SessionOffer,
    limits: WalletLimits | undefined,
  ): Promise<ChannelEntry> {
    const { request } = offer
    const details = request.methodDetails
    const price = BigInt(request.amount)
    const suggested =
      request.suggestedDeposit === undefined ? undefined : BigInt(request.suggestedDeposit)
    let deposit = options.deposit?.(price, suggested) ?? suggested ?? price * 100n
    if (deposit > options.maxDeposit) deposit = options.maxDeposit
    if (deposit < price) {
      throw new PaymentError(
        'LIMIT_PER_SESSION',
        `A call costs ${formatAmount(price)} USDC, above the most a channel may hold (${formatAmount(options.maxDeposit)} USDC).`,
      )
    }
    const reservation = await limits?.reserve({
      amount: deposit,
      resource: url,
      label: 'session:open',
    })
    const sessionKey = ed25519.utils.randomSecretKey()
    const salt = crypto.getRandomValues(new Uint8Array(32))
    const channelId = channelIdOf({
      packageId: details.package,
      registry: details.registry,
      coinType: request.currency,
      payer,
      payee: request.recipient,
      salt,
    })
    const entry: ChannelEntry = {
      channelId,
      url,
      payer,
      payee: normalizeSuiAddress(request.recipient),
      coinType: normalizeStructTag(request.currency),
      package: normalizeSuiAddress(details.package),
      registry: normalizeSuiAddress(details.registry),
      network: details.network,
      price: price.toString(),
      salt: toHex(salt),
      sessionKey: toHex(sessionKey),
      gracePeriodMs: details.gracePeriodMs,
      deposit: deposit.toString(),
      signed: '0',
      spent: '0',
      state: 'opening',
      ...(reservation === undefined ? {} : { reservation: reservation.id }),
      openedAt: now(),
    }
    // Recorded before the deposit is signed: a crash from here on can still find the channel.
    await book.put(entry)
    const digest = await submit(() =>
      buildOpen({
        client,
        package: details.package,
        sender: payer,
        registry: details.registry,
        coinType: request.currency,
        deposit,
        payee: request.recipient,
        salt,
        signerPublicKey: ed25519.getPublicKey(sessionKey),
        graceMs: BigInt(details.gracePeriodMs),
      }),
    )
    if (digest === undefined) {
      await book.update(channelId, { state: 'closed' })
      await reservation?.release()
      throw new PaymentError('transaction_failed', 'The ledger refused to open the channel.')
    }
    await reservation?.settle(digest)
    const opened = await book.update(channelId, { state: 'open', openDigest: digest })
    return opened ?? entry
  }

  /**
   * Builds a transaction, signs it with the wallet and executes it: its digest, or `undefined` when
   * the ledger refused it (nothing moved).
   */
  function submit(build: () => Promise<Transaction>): Promise<string | undefined> {
    // In the wallet's turn, built when it comes: two transactions built at once would take their
    // funds and gas from the same coins.
    return walletTurns(signer, () => submitNow(build()))
  }

  async function submitNow(built: Promise<Transaction>): Promise<string | undefined> {
    const bytes = await (await built).build({ client })
    const { signature } = await signer.signTransaction(bytes)
    const result = await client.core.executeTransaction({
      transaction: bytes,
      signatures: [signature],
    })
    return result.$kind === 'Transaction' ? result.Transaction.digest : undefined
  }

  /** Per channel: its top-ups, one at a time. */
  const topUpTurns = createTurns<string>()

  /**
   * Tops a channel up by what takes its deposit to `needed` (at least), within `maxDeposit`. One
   * top-up runs at a time per channel, and one that comes after another finds the deposit it made:
   * calls and raises that all find the deposit short top it up once.
   */
  function topUp(
    entry: ChannelEntry,
    needed: bigint,
    limits: WalletLimits | undefined,
  ): Promise<ChannelEntry> {
    return topUpTurns(entry.channelId, async () => {
      const latest = (await book.get(entry.channelId)) ?? entry
      return BigInt(latest.deposit) >= needed ? latest : topUpNow(latest, needed, limits)
    })
  }

  async function topUpNow(
    entry: ChannelEntry,
    needed: bigint,
    limits: WalletLimits | undefined,
  ): Promise<ChannelEntry> {
    const deposit = BigInt(entry.deposit)
    let target = deposit * 2n > needed ? deposit * 2n : needed
    if (target > options.maxDeposit) target = options.maxDeposit
    if (target < needed) {
      throw new PaymentError(
        'LIMIT_PER_SESSION',
        `The channel would need ${formatAmount(needed)} USDC, above the most a channel may hold (${formatAmount(options.maxDeposit)} USDC).`,
      )
    }
    const amount = target - deposit
    const reservation = await limits?.reserve({
      amount,
      resource: entry.url,
      label: 'session:top-up',
    })
    const digest = await submit(async () =>
      buildTopUp({
        client,
        package: entry.package,
        sender: payer,
        channel: await readChannel(client, entry.channelId),
        amount,
      }),
    )
    if (digest === undefined) {
      await reservation?.release()
      throw new PaymentError('transaction_failed', 'The ledger refused the top-up.')
    }
    await reservation?.settle(digest)
    await present(
      entry,
      { method: 'POST' },
      { action: 'topUp', type: 'digest', digest, additionalDeposit: amount.toString() },
    )
    const topUp = {
      amount: amount.toString(),
      ...(reservation === undefined ? {} : { reservation: reservation.id }),
    }
    const topUps = [...(entry.topUps ?? []), topUp]
    return (await book.update(entry.channelId, { deposit: target.toString(), topUps })) ?? entry
  }

  /**
   * Restores to the wallet's limits what came back of a channel's deposits: its spends (the open,
   * then each top-up) are lowered to what was `spent` of them, in that order.
   */
  async function restore(entry: ChannelEntry, spent: bigint): Promise<void> {
    const topUps = entry.topUps ?? []
    const opened = BigInt(entry.deposit) - topUps.reduce((t, u) => t + BigInt(u.amount), 0n)
    let left = spent
    for (const deposit of [{ amount: opened, reservation: entry.reservation }, ...topUps]) {
      const amount = BigInt(deposit.amount)
      const kept = left < amount ? left : amount
      left -= kept
      if (deposit.reservation !== undefined) await options.limits?.keep(deposit.reservation, kept)
    }
  }

  /** Per channel: its descriptor as the seller checks it, and its session key's signer. */
  const keys = new Map<string, { descriptor: Record<string, unknown>; signer: VoucherSigner }>()
  function keysOf(c: ChannelEntry) {
    let found = keys.get(c.channelId)
    if (found === undefined) {
      const secret = Uint8Array.from(Buffer.from(c.sessionKey, 'hex'))
      found = {
        descriptor: {
          payer: c.payer,
          payee: c.payee,
          operator: normalizeSuiAddress('0x0'),
          coinType: c.coinType,
          salt: `0x${c.salt}`,
          signerPublicKey: `0x${toHex(ed25519.getPublicKey(secret))}`,
          gracePeriodMs: c.gracePeriodMs,
        },
        signer: nativeVoucherSigner(secret),
      }
      keys.set(c.channelId, found)
    }
    return found
  }

  /** A voucher for `cumulative`, signed by the channel's session key. */
  async function voucher(c: ChannelEntry, cumulative: bigint) {
    const signed = await signVoucher(keysOf(c).signer, c.channelId, cumulative)
    return { cumulativeAmount: cumulative.toString(), signature: `0x${toHex(signed.signature)}` }
  }

  /** Session offers by URL, reused until shortly before their challenge expires. */
  const offers = new Map<string, SessionOffer>()
  function cachedOffer(url: string): SessionOffer | undefined {
    const offer = offers.get(url)
    const expires = offer?.challenge.expires
    if (offer === undefined || expires === undefined) return undefined
    if (Date.parse(expires) - now() > 5_000) return offer
    offers.delete(url)
    return undefined
  }
  function remember(url: string, offer: SessionOffer): void {
    if (offers.size >= 1_000) offers.delete(offers.keys().next().value as string)
    offers.set(url, offer)
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
      serializeCredential({
        challenge: offer.challenge,
        payload: { channelId: c.channelId, descriptor: keysOf(c).descriptor, ...payload },
      }),
    )
    const response = await send(url, { ...init, headers })
    const fresh = response.status === 402 ? sessionOffer(response) : undefined
    if (fresh !== undefined) remember(url, fresh)
    return response
  }

  /** Per channel: the last amount signed by this process (after a restart, the book's mark). */
  const counters = new Map<string, bigint>()

  /**
   * A new amount for `c`, never used before, and recorded before it is used: the book keeps a mark
   * at or above every amount signed, written a block ahead (one write per {@link markBlock}
   * amounts), so a restart resumes above it. A call's block is {@link markBlock} of its price; a
   * raise's, {@link markBlock} of its own step (the mark runs at most that far beyond what is
   * signed, and never past the deposit).
   */
  async function nextAmount(
    c: ChannelEntry,
    next: NextAmount = {},
  ): Promise<{ amount: bigint; first: boolean }> {
    const { atLeast = 0n, price = BigInt(c.price) } = next
    const before = counters.get(c.channelId)
    const current = before ?? BigInt(c.signed)
    const amount = current + price > atLeast ? current + price : atLeast
    counters.set(c.channelId, amount)
    let mark = marks.get(c.channelId) ?? BigInt(c.signed)
    if (amount > mark) {
      const deposit = BigInt(c.deposit)
      const block = next.raise ? amount - current : price
      const ahead = amount + (markBlock - 1n) * block
      const target = ahead <= deposit ? ahead : amount > deposit ? amount : deposit
      const entry = await book.sign(c.channelId, () => target)
      mark = BigInt(entry.signed)
      marks.set(c.channelId, mark)
    }
    return { amount, first: before === undefined && current === 0n }
  }
  const marks = new Map<string, bigint>()

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
    const signed = counters.get(c.channelId) ?? BigInt(entry.signed)
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

  /** Per channel: the window its metered answers share (made by the first of them). */
  const windows = new Map<string, StreamWindow>()

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
        ...(await voucher(entry, amount)),
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
    async close(channelId) {
      const entry = await book.get(channelId)
      if (entry === undefined || entry.state !== 'open') {
        throw new PaymentError(
          'invalid_options',
          'No open channel with that id in the session book.',
        )
      }
      // The highest amount signed (at most the deposit): it covers everything spent.
      const deposit = BigInt(entry.deposit)
      const signed = counters.get(channelId) ?? BigInt(entry.signed)
      const payload = {
        action: 'close',
        ...(await voucher(entry, signed < deposit ? signed : deposit)),
      }
      let response = await present(entry, { method: 'POST' }, payload)
      // Calls still running on the channel (the last answer's price is committed a moment after
      // the buyer read it): the close is asked again, a few times.
      for (let attempt = 1; attempt <= closeRetries && (await isPending(response)); attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 100 * attempt))
        response = await present(entry, { method: 'POST' }, payload)
      }
      if (response.status !== 204) {
        throw new PaymentError(
          'PAYMENT_REJECTED',
          `The seller answered the close with ${response.status}.`,
        )
      }
      const receipt = decodeReceipt(response.headers.get(mppHeaders.paymentReceipt) ?? '')
      const state = await readChannel(client, channelId)
      const spent = state.settled
      const refunded = state.deposited - spent
      await book.update(channelId, { state: 'closed', spent: spent.toString() })
      windows.delete(channelId)
      // What came back is no longer spent, for the wallet's limits.
      await restore(entry, spent)
      return {
        channelId,
        spent,
        refunded,
        digest: typeof receipt.txHash === 'string' ? receipt.txHash : undefined,
      }
    },
    async withdraw(channelId) {
      const entry = await book.get(channelId)
      if (entry === undefined || entry.state === 'closed') {
        throw new PaymentError(
          'invalid_options',
          'No open channel with that id in the session book.',
        )
      }
      const state = await readChannel(client, channelId)
      const common = { client, package: entry.package, sender: payer, channel: state }
      if (state.closeRequestedMs === 0n) {
        if ((await submit(() => buildRequestClose(common))) === undefined) {
          throw new PaymentError('transaction_failed', 'The ledger refused the close request.')
        }
        const after = await readChannel(client, channelId)
        return { status: 'requested', graceEndsMs: after.closeRequestedMs + after.graceMs }
      }
      const graceEndsMs = state.closeRequestedMs + state.graceMs
      const refunded = state.escrow
      const digest = await submit(() => buildWithdraw(common))
      // Refused before the grace period ends: nothing moved.
      if (digest === undefined) return { status: 'waiting', graceEndsMs }
      await book.update(channelId, { state: 'closed', spent: state.settled.toString() })
      windows.delete(channelId)
      await restore(entry, state.settled)
      return { status: 'withdrawn', refunded, digest }
    },
    list: () => book.list(),
  }
}
