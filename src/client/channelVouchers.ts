/**
 * The vouchers the buyer of MPP sessions signs on its channels (docs/protocol.md §7): each channel's
 * descriptor and session key, its vouchers (signed by that key, never by the wallet), and the
 * cumulative amounts they are for — each new amount never used before, and covered by the
 * {@link ChannelBook}'s mark before it is used (the mark is written a block of amounts ahead, so
 * most amounts write nothing).
 *
 * @module
 * @internal
 */
import { normalizeSuiAddress, toHex } from '@mysten/sui/utils'
import { ed25519 } from '@noble/curves/ed25519.js'
import { afterThisTurn } from '../internal/afterThisTurn.js'
import { bytesToHex } from '../internal/hex.js'
import { signVoucher, type VoucherSigner } from '../session/voucher.js'
import { nativeVoucherSigner } from '../session/voucherKeys.js'
import type { ChannelBook, ChannelEntry } from './channelBook.js'

/**
 * How many amounts the book's mark is written ahead (one write per block): `markBlock` calls'
 * prices, or for a raise during a metered answer, `markBlock` raises of its own step — never past
 * the deposit.
 */
const markBlock = 32n

/** What a new amount must be (see `nextAmount` in {@link createChannelVouchers}). */
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

/** The vouchers of a buyer's channels; see the module's description. */
export type ChannelVouchers = ReturnType<typeof createChannelVouchers>

/** Creates the vouchers of a buyer's channels, whose marks `book` keeps. */
export function createChannelVouchers(book: ChannelBook) {
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

  /** The signature of a voucher for `cumulative` on `c`, as the credential writes it. */
  async function signature(c: ChannelEntry, cumulative: bigint): Promise<string> {
    const signed = await signVoucher(keysOf(c).signer, c.channelId, cumulative)
    return `0x${bytesToHex(signed.signature)}`
  }

  /** Per channel: a signature made ahead, for the amount its next call will likely use. */
  const signedAhead = new Map<
    string,
    { readonly amount: bigint; readonly signature: Promise<string> }
  >()

  /**
   * Signs ahead, after this turn (while the call's request travels), the amount `price` above
   * `cumulative`: what the channel's next call uses when no other call takes an amount first, as
   * in an agent's calls one after another. Skipped when another amount was taken meanwhile (calls
   * in flight together). A signature made ahead never leaves the process until a call uses its
   * amount — after the book's mark covers it, as any amount.
   */
  function signAhead(c: ChannelEntry, cumulative: bigint, price: bigint): void {
    afterThisTurn(() => {
      if (counters.get(c.channelId) !== cumulative) return
      const amount = cumulative + price
      const made = signature(c, amount)
      made.catch(() => {})
      signedAhead.set(c.channelId, { amount, signature: made })
    })
  }

  /**
   * A voucher for `cumulative`, signed by the channel's session key. A call priced per request
   * passes its `price`: the amount one price above is then signed ahead for the next call (a
   * metered call's voucher and a raise do not: their next amount is not one price above).
   */
  async function voucher(c: ChannelEntry, cumulative: bigint, price?: bigint) {
    const ahead = signedAhead.get(c.channelId)
    if (ahead !== undefined) signedAhead.delete(c.channelId)
    const signed =
      ahead?.amount === cumulative ? await ahead.signature : await signature(c, cumulative)
    if (price !== undefined) signAhead(c, cumulative, price)
    return { cumulativeAmount: cumulative.toString(), signature: signed }
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
   * The last amount this process signed on a channel, or `undefined` when it has signed none
   * since it started (the book's mark, at or above every amount signed, then stands for it).
   */
  function lastSigned(channelId: string): bigint | undefined {
    return counters.get(channelId)
  }

  return { keysOf, voucher, nextAmount, lastSigned }
}
