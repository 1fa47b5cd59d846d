/**
 * The `channel` module of the project's package on the local ledger: the payment channel of an MPP
 * `session` (open, top_up, settle, close, request_close, withdraw). The rules are
 * docs/protocol.md ("Sessions") and `move/tollgate/sources/channel.move`; the call signatures and
 * abort codes are declared in `signatures.ts`.
 *
 * A channel is a shared `Channel<T>` whose id is derived from the shared `Registry` and its key
 * `ChannelKey<T> { payer, payee, salt }` (`derived_object::claim`), so a payer computes it before
 * the channel exists (`channelIdOf`). It holds the payer's deposit; the payee settles with the
 * payer's vouchers (raw Ed25519 over `voucherMessage`), never more than a voucher authorises nor
 * more than was deposited. A closed channel stays on the ledger as a tombstone, so its id can never
 * be claimed again and an old voucher never replayed against a new channel.
 *
 * @module
 */
import { fromHex, normalizeStructTag, normalizeSuiAddress, toHex } from '@mysten/sui/utils'
import { channelIdOf, verifyVoucher } from '../../session/voucher.js'
import { declaredNative, eventBcs } from './bind.js'
import { hashId } from './escrow.js'
import { channelAbortCodes } from './signatures.js'
import { type LedgerState, putObject, type StoredObject } from './state.js'
import {
  abort,
  type CallContext,
  ErrorKind,
  fail,
  type NativeFunction,
  type ObjectValue,
  readAddress,
  readBytes,
  readU64,
  type Value,
} from './values.js'

/** Shortest grace period a channel may ask for: 15 minutes. */
export const MIN_GRACE_MS = 900_000n
const U64_MAX = 2n ** 64n - 1n
const ZERO_ADDRESS = normalizeSuiAddress('0x0')
const min = (a: bigint, b: bigint) => (a < b ? a : b)

/**
 * The `channel` module's abort codes (stable; named in `signatures.ts`), e.g. to assert on a
 * failed move's `MoveAbort.abortCode` in a test.
 *
 * @example
 * expect(Number(error.MoveAbort.abortCode)).toBe(Number(ChannelAbort.badSignature))
 */
export const ChannelAbort = Object.fromEntries(
  Object.entries(channelAbortCodes).map(([key, abort]) => [key, abort.code]),
) as { readonly [K in keyof typeof channelAbortCodes]: (typeof channelAbortCodes)[K]['code'] }

/** The id of the channel `Registry` of package `pkg` (fixed, like an id created at publish). */
export function channelRegistryId(pkg: string): string {
  return hashId(`${normalizeSuiAddress(pkg)}::channel::Registry`)
}

/** Creates the package's shared channel `Registry` when the state has none yet (the module's `init`). */
export function ensureChannelGenesis(state: LedgerState, pkg: string): void {
  const id = channelRegistryId(pkg)
  if (state.objects.has(id)) return
  putObject(state, {
    objectId: id,
    version: 1n,
    owner: { kind: 'shared', initialVersion: 1n },
    type: `${normalizeSuiAddress(pkg)}::channel::Registry`,
    fields: { id },
    previousTransaction: 'genesis',
  })
}

/** What a channel's escrow holds, by coin type, for the ledger's conservation check. */
export function channelEscrow(
  object: StoredObject,
): { coinType: string; amount: bigint } | undefined {
  const match = /::channel::Channel<(.+)>$/.exec(object.type)
  const escrow = (object.fields as { escrow?: unknown } | undefined)?.escrow
  if (!match?.[1] || typeof escrow !== 'string') return undefined
  return { coinType: match[1], amount: BigInt(escrow) }
}

type ChannelFields = {
  id: string
  payer: string
  payee: string
  operator: string
  signer: string
  escrow: string
  deposited: string
  settled: string
  close_requested_ms: string
  grace_ms: string
  closed: boolean
}

/** The native functions of the `channel` module, keyed `channel::function`. */
export function channelFunctions(pkg: string): Record<string, NativeFunction> {
  const prefix = `${normalizeSuiAddress(pkg)}::channel::`
  const registryType = `${prefix}Registry`
  const stop = (fn: string, code: bigint, why: string): never =>
    abort({ package: pkg, module: 'channel', functionName: fn }, code, `channel::${fn}: ${why}`)

  const coinTypeOf = (typeArgs: string[], ctx: CallContext): string => {
    const [type] = typeArgs
    try {
      if (type !== undefined) return normalizeStructTag(type)
    } catch {}
    return fail(ErrorKind.typeArgumentError, 'invalid type argument', ctx.command)
  }
  const sharedArg = (value: Value | undefined, type: string, ctx: CallContext, fn: string) => {
    if (value?.kind !== 'object' || !value.alive || value.object.type !== type) {
      fail(ErrorKind.commandArgumentError, `expected a ${type.split('::').pop()}`, ctx.command)
    }
    if (value.shared && !value.shared.mutable) {
      stop(fn, ChannelAbort.readOnly, 'the object must be passed by mutable reference')
    }
    return value
  }
  const fundsArg = (value: Value | undefined, coinType: string, ctx: CallContext): bigint => {
    if (value?.kind !== 'balance' || !value.alive) {
      fail(ErrorKind.commandArgumentError, 'expected a Balance argument', ctx.command)
    }
    if (value.coinType !== coinType) {
      fail(
        ErrorKind.typeArgumentError,
        `expected Balance<${coinType}>, got Balance<${value.coinType}>`,
        ctx.command,
      )
    }
    value.alive = false
    return value.value
  }
  /** The channel argument of a move, open, with its fields. */
  const openChannel = (
    args: Record<string, Value>,
    typeArgs: string[],
    ctx: CallContext,
    fn: string,
  ) => {
    const coinType = coinTypeOf(typeArgs, ctx)
    const value = sharedArg(args.channel, `${prefix}Channel<${coinType}>`, ctx, fn)
    const fields = value.object.fields as ChannelFields
    if (fields.closed) stop(fn, ChannelAbort.closed, 'the channel is closed')
    return { value, fields, coinType }
  }
  const write = (ctx: CallContext, value: ObjectValue, next: Partial<ChannelFields>) => {
    const updated = { ...value.object.fields, ...next }
    ctx.writeRecord({
      objectId: value.object.objectId,
      type: value.object.type,
      owner: '',
      shared: true,
      fields: updated,
    })
    // Later commands of the same transaction see the new fields.
    value.object = { ...value.object, fields: updated }
  }
  const emit = (ctx: CallContext, name: string, values: Record<string, string | bigint>) =>
    ctx.emit({
      packageId: pkg,
      module: 'channel',
      eventType: `${prefix}${name}`,
      json: Object.fromEntries(Object.entries(values).map(([k, v]) => [k, String(v)])),
      bcs: eventBcs('channel', name, values),
    })
  const pay = (ctx: CallContext, to: string, coinType: string, amount: bigint) => {
    if (amount > 0n) ctx.creditAddressBalance(to, coinType, amount)
  }
  const isPayee = (ctx: CallContext, fields: ChannelFields) =>
    ctx.sender === fields.payee ||
    (fields.operator !== ZERO_ADDRESS && ctx.sender === fields.operator)
  /** The voucher's checks shared by settle and close: amount bounds, then the signature. */
  const voucherArgs = (args: Record<string, Value>, ctx: CallContext) => ({
    cumulative: readU64(args.cumulative_amount, ctx.command),
    capture: readU64(args.capture, ctx.command),
    signature: readBytes(args.signature, ctx.command),
  })
  const checkSignature = (
    fn: string,
    value: ObjectValue,
    fields: ChannelFields,
    cumulative: bigint,
    signature: Uint8Array,
  ) => {
    const voucher = { channelId: value.object.objectId, cumulativeAmount: cumulative, signature }
    if (!verifyVoucher(voucher, fromHex(fields.signer))) {
      stop(fn, ChannelAbort.badSignature, 'the voucher is not signed by the channel signer')
    }
  }

  return Object.fromEntries([
    declaredNative('channel', 'open', (args, typeArgs, ctx) => {
      const fn = 'open'
      const coinType = coinTypeOf(typeArgs, ctx)
      const registry = sharedArg(args.registry, registryType, ctx, fn)
      const payee = readAddress(args.payee, ctx.command)
      const operator = readAddress(args.operator, ctx.command)
      const salt = readBytes(args.salt, ctx.command)
      const signer = readBytes(args.signer, ctx.command)
      const graceMs = readU64(args.grace_ms, ctx.command)
      const deposit = fundsArg(args.funds, coinType, ctx)
      if (payee === ZERO_ADDRESS) stop(fn, ChannelAbort.badPayee, 'the payee is @0x0')
      if (salt.length !== 32) stop(fn, ChannelAbort.badSalt, 'the salt must be 32 bytes')
      if (signer.length !== 32) stop(fn, ChannelAbort.badSigner, 'the signer must be 32 bytes')
      if (graceMs < MIN_GRACE_MS) {
        stop(fn, ChannelAbort.graceTooShort, `the grace period is under ${MIN_GRACE_MS} ms`)
      }
      if (deposit === 0n) stop(fn, ChannelAbort.zeroAmount, 'nothing to deposit')
      const id = channelIdOf({
        packageId: pkg,
        registry: registry.object.objectId,
        coinType,
        payer: ctx.sender,
        payee,
        salt,
      })
      // A closed channel stays as a tombstone: its id is claimed for ever.
      if (ctx.exists(id)) stop(fn, ChannelAbort.alreadyOpened, 'the channel id is claimed')
      const fields: ChannelFields = {
        id,
        payer: ctx.sender,
        payee,
        operator,
        signer: toHex(signer),
        escrow: deposit.toString(),
        deposited: deposit.toString(),
        settled: '0',
        close_requested_ms: '0',
        grace_ms: graceMs.toString(),
        closed: false,
      }
      ctx.writeRecord({
        objectId: id,
        type: `${prefix}Channel<${coinType}>`,
        owner: '',
        shared: true,
        fields,
      })
      emit(ctx, 'ChannelOpened', {
        channel_id: id,
        payer: ctx.sender,
        payee,
        operator,
        coin_type: coinType.replace(/^0x/, ''),
        deposit,
        grace_ms: graceMs,
      })
      return []
    }),

    declaredNative('channel', 'top_up', (args, typeArgs, ctx) => {
      const fn = 'top_up'
      const { value, fields, coinType } = openChannel(args, typeArgs, ctx, fn)
      const amount = fundsArg(args.funds, coinType, ctx)
      if (ctx.sender !== fields.payer) stop(fn, ChannelAbort.notPayer, 'only the payer tops up')
      if (amount === 0n) stop(fn, ChannelAbort.zeroAmount, 'nothing to add')
      const deposited = BigInt(fields.deposited) + amount
      if (deposited > U64_MAX) {
        abort(
          { package: '0x2', module: 'balance', functionName: 'join' },
          1n,
          'balance::join: overflow',
        )
      }
      const cancelled = fields.close_requested_ms !== '0'
      write(ctx, value, {
        escrow: (BigInt(fields.escrow) + amount).toString(),
        deposited: deposited.toString(),
        close_requested_ms: '0',
      })
      emit(ctx, 'ToppedUp', { channel_id: fields.id, amount, deposited })
      if (cancelled) emit(ctx, 'CloseRequestCancelled', { channel_id: fields.id })
      return []
    }),

    declaredNative('channel', 'settle', (args, typeArgs, ctx) => {
      const fn = 'settle'
      const { value, fields, coinType } = openChannel(args, typeArgs, ctx, fn)
      const { cumulative, capture, signature } = voucherArgs(args, ctx)
      if (!isPayee(ctx, fields)) stop(fn, ChannelAbort.notPayee, 'only the payee settles')
      const settled = BigInt(fields.settled)
      const deposited = BigInt(fields.deposited)
      if (capture <= settled || capture > cumulative || capture > deposited) {
        stop(fn, ChannelAbort.badAmount, 'settled < capture ≤ min(voucher, deposit) does not hold')
      }
      checkSignature(fn, value, fields, cumulative, signature)
      const amount = capture - settled
      pay(ctx, fields.payee, coinType, amount)
      write(ctx, value, {
        escrow: (BigInt(fields.escrow) - amount).toString(),
        settled: capture.toString(),
      })
      emit(ctx, 'Settled', {
        channel_id: fields.id,
        cumulative_amount: cumulative,
        amount,
        settled: capture,
      })
      return []
    }),

    declaredNative('channel', 'close', (args, typeArgs, ctx) => {
      const fn = 'close'
      const { value, fields, coinType } = openChannel(args, typeArgs, ctx, fn)
      const { cumulative, capture, signature } = voucherArgs(args, ctx)
      if (!isPayee(ctx, fields)) stop(fn, ChannelAbort.notPayee, 'only the payee closes')
      const settled = BigInt(fields.settled)
      const deposited = BigInt(fields.deposited)
      if (capture < settled || capture > cumulative || capture > deposited) {
        stop(fn, ChannelAbort.badAmount, 'settled ≤ capture ≤ min(voucher, deposit) does not hold')
      }
      if (capture > settled) checkSignature(fn, value, fields, cumulative, signature)
      const paid = capture - settled
      const refunded = BigInt(fields.escrow) - paid
      pay(ctx, fields.payee, coinType, paid)
      pay(ctx, fields.payer, coinType, refunded)
      write(ctx, value, { escrow: '0', settled: capture.toString(), closed: true })
      emit(ctx, 'ChannelClosed', { channel_id: fields.id, settled: capture, paid, refunded })
      return []
    }),

    declaredNative('channel', 'request_close', (args, typeArgs, ctx) => {
      const fn = 'request_close'
      const { value, fields } = openChannel(args, typeArgs, ctx, fn)
      if (ctx.sender !== fields.payer) stop(fn, ChannelAbort.notPayer, 'only the payer asks')
      // Set once: asking again does not push the end of the grace period back.
      if (fields.close_requested_ms !== '0') return []
      const now = BigInt(ctx.nowMs)
      write(ctx, value, { close_requested_ms: now.toString() })
      emit(ctx, 'CloseRequested', {
        channel_id: fields.id,
        requested_at_ms: now,
        // Saturates at the largest u64, as the Move module does.
        grace_end_ms: min(now + BigInt(fields.grace_ms), U64_MAX),
      })
      return []
    }),

    declaredNative('channel', 'withdraw', (args, typeArgs, ctx) => {
      const fn = 'withdraw'
      const { value, fields, coinType } = openChannel(args, typeArgs, ctx, fn)
      if (ctx.sender !== fields.payer) stop(fn, ChannelAbort.notPayer, 'only the payer withdraws')
      const requested = BigInt(fields.close_requested_ms)
      if (requested === 0n) stop(fn, ChannelAbort.noCloseRequest, 'no close was requested')
      if (BigInt(ctx.nowMs) < requested + BigInt(fields.grace_ms)) {
        stop(fn, ChannelAbort.graceNotOver, 'the grace period has not passed')
      }
      const refunded = BigInt(fields.escrow)
      pay(ctx, fields.payer, coinType, refunded)
      write(ctx, value, { escrow: '0', closed: true })
      emit(ctx, 'Withdrawn', { channel_id: fields.id, refunded })
      return []
    }),
  ])
}
