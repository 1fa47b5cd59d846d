/**
 * Transaction builders for a session's payment channel (the `channel` module of the project's
 * package): `open` and `top_up` (the payer's deposit), `settle` and `close` (the payee, with the
 * payer's voucher), `request_close` and `withdraw` (the payer's way out when the payee does not
 * close). Each returns a `Transaction` with sender, gas price, budget and gas coins set, ready to
 * be signed by that party and executed; and {@link readChannel} reads a channel's state.
 *
 * The ledger checks every rule (docs/protocol.md, "Sessions"): the payee never receives more than
 * a voucher authorises nor more than was deposited, and the payer gets the rest back.
 *
 * @module
 */
import type { ClientWithCoreApi } from '@mysten/sui/client'
import type { Transaction } from '@mysten/sui/transactions'
import { fromBase64, normalizeStructTag, normalizeSuiAddress, toHex } from '@mysten/sui/utils'
import { z } from 'zod'
import { PaymentError } from '../errors.js'
import { isStrictBase64 } from '../internal/base64.js'
import { moveTransaction, takeFunds } from '../internal/moveTx.js'
import type { Voucher } from './voucher.js'

/** Gas budget of a channel move (0.01 SUI). */
export const channelGasBudget = 10_000_000n

/** Shortest grace period the channel module accepts: 15 minutes. */
export const minGraceMs = 900_000n

/** What every builder needs: the client, the package, and who signs. */
export type ChannelTxOptions = {
  client: ClientWithCoreApi
  /** The package holding the `channel` module. */
  package: string
  /** The address that signs (the payer or the payee, as the move requires). */
  sender: string
  /** Gas budget in MIST. Default {@link channelGasBudget}. */
  gasBudget?: bigint
}

/** A channel as a transaction argument (from {@link readChannel}). */
export type ChannelRef = Pick<ChannelState, 'id' | 'initialSharedVersion' | 'coinType'>

/** A channel, read from the ledger. Amounts in base units, times in ms of the ledger's clock. */
export type ChannelState = {
  id: string
  initialSharedVersion: string
  /** The coin type held (`T` of `Channel<T>`). */
  coinType: string
  payer: string
  payee: string
  /** Who may settle and close besides the payee; `0x0…0` for none. */
  operator: string
  /** The session key that signs vouchers: its 32-byte Ed25519 public key, hex without `0x`. */
  signer: string
  /** What the channel holds now: `deposited − settled` while open, 0 once closed. */
  escrow: bigint
  deposited: bigint
  /** Paid to the payee so far. */
  settled: bigint
  /** When the payer asked to close (0: not asked, or a top-up cancelled it). */
  closeRequestedMs: bigint
  graceMs: bigint
  closed: boolean
}

function base(options: ChannelTxOptions): Promise<Transaction> {
  return moveTransaction({ ...options, gasBudget: options.gasBudget ?? channelGasBudget })
}

const target = (options: ChannelTxOptions, fn: string) =>
  `${normalizeSuiAddress(options.package)}::channel::${fn}`

function channelArg(tx: Transaction, channel: ChannelRef) {
  return tx.sharedObjectRef({
    objectId: channel.id,
    initialSharedVersion: channel.initialSharedVersion,
    mutable: true,
  })
}

function positive(amount: bigint, what: string): bigint {
  if (amount <= 0n || amount >= 2n ** 64n) {
    throw new PaymentError('invalid_amount', `${what} must be a u64 above 0.`)
  }
  return amount
}

/**
 * Builds `channel::open`: a new channel from the sender (the payer) to `payee`, funded with
 * `deposit` of the payer's `coinType` (its coins, or else its address balance). The channel's id is
 * `channelIdOf({ packageId, registry, coinType, payer, payee, salt })`.
 *
 * @param options.registry - the shared `Registry` object's id (record it at publish: docs/deploy.md).
 * @param options.registryInitialSharedVersion - its initial shared version (default: read from the
 *   ledger).
 * @param options.operator - who may settle and close besides the payee. Default none (`0x0`).
 * @param options.salt - 32 bytes; a new channel between the same two parties needs a new salt.
 * @param options.signerPublicKey - the 32-byte Ed25519 key that signs the vouchers (a session key:
 *   whoever holds its secret can spend the deposit).
 * @param options.graceMs - how long the payee has to settle after the payer asks to close (at least
 *   {@link minGraceMs}).
 * @example
 * const tx = await buildOpen({ client, package: pkg, sender: payer, registry, coinType: usdc,
 *   deposit: 1_000_000n, payee, salt, signerPublicKey, graceMs: 900_000n })
 */
export async function buildOpen(
  options: ChannelTxOptions & {
    registry: string
    registryInitialSharedVersion?: string
    coinType: string
    deposit: bigint
    payee: string
    operator?: string
    salt: Uint8Array
    signerPublicKey: Uint8Array
    graceMs: bigint
  },
): Promise<Transaction> {
  const coinType = normalizeStructTag(options.coinType)
  const deposit = positive(options.deposit, 'A deposit')
  const tx = await base(options)
  const funds = await takeFunds(tx, { ...options, asset: coinType, amount: deposit, as: 'balance' })
  tx.moveCall({
    target: target(options, 'open'),
    typeArguments: [coinType],
    arguments: [
      tx.sharedObjectRef({
        objectId: options.registry,
        initialSharedVersion:
          options.registryInitialSharedVersion ??
          (await sharedVersion(options.client, options.registry)),
        mutable: true,
      }),
      tx.pure.address(options.payee),
      tx.pure.address(options.operator ?? '0x0'),
      tx.pure.vector('u8', options.salt),
      tx.pure.vector('u8', options.signerPublicKey),
      tx.pure.u64(options.graceMs),
      funds,
    ],
  })
  return tx
}

/**
 * Builds `channel::top_up`: the payer adds `amount` to the deposit. It also cancels a pending
 * close request.
 */
export async function buildTopUp(
  options: ChannelTxOptions & { channel: ChannelRef; amount: bigint },
): Promise<Transaction> {
  const amount = positive(options.amount, 'A top-up')
  const coinType = normalizeStructTag(options.channel.coinType)
  const tx = await base(options)
  const funds = await takeFunds(tx, { ...options, asset: coinType, amount, as: 'balance' })
  tx.moveCall({
    target: target(options, 'top_up'),
    typeArguments: [coinType],
    arguments: [channelArg(tx, options.channel), funds],
  })
  return tx
}

function voucherCall(
  fn: 'settle' | 'close',
  tx: Transaction,
  options: ChannelTxOptions & { channel: ChannelRef; voucher?: Voucher; capture: bigint },
) {
  tx.moveCall({
    target: target(options, fn),
    typeArguments: [normalizeStructTag(options.channel.coinType)],
    arguments: [
      channelArg(tx, options.channel),
      tx.pure.u64(options.voucher?.cumulativeAmount ?? options.capture),
      tx.pure.u64(options.capture),
      tx.pure.vector('u8', options.voucher?.signature ?? new Uint8Array()),
    ],
  })
}

/**
 * Builds `channel::settle`: the payee (or its operator) takes `capture − settled` now, with a
 * voucher of at least `capture`; the channel stays open. Allowed during a close's grace period.
 *
 * @param options.capture - what was actually spent in all (`settled < capture ≤ min(voucher,
 *   deposit)`): a voucher authorises, it does not bill.
 */
export async function buildSettle(
  options: ChannelTxOptions & { channel: ChannelRef; voucher: Voucher; capture: bigint },
): Promise<Transaction> {
  const tx = await base(options)
  voucherCall('settle', tx, options)
  return tx
}

/**
 * Builds `channel::close`: the payee (or its operator) takes `capture − settled`, the payer gets
 * the rest of the deposit back, and the channel is closed for good.
 *
 * @param options.capture - what was spent in all (`settled ≤ capture ≤ min(voucher, deposit)`).
 * @param options.voucher - needed when `capture` is above what is settled.
 */
export async function buildClose(
  options: ChannelTxOptions & { channel: ChannelRef; voucher?: Voucher; capture: bigint },
): Promise<Transaction> {
  const tx = await base(options)
  voucherCall('close', tx, options)
  return tx
}

/**
 * Builds `channel::request_close`: the payer asks to close; after the grace period it may
 * {@link buildWithdraw} the rest, and the payee may settle until then.
 */
export async function buildRequestClose(
  options: ChannelTxOptions & { channel: ChannelRef },
): Promise<Transaction> {
  const tx = await base(options)
  tx.moveCall({
    target: target(options, 'request_close'),
    typeArguments: [normalizeStructTag(options.channel.coinType)],
    arguments: [channelArg(tx, options.channel), tx.object.clock()],
  })
  return tx
}

/** Builds `channel::withdraw`: after the grace period of a close request, the payer takes the rest. */
export async function buildWithdraw(
  options: ChannelTxOptions & { channel: ChannelRef },
): Promise<Transaction> {
  const tx = await base(options)
  tx.moveCall({
    target: target(options, 'withdraw'),
    typeArguments: [normalizeStructTag(options.channel.coinType)],
    arguments: [channelArg(tx, options.channel), tx.object.clock()],
  })
  return tx
}

const u64 = z
  .string()
  .regex(/^\d{1,20}$/)
  .transform((v) => BigInt(v))
const balance = z.union([u64, z.object({ value: u64 }).transform((b) => b.value)])

/**
 * A `vector<u8>` as object JSON renders it: base64 (Sui's JSON of bytes), hex, or an array of
 * numbers; returned as hex without `0x`.
 */
const bytesHex = z
  .union([z.string().max(1024), z.array(z.number().int().min(0).max(255)).max(512)])
  .transform((value, context) => {
    if (Array.isArray(value)) return toHex(Uint8Array.from(value))
    const hex = value.startsWith('0x') ? value.slice(2) : value
    if (/^[0-9a-fA-F]*$/.test(hex) && hex.length % 2 === 0 && hex.length !== 44) {
      return hex.toLowerCase()
    }
    if (isStrictBase64(value)) return toHex(fromBase64(value))
    context.addIssue({ code: 'custom', message: 'not bytes' })
    return z.NEVER
  })

const ChannelFieldsSchema = z.object({
  payer: z.string(),
  signer: bytesHex,
  payee: z.string(),
  operator: z.string(),
  escrow: balance,
  deposited: u64,
  settled: u64,
  close_requested_ms: u64,
  grace_ms: u64,
  closed: z.boolean(),
})

async function sharedVersion(client: ClientWithCoreApi, id: string): Promise<string> {
  const { object } = await client.core.getObject({ objectId: normalizeSuiAddress(id) })
  if (object.owner.$kind !== 'Shared') {
    throw new PaymentError('invalid_config', `Object ${id} is not shared.`)
  }
  return String(object.owner.Shared.initialSharedVersion)
}

/**
 * Reads a channel from the ledger (`client.core.getObject`).
 *
 * @throws {PaymentError} `invalid_config` when the object is not a channel.
 * @example
 * const channel = await readChannel(client, channelId)
 * if (channel.closeRequestedMs > 0n) // settle before channel.closeRequestedMs + channel.graceMs
 */
export async function readChannel(client: ClientWithCoreApi, id: string): Promise<ChannelState> {
  const { object } = await client.core.getObject({
    objectId: normalizeSuiAddress(id),
    include: { json: true },
  })
  const coinType = /::channel::Channel<(.+)>$/.exec(object.type)?.[1]
  const fields = ChannelFieldsSchema.safeParse(object.json)
  if (object.owner.$kind !== 'Shared' || coinType === undefined || !fields.success) {
    throw new PaymentError('invalid_config', `Object ${id} is not a session channel.`)
  }
  const f = fields.data
  return {
    id: object.objectId,
    initialSharedVersion: String(object.owner.Shared.initialSharedVersion),
    coinType: normalizeStructTag(coinType),
    payer: normalizeSuiAddress(f.payer),
    payee: normalizeSuiAddress(f.payee),
    operator: normalizeSuiAddress(f.operator),
    signer: f.signer,
    escrow: f.escrow,
    deposited: f.deposited,
    settled: f.settled,
    closeRequestedMs: f.close_requested_ms,
    graceMs: f.grace_ms,
    closed: f.closed,
  }
}
