/**
 * What moves the money of the session buyer's channels (docs/protocol.md §7): the channel a call is
 * paid through (an open one of the buyer's to the offer's payee, or a new one, opened once however
 * many calls ask for it at once); the open (the deposit counted against the wallet's limits when it
 * is made, the channel recorded in the {@link ChannelBook} before it is signed); the top-ups (one at
 * a time per channel, within `maxDeposit`, each told to the seller); the cooperative close at the
 * seller and the payer's withdrawal when the seller does not close, what comes back restored to the
 * limits. Every ledger transaction is signed by the wallet, in the wallet's turn.
 *
 * @module
 * @internal
 */
import type { ClientWithCoreApi } from '@mysten/sui/client'
import type { Signer } from '@mysten/sui/cryptography'
import type { Transaction } from '@mysten/sui/transactions'
import { normalizeStructTag, normalizeSuiAddress, toHex } from '@mysten/sui/utils'
import { ed25519 } from '@noble/curves/ed25519.js'
import { PaymentError } from '../errors.js'
import { formatAmount } from '../money.js'
import { decodeReceipt, mppHeaders } from '../mpp.js'
import {
  buildOpen,
  buildRequestClose,
  buildTopUp,
  buildWithdraw,
  readChannel,
} from '../session/channelTx.js'
import { channelIdOf } from '../session/voucher.js'
import type { ChannelBook, ChannelEntry } from './channelBook.js'
import type { ChannelVouchers } from './channelVouchers.js'
import type { WalletLimits } from './limits.js'
import { isPending, type SessionOffer } from './sessionOffers.js'
import type { SessionClose, SessionFetchOptions, SessionWithdrawal } from './sessions.js'
import { createTurns, walletTurns } from './turns.js'

/** How many times a close refused while calls are still running is asked again. */
const closeRetries = 5

/** What a channel's funds need of their session buyer. */
export type FundsContext = {
  /** The wallet: signs the transactions that open, top up and withdraw. */
  readonly signer: Signer
  readonly client: ClientWithCoreApi
  readonly book: ChannelBook
  /** The wallet's address (normalized). */
  readonly payer: string
  readonly options: Pick<SessionFetchOptions, 'deposit' | 'maxDeposit' | 'limits'>
  /** Clock in ms. */
  readonly now: () => number
  /** The channels' vouchers: a close signs the last amount signed. */
  readonly vouchers: ChannelVouchers
  /**
   * Sends a session credential for `payload` to the channel's URL: tells the seller of a top-up,
   * asks it to close.
   */
  readonly present: (
    c: ChannelEntry,
    init: RequestInit,
    payload: Record<string, unknown>,
  ) => Promise<Response>
  /** Told when a close or a withdrawal has closed a channel, before its deposits are restored. */
  readonly onClosed: (channelId: string) => void
}

/** Creates what moves the money of a session buyer's channels; see the module's description. */
export function createChannelFunds(context: FundsContext) {
  const { signer, client, book, payer, options, now, present, onClosed } = context
  const { voucher, lastSigned } = context.vouchers

  /** Channels being opened, by what they are for: a concurrent call waits for the same one. */
  const opening = new Map<string, Promise<ChannelEntry>>()

  /**
   * The open channel last found for an offer at a URL: the next call with them reads that entry
   * instead of matching every channel of the book (addresses and coin types normalised, URLs
   * parsed: about 0.1 ms a call).
   */
  const lastFound = new WeakMap<
    SessionOffer,
    { readonly url: string; readonly channelId: string }
  >()

  /** An open channel of this buyer's to the offer's payee, on its package, or a new one. */
  async function channelFor(
    url: string,
    offer: SessionOffer,
    limits: WalletLimits | undefined,
  ): Promise<ChannelEntry> {
    const last = lastFound.get(offer)
    if (last?.url === url) {
      const entry = await book.get(last.channelId)
      if (entry?.state === 'open') return entry
    }
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
    if (found !== undefined) {
      lastFound.set(offer, { url, channelId: found.channelId })
      return found
    }
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

  /** Closes a channel cooperatively at the seller it was opened with. */
  async function close(channelId: string): Promise<SessionClose> {
    const entry = await book.get(channelId)
    if (entry === undefined || entry.state !== 'open') {
      throw new PaymentError('invalid_options', 'No open channel with that id in the session book.')
    }
    // The highest amount signed (at most the deposit): it covers everything spent.
    const deposit = BigInt(entry.deposit)
    const signed = lastSigned(channelId) ?? BigInt(entry.signed)
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
    onClosed(channelId)
    // What came back is no longer spent, for the wallet's limits.
    await restore(entry, spent)
    return {
      channelId,
      spent,
      refunded,
      digest: typeof receipt.txHash === 'string' ? receipt.txHash : undefined,
    }
  }

  /**
   * The payer's way out when the seller does not close: the first call asks to close on the
   * ledger; a call after the grace period takes back everything left.
   */
  async function withdraw(channelId: string): Promise<SessionWithdrawal> {
    const entry = await book.get(channelId)
    if (entry === undefined || entry.state === 'closed') {
      throw new PaymentError('invalid_options', 'No open channel with that id in the session book.')
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
    onClosed(channelId)
    await restore(entry, state.settled)
    return { status: 'withdrawn', refunded, digest }
  }

  return { channelFor, topUp, close, withdraw }
}
