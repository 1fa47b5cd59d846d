/**
 * The programmable-transaction interpreter: runs the commands of one transaction over runtime
 * values without touching the ledger state. The caller commits the outcome (or only the gas, when
 * it fails).
 *
 * @module
 */
import type { bcs } from '@mysten/sui/bcs'
import { normalizeSuiAddress } from '@mysten/sui/utils'
import { normalizeTypeTag } from '../../internal/typeTag.js'
import { frameworkFunctions } from './natives.js'
import { balanceKey, type LedgerEvent, type StoredObject } from './state.js'
import {
  abort,
  type CallContext,
  type CoinValue,
  ErrorKind,
  fail,
  type NativeFunction,
  pureFromInput,
  readAddress,
  readU64,
  type Value,
} from './values.js'

type ParsedTransaction = ReturnType<typeof bcs.TransactionData.parse>
/** The `ProgrammableTransaction` part of parsed transaction data. */
export type Programmable = NonNullable<
  NonNullable<ParsedTransaction['V1']>['kind']['ProgrammableTransaction']
>
type RawArgument = Programmable['commands'][number] extends infer C
  ? C extends { TransferObjects: { address: infer A } }
    ? A
    : never
  : never

const U64_MAX = 2n ** 64n - 1n

/** A record (non-coin object) written by a Move call. */
export type RecordWrite = {
  objectId?: string
  type: string
  owner: string
  /** A shared object (`owner` is then ignored). */
  shared?: true
  fields: Record<string, unknown>
}

/** Everything a successful run wants to change. */
export type RunOutcome = {
  /** Existing coin objects touched by the transaction (inputs and the gas coin). */
  inputCoins: CoinValue[]
  /** Coins made by the transaction and transferred to someone. */
  createdCoins: CoinValue[]
  /** Address-balance deltas, key `${address}|${coinType}`. */
  addressBalanceDeltas: Map<string, bigint>
  events: Omit<LedgerEvent, 'sender'>[]
  records: RecordWrite[]
}

/** What the interpreter needs from the world. */
export type RunInput = {
  programmable: Programmable
  sender: string
  gasOwner: string
  nowMs: number
  /** The transaction's digest (base58), from which Move calls derive fresh object ids. */
  digest?: string
  /** The (smashed) gas coin, when gas is paid with coins. */
  gasCoin?: CoinValue
  objects: ReadonlyMap<string, StoredObject>
  addressBalance(address: string, coinType: string): bigint
  /** Native functions by `package::module::function` (package normalized). */
  functions: ReadonlyMap<string, NativeFunction>
}

/** Builds the function table: the framework plus any extra packages. */
export function functionTable(
  extra: Record<string, Record<string, NativeFunction>>,
): Map<string, NativeFunction> {
  const table = new Map<string, NativeFunction>()
  const framework = normalizeSuiAddress('0x2')
  for (const [name, fn] of Object.entries(frameworkFunctions))
    table.set(`${framework}::${name}`, fn)
  for (const [pkg, fns] of Object.entries(extra)) {
    for (const [name, fn] of Object.entries(fns))
      table.set(`${normalizeSuiAddress(pkg)}::${name}`, fn)
  }
  return table
}

/**
 * Runs the commands. Throws {@link ExecutionAbort} on failure; otherwise returns the outcome.
 * Values are fresh copies: the caller's state is never mutated.
 */
export function runProgrammable(input: RunInput): RunOutcome {
  const { programmable, sender } = input
  const inputCoins: CoinValue[] = input.gasCoin ? [input.gasCoin] : []
  const deltas = new Map<string, bigint>()
  const events: RunOutcome['events'] = []
  const records: RecordWrite[] = []
  const created: CoinValue[] = []
  const loose: Value[] = []

  const inputs: Value[] = programmable.inputs.map((arg) => {
    if (arg.Pure) return pureFromInput(arg.Pure.bytes)
    if (arg.FundsWithdrawal) {
      const { reservation, typeArg, withdrawFrom } = arg.FundsWithdrawal
      const owner = withdrawFrom.Sponsor ? input.gasOwner : sender
      return {
        kind: 'withdrawal',
        coinType: normalizeTypeTag(typeArg.Balance ?? '') ?? String(typeArg.Balance),
        amount: BigInt(reservation.MaxAmountU64 ?? 0),
        owner,
        alive: true,
      }
    }
    const sharedRef = arg.Object?.SharedObject
    const objectId = normalizeSuiAddress(
      arg.Object?.ImmOrOwnedObject?.objectId ?? sharedRef?.objectId ?? '0x0',
    )
    const object = input.objects.get(objectId)
    if (!object) return fail(ErrorKind.commandArgumentError, `object ${objectId} not available`)
    if (object.coin) {
      const coin: CoinValue = {
        kind: 'coin',
        coinType: object.coin.coinType,
        balance: object.coin.balance,
        objectId,
        alive: true,
      }
      inputCoins.push(coin)
      return coin
    }
    return {
      kind: 'object',
      object,
      alive: true,
      ...(sharedRef ? { shared: { mutable: sharedRef.mutable } } : {}),
    }
  })
  const results: Value[][] = []

  const balanceAfter = (address: string, coinType: string) =>
    input.addressBalance(address, coinType) + (deltas.get(balanceKey(address, coinType)) ?? 0n)
  const adjust = (address: string, coinType: string, amount: bigint) => {
    const key = balanceKey(address, coinType)
    deltas.set(key, (deltas.get(key) ?? 0n) + amount)
  }

  const resolve = (arg: RawArgument, command: number): Value => {
    if (arg.GasCoin) {
      if (!input.gasCoin)
        fail(
          ErrorKind.commandArgumentError,
          'no gas coin: gas is paid from an address balance',
          command,
        )
      return input.gasCoin
    }
    if (arg.Input !== undefined) {
      const value = inputs[arg.Input]
      if (!value) fail(ErrorKind.commandArgumentError, `input ${arg.Input} out of bounds`, command)
      return value
    }
    if (arg.Result !== undefined) {
      const values = results[arg.Result]
      if (values?.length !== 1 || !values[0]) {
        fail(ErrorKind.commandArgumentError, `result ${arg.Result} is not a single value`, command)
      }
      return values[0]
    }
    const [i, j] = arg.NestedResult ?? [0, 0]
    const value = results[i]?.[j]
    if (!value) fail(ErrorKind.commandArgumentError, `result ${i}.${j} out of bounds`, command)
    return value
  }
  const liveCoin = (arg: RawArgument, command: number): CoinValue => {
    const value = resolve(arg, command)
    if (value.kind !== 'coin' || !value.alive)
      fail(ErrorKind.commandArgumentError, 'expected a live coin', command)
    return value
  }

  programmable.commands.forEach((cmd, command) => {
    const ctx: CallContext = {
      sender,
      nowMs: input.nowMs,
      digest: input.digest ?? '',
      command,
      creditAddressBalance: (address, coinType, amount) => adjust(address, coinType, amount),
      debitAddressBalance: (address, coinType, amount) => {
        if (balanceAfter(address, coinType) < amount) {
          fail(
            ErrorKind.insufficientFundsForWithdraw,
            `insufficient address balance of ${coinType}`,
            command,
          )
        }
        adjust(address, coinType, -amount)
      },
      emit: (event) => events.push(event),
      writeRecord: (record) => {
        records.push(record)
        return record.objectId ?? ''
      },
      exists: (objectId) =>
        input.objects.has(objectId) || records.some((r) => r.objectId === objectId),
      findRecord: (owner, type) =>
        [...input.objects.values()].find(
          (o) => o.type === type && o.owner.kind === 'address' && o.owner.address === owner,
        ),
    }
    let out: Value[] = []
    if (cmd.SplitCoins) {
      const coin = liveCoin(cmd.SplitCoins.coin, command)
      out = cmd.SplitCoins.amounts.map((a) => {
        const amount = readU64(resolve(a, command), command)
        if (amount > coin.balance) {
          fail(
            ErrorKind.insufficientCoinBalance,
            `coin balance ${coin.balance} is less than ${amount}`,
            command,
          )
        }
        coin.balance -= amount
        const fresh: CoinValue = {
          kind: 'coin',
          coinType: coin.coinType,
          balance: amount,
          alive: true,
        }
        created.push(fresh)
        return fresh
      })
    } else if (cmd.MergeCoins) {
      const target = liveCoin(cmd.MergeCoins.destination, command)
      for (const s of cmd.MergeCoins.sources) {
        const source = liveCoin(s, command)
        if (source === target)
          fail(ErrorKind.commandArgumentError, 'cannot merge a coin into itself', command)
        if (source.coinType !== target.coinType)
          fail(ErrorKind.typeArgumentError, 'coin types differ', command)
        if (source === input.gasCoin)
          fail(ErrorKind.commandArgumentError, 'the gas coin cannot be merged away', command)
        if (target.balance + source.balance > U64_MAX)
          fail(ErrorKind.coinBalanceOverflow, 'CoinBalanceOverflow', command)
        target.balance += source.balance
        source.alive = false
      }
    } else if (cmd.TransferObjects) {
      const to = readAddress(resolve(cmd.TransferObjects.address, command), command)
      for (const o of cmd.TransferObjects.objects) {
        const coin = liveCoin(o, command)
        coin.alive = false
        coin.transferredTo = to
      }
    } else if (cmd.MoveCall) {
      const { package: pkg, module, function: fn, typeArguments, arguments: args } = cmd.MoveCall
      const target = `${normalizeSuiAddress(pkg)}::${module}::${fn}`
      const native = input.functions.get(target)
      if (!native) {
        abort(
          { package: pkg, module, functionName: fn },
          0n,
          `function ${target} is not available on this ledger`,
        )
      }
      const values = args.map((a) => resolve(a, command))
      // One value may not be passed twice (Move's borrow rules: &mut and by value exclude any
      // other use); pure values are copies.
      const passed = new Set<Value>()
      for (const value of values) {
        if (value.kind === 'pure') continue
        if (passed.has(value))
          fail(
            ErrorKind.commandArgumentError,
            'InvalidValueUsage: a value is passed twice',
            command,
          )
        passed.add(value)
      }
      out = native(values, typeArguments, ctx)
      // The gas coin may be used by reference in a Move call, never taken by value (Sui allows
      // that only to TransferObjects).
      if (input.gasCoin && passed.has(input.gasCoin) && !input.gasCoin.alive) {
        fail(
          ErrorKind.commandArgumentError,
          'InvalidGasCoinUsage: the gas coin may be taken by value only by TransferObjects',
          command,
        )
      }
      for (const v of out) if (v.kind === 'coin') created.push(v)
    } else if (cmd.MakeMoveVec) {
      fail(
        ErrorKind.commandArgumentError,
        'MakeMoveVec is not supported by the local ledger',
        command,
      )
    } else {
      fail(
        ErrorKind.commandArgumentError,
        `command ${cmd.$kind} is not supported by the local ledger`,
        command,
      )
    }
    for (const v of out) if (v.kind === 'balance') loose.push(v)
    results.push(out)
  })

  for (const value of [...created, ...loose]) {
    if ((value.kind === 'coin' || value.kind === 'balance') && value.alive) {
      fail(
        ErrorKind.unusedValueWithoutDrop,
        `an unused ${value.kind === 'coin' ? 'Coin' : 'Balance'} has no drop ability`,
      )
    }
  }
  return {
    inputCoins,
    createdCoins: created.filter((c) => c.transferredTo !== undefined),
    addressBalanceDeltas: deltas,
    events,
    records,
  }
}
