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
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { z } from 'zod'
import { PaymentError } from '../errors.js'
import { tollgateHome, writeFileAtomic } from './home.js'

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
  /** The wallet-limits spend the deposit was counted as. */
  reservation: z.string().max(64).optional(),
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
  let queue: Promise<unknown> = Promise.resolve()
  function locked<T>(task: () => Promise<T>): Promise<T> {
    const run = queue.then(task, task)
    queue = run.catch(() => undefined)
    return run
  }
  // Read once, then kept: every change is written through (one process per book at a time).
  let cached: ChannelEntry[] | undefined
  async function load(): Promise<ChannelEntry[]> {
    cached ??= await read()
    return [...cached]
  }
  async function read(): Promise<ChannelEntry[]> {
    let text: string
    try {
      text = await readFile(file, 'utf8')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return []
      throw unreadable(error)
    }
    try {
      return bookSchema.parse(JSON.parse(text)).channels
    } catch (error) {
      throw unreadable(error)
    }
  }
  function unreadable(cause: unknown): PaymentError {
    return new PaymentError(
      'invalid_config',
      'The session book cannot be read; refusing to pay rather than forgetting a deposit.',
      { details: { file }, cause },
    )
  }
  const save = async (channels: ChannelEntry[]) => {
    await writeFileAtomic(file, `${JSON.stringify({ version: 1, channels })}\n`)
    cached = channels
  }
  async function change(
    channelId: string,
    next: (entry: ChannelEntry) => ChannelEntry,
  ): Promise<ChannelEntry | undefined> {
    return locked(async () => {
      const channels = await load()
      const at = channels.findIndex((c) => c.channelId === channelId)
      if (at < 0) return undefined
      const entry = next(channels[at] as ChannelEntry)
      channels[at] = entry
      await save(channels)
      return entry
    })
  }
  return {
    file,
    list: () => locked(load),
    async get(channelId) {
      return (await locked(load)).find((c) => c.channelId === channelId)
    },
    put: (entry) =>
      locked(async () => {
        const channels = (await load()).filter((c) => c.channelId !== entry.channelId)
        await save([...channels, entry])
      }),
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
