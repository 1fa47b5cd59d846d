/**
 * The buyer's book of session channels, kept with the wallet (`sessions.json` in
 * {@link tollgateHome}, written atomically, owner-only): for each channel, what opens it again after
 * a crash (its salt and session key, recorded **before** the deposit is signed), the deposit, and a
 * mark at or above every voucher amount signed (raised **before** a voucher above it is sent). A crash therefore never loses a
 * deposit — the channel can be found, closed or withdrawn — nor lets an amount be signed again
 * for another call after a restart.
 *
 * The session key is a hot key that can spend at most the channel's deposit; the wallet key signs
 * only the transactions that open and top up.
 *
 * @module
 */
import { join } from 'node:path'
import { z } from 'zod'
import { PaymentError } from '../errors.js'
import { tollgateHome } from './home.js'
import { createRecordFile } from './recordFile.js'

/** The book's file name in {@link tollgateHome}. */
export const channelBookFileName = 'sessions.json'

const amount = z.string().regex(/^(0|[1-9][0-9]{0,19})$/)
const address = z.string().regex(/^0x[0-9a-f]{64}$/)
const hex32 = z.string().regex(/^[0-9a-f]{64}$/)

const entrySchema = z.object({
  channelId: address,
  /** The URL the channel was opened at (its seller's route; a close is sent there). */
  url: z.string().max(2048),
  payer: address,
  payee: address,
  coinType: z.string().max(256),
  package: address,
  registry: address,
  network: z.string().max(32),
  /** The price per unit of the offer it was opened for, base units. */
  price: amount,
  salt: hex32,
  /** The session key's Ed25519 secret, hex. */
  sessionKey: hex32,
  gracePeriodMs: z.number().int().positive(),
  deposit: amount,
  /** A mark at or above every cumulative amount signed (written ahead of them, in blocks). */
  signed: amount,
  /** What the seller captured, once the channel is closed (0 before). */
  spent: amount,
  /** `opening`: recorded, the open not known to have executed; `closed`: done. */
  state: z.enum(['opening', 'open', 'closed']),
  openDigest: z.string().max(64).optional(),
  /** The wallet-limits spend the first deposit was counted as. */
  reservation: z.string().max(64).optional(),
  /** Each top-up: its amount and the wallet-limits spend it was counted as. */
  topUps: z
    .array(z.object({ amount, reservation: z.string().max(64).optional() }))
    .max(10_000)
    .optional(),
  openedAt: z.number().int().nonnegative(),
})

/** One channel in the book. */
export type ChannelEntry = z.infer<typeof entrySchema>

const bookSchema = z.object({ version: z.literal(1), channels: z.array(entrySchema).max(10_000) })

/** The buyer's channel book; see the module's description. */
export type ChannelBook = {
  readonly file: string
  /** Every channel, oldest first. */
  list(): Promise<ChannelEntry[]>
  get(channelId: string): Promise<ChannelEntry | undefined>
  /** Adds or replaces a channel (written before the call returns). */
  put(entry: ChannelEntry): Promise<void>
  /**
   * Raises the channel's signed amount to `next(signed)` (never lowers it), atomically within the
   * process and written before it returns: call it before the voucher is sent. Returns the entry.
   */
  sign(channelId: string, next: (signed: bigint) => bigint): Promise<ChannelEntry>
  /** Changes a channel's facts (the state, the deposit, what was spent). */
  update(channelId: string, change: Partial<ChannelEntry>): Promise<ChannelEntry | undefined>
}

/**
 * Opens the book in `file` (default `sessions.json` in {@link tollgateHome}). The file is read once
 * and every change written through before the call returns, serialised within the process: one
 * process uses a book at a time. An unreadable file refuses every session rather than forgetting
 * a deposit.
 */
export function createChannelBook(file = join(tollgateHome(), channelBookFileName)): ChannelBook {
  const records = createRecordFile({
    file,
    schema: bookSchema,
    key: 'channels',
    unreadable:
      'The session book cannot be read; refusing to pay rather than forgetting a deposit.',
    // Read once, then kept: every change is written through (one process per book at a time).
    cache: true,
  })
  function change(
    channelId: string,
    next: (entry: ChannelEntry) => ChannelEntry,
  ): Promise<ChannelEntry | undefined> {
    return records.update((channels) => {
      const at = channels.findIndex((c) => c.channelId === channelId)
      if (at < 0) return { result: undefined }
      const entry = next(channels[at] as ChannelEntry)
      channels[at] = entry
      return { records: channels, result: entry }
    })
  }
  return {
    file,
    list: () => records.read(),
    async get(channelId) {
      return (await records.read()).find((c) => c.channelId === channelId)
    },
    put: (entry) =>
      records.update((channels) => ({
        records: [...channels.filter((c) => c.channelId !== entry.channelId), entry],
        result: undefined,
      })),
    async sign(channelId, next) {
      const entry = await change(channelId, (c) => {
        const cumulative = next(BigInt(c.signed))
        return cumulative > BigInt(c.signed) ? { ...c, signed: cumulative.toString() } : c
      })
      if (entry === undefined) {
        throw new PaymentError('invalid_config', 'No such channel in the session book.')
      }
      return entry
    },
    update: (channelId, facts) => change(channelId, (c) => ({ ...c, ...facts })),
  }
}
