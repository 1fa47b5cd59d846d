/**
 * Native implementations of the framework functions (`0x2::coin`, `0x2::balance`,
 * `0x2::transfer`) that payment transactions call.
 *
 * @module
 */
import { normalizeTypeTag } from '../../internal/typeTag.js'
import {
  abort,
  type BalanceValue,
  type CallContext,
  type CoinValue,
  ErrorKind,
  fail,
  type NativeFunction,
  readAddress,
  readU64,
  type Value,
} from './values.js'

const FRAMEWORK = '0x2'

function typeArg(typeArgs: string[], ctx: CallContext): string {
  const [type] = typeArgs
  if (typeArgs.length !== 1 || type === undefined) {
    fail(ErrorKind.typeArgumentError, 'expected one type argument', ctx.command)
  }
  // Any type tag the BCS carries (struct, primitive, vector) is a type Move can instantiate with.
  const normal = normalizeTypeTag(type)
  if (normal === undefined) fail(ErrorKind.typeArgumentError, 'invalid type argument', ctx.command)
  return normal
}

function takeCoin(
  value: Value | undefined,
  type: string,
  ctx: CallContext,
  byValue: boolean,
): CoinValue {
  if (value?.kind !== 'coin' || !value.alive) {
    fail(ErrorKind.commandArgumentError, 'expected a Coin argument', ctx.command)
  }
  if (value.coinType !== type) {
    fail(
      ErrorKind.typeArgumentError,
      `expected Coin<${type}>, got Coin<${value.coinType}>`,
      ctx.command,
    )
  }
  if (byValue) value.alive = false
  return value
}

function takeBalance(
  value: Value | undefined,
  type: string,
  ctx: CallContext,
  byValue: boolean,
): BalanceValue {
  if (value?.kind !== 'balance' || !value.alive) {
    fail(ErrorKind.commandArgumentError, 'expected a Balance argument', ctx.command)
  }
  if (value.coinType !== type) {
    fail(
      ErrorKind.typeArgumentError,
      `expected Balance<${type}>, got Balance<${value.coinType}>`,
      ctx.command,
    )
  }
  if (byValue) value.alive = false
  return value
}

function redeem(args: Value[], type: string, ctx: CallContext): bigint {
  const withdrawal = args[0]
  if (args.length !== 1 || withdrawal?.kind !== 'withdrawal' || !withdrawal.alive) {
    fail(ErrorKind.commandArgumentError, 'expected a Withdrawal argument', ctx.command)
  }
  if (withdrawal.coinType !== type) {
    fail(ErrorKind.typeArgumentError, 'withdrawal type does not match', ctx.command)
  }
  withdrawal.alive = false
  ctx.debitAddressBalance(withdrawal.owner, type, withdrawal.amount)
  return withdrawal.amount
}

function newCoin(coinType: string, balance: bigint): CoinValue {
  return { kind: 'coin', coinType, balance, alive: true }
}

function newBalance(coinType: string, value: bigint): BalanceValue {
  return { kind: 'balance', coinType, value, alive: true }
}

const EZERO = { package: FRAMEWORK, module: 'balance', functionName: 'destroy_zero' }
const ESPLIT = { package: FRAMEWORK, module: 'balance', functionName: 'split' }
const EJOIN = { package: FRAMEWORK, module: 'balance', functionName: 'join' }
const U64_MAX = 2n ** 64n - 1n

/** `0x2::module::function` → implementation. */
export const frameworkFunctions: Record<string, NativeFunction> = {
  'balance::redeem_funds': (args, t, ctx) => {
    const type = typeArg(t, ctx)
    return [newBalance(type, redeem(args, type, ctx))]
  },
  'coin::redeem_funds': (args, t, ctx) => {
    const type = typeArg(t, ctx)
    return [newCoin(type, redeem(args, type, ctx))]
  },
  'balance::send_funds': (args, t, ctx) => {
    const type = typeArg(t, ctx)
    const balance = takeBalance(args[0], type, ctx, true)
    ctx.creditAddressBalance(readAddress(args[1], ctx.command), type, balance.value)
    return []
  },
  'coin::send_funds': (args, t, ctx) => {
    const type = typeArg(t, ctx)
    const coin = takeCoin(args[0], type, ctx, true)
    ctx.creditAddressBalance(readAddress(args[1], ctx.command), type, coin.balance)
    return []
  },
  'coin::into_balance': (args, t, ctx) => {
    const type = typeArg(t, ctx)
    return [newBalance(type, takeCoin(args[0], type, ctx, true).balance)]
  },
  'coin::from_balance': (args, t, ctx) => {
    const type = typeArg(t, ctx)
    return [newCoin(type, takeBalance(args[0], type, ctx, true).value)]
  },
  'coin::zero': (_args, t, ctx) => [newCoin(typeArg(t, ctx), 0n)],
  'balance::zero': (_args, t, ctx) => [newBalance(typeArg(t, ctx), 0n)],
  'coin::destroy_zero': (args, t, ctx) => {
    const coin = takeCoin(args[0], typeArg(t, ctx), ctx, true)
    if (coin.balance !== 0n) abort(EZERO, 0n, 'coin::destroy_zero on a non-zero coin')
    return []
  },
  'balance::destroy_zero': (args, t, ctx) => {
    const balance = takeBalance(args[0], typeArg(t, ctx), ctx, true)
    if (balance.value !== 0n) abort(EZERO, 0n, 'balance::destroy_zero on a non-zero balance')
    return []
  },
  'coin::value': (args, t, ctx) => {
    takeCoin(args[0], typeArg(t, ctx), ctx, false)
    return []
  },
  'coin::split': (args, t, ctx) => {
    const type = typeArg(t, ctx)
    const coin = takeCoin(args[0], type, ctx, false)
    const amount = readU64(args[1], ctx.command)
    if (amount > coin.balance) abort(ESPLIT, 2n, 'coin::split: not enough balance')
    coin.balance -= amount
    return [newCoin(type, amount)]
  },
  'coin::join': (args, t, ctx) => {
    const type = typeArg(t, ctx)
    const target = takeCoin(args[0], type, ctx, false)
    const source = takeCoin(args[1], type, ctx, true)
    if (target.balance + source.balance > U64_MAX) abort(EJOIN, 1n, 'coin::join: overflow')
    target.balance += source.balance
    return []
  },
  'balance::join': (args, t, ctx) => {
    const type = typeArg(t, ctx)
    const target = takeBalance(args[0], type, ctx, false)
    const source = takeBalance(args[1], type, ctx, true)
    if (target.value + source.value > U64_MAX) abort(EJOIN, 1n, 'balance::join: overflow')
    target.value += source.value
    return []
  },
  'balance::split': (args, t, ctx) => {
    const type = typeArg(t, ctx)
    const balance = takeBalance(args[0], type, ctx, false)
    const amount = readU64(args[1], ctx.command)
    if (amount > balance.value) abort(ESPLIT, 2n, 'balance::split: not enough balance')
    balance.value -= amount
    return [newBalance(type, amount)]
  },
  'transfer::public_transfer': (args, _t, ctx) => {
    const object = args[0]
    if (object?.kind !== 'coin' || !object.alive) {
      fail(ErrorKind.invalidTransferObject, 'only coins can be transferred here', ctx.command)
    }
    object.alive = false
    object.transferredTo = readAddress(args[1], ctx.command)
    return []
  },
}

/** Calls that gasless (price 0, budget 0) transactions may make. */
export const gaslessAllowList: ReadonlySet<string> = new Set([
  'balance::redeem_funds',
  'balance::send_funds',
  'coin::send_funds',
  'coin::into_balance',
  'coin::from_balance',
  'coin::redeem_funds',
])
