/**
 * Runtime values of the programmable-transaction interpreter, and the failures it raises.
 *
 * @module
 */
import { bcs } from '@mysten/sui/bcs'
import { fromBase64, normalizeSuiAddress } from '@mysten/sui/utils'
import type { ExecutionFailure, LedgerEvent, StoredObject } from './state.js'

/** A `Coin<T>`: an existing coin object (with `objectId`) or one made by this transaction. */
export type CoinValue = {
  kind: 'coin'
  coinType: string
  balance: bigint
  /** Set for coin objects that existed before the transaction. */
  objectId?: string
  alive: boolean
  transferredTo?: string
}
/** A `Balance<T>`. */
export type BalanceValue = { kind: 'balance'; coinType: string; value: bigint; alive: boolean }
/** A `Withdrawal<Balance<T>>` from a `FundsWithdrawal` input. */
export type WithdrawalValue = {
  kind: 'withdrawal'
  coinType: string
  amount: bigint
  owner: string
  alive: boolean
}
/** Raw BCS bytes of a pure input. */
export type PureValue = { kind: 'pure'; bytes: Uint8Array }
/**
 * A non-coin object input (the project's records). `shared` is set for a shared-object input:
 * `mutable` is whether the transaction took it by mutable reference.
 */
export type ObjectValue = {
  kind: 'object'
  object: StoredObject
  alive: boolean
  shared?: { mutable: boolean }
}
/** Every value a command can see. */
export type Value = CoinValue | BalanceValue | WithdrawalValue | PureValue | ObjectValue

/** Thrown inside execution; becomes a failed transaction (gas is still charged). */
export class ExecutionAbort extends Error {
  constructor(readonly failure: ExecutionFailure) {
    super(failure.description)
    this.name = 'ExecutionAbort'
  }
}

/** Error kinds used by the emulator (numbers of `ExecutionError_ExecutionErrorKind`). */
export const ErrorKind = {
  insufficientGas: 1,
  insufficientCoinBalance: 8,
  coinBalanceOverflow: 9,
  moveAbort: 13,
  functionNotFound: 16,
  arityMismatch: 17,
  typeArityMismatch: 18,
  commandArgumentError: 20,
  typeArgumentError: 21,
  unusedValueWithoutDrop: 22,
  invalidTransferObject: 24,
  insufficientFundsForWithdraw: 41,
} as const

/** Raises a failure of `kind` at command `command`. */
export function fail(kind: number, description: string, command?: number): never {
  throw new ExecutionAbort({ kind, description, ...(command === undefined ? {} : { command }) })
}

/** Raises a Move abort in `pkg::module::functionName` with `code`. */
export function abort(
  location: { package: string; module: string; functionName: string },
  code: bigint,
  description: string,
): never {
  throw new ExecutionAbort({
    kind: ErrorKind.moveAbort,
    description,
    abort: { code, ...location, package: normalizeSuiAddress(location.package) },
  })
}

/** What a Move call may do besides returning values. */
export type CallContext = {
  sender: string
  nowMs: number
  /** The transaction's digest (as `tx_context::digest`): the seed of fresh object ids. */
  digest: string
  command: number
  /** Adds to (or, negative, takes from) an address balance. */
  creditAddressBalance(address: string, coinType: string, amount: bigint): void
  /** Takes from an address balance; aborts when short. */
  debitAddressBalance(address: string, coinType: string, amount: bigint): void
  emit(event: Omit<LedgerEvent, 'sender'>): void
  /**
   * Creates or replaces an object (the project's records): owned by `owner`, or shared when
   * `shared` is set (`owner` is then ignored). Returns the object's id (a new id for a new object).
   */
  writeRecord(record: {
    objectId?: string
    type: string
    owner: string
    shared?: true
    fields: Record<string, unknown>
  }): string
  findRecord(owner: string, type: string): StoredObject | undefined
  /** Whether an object with this id exists, or was written earlier in this transaction. */
  exists(objectId: string): boolean
}

/** A Move function implemented natively. */
export type NativeFunction = (args: Value[], typeArgs: string[], ctx: CallContext) => Value[]

function pureBytes(value: Value | undefined, what: string, command: number): Uint8Array {
  if (value?.kind !== 'pure')
    fail(ErrorKind.commandArgumentError, `expected a pure ${what}`, command)
  return value.bytes
}

/** Reads a `u64` pure argument. */
export function readU64(value: Value | undefined, command: number): bigint {
  const bytes = pureBytes(value, 'u64', command)
  if (bytes.length !== 8) fail(ErrorKind.commandArgumentError, 'invalid u64 argument', command)
  return BigInt(bcs.u64().parse(bytes))
}

/** Reads an `address` pure argument. */
export function readAddress(value: Value | undefined, command: number): string {
  const bytes = pureBytes(value, 'address', command)
  if (bytes.length !== 32) fail(ErrorKind.commandArgumentError, 'invalid address argument', command)
  return normalizeSuiAddress(bcs.Address.parse(bytes))
}

/** Reads a `String` (or `vector<u8>` holding UTF-8) pure argument. */
export function readString(value: Value | undefined, command: number): string {
  const bytes = pureBytes(value, 'string', command)
  try {
    return bcs.string().parse(bytes)
  } catch {
    fail(ErrorKind.commandArgumentError, 'invalid string argument', command)
  }
}

/** Reads a `vector<u8>` pure argument. */
export function readBytes(value: Value | undefined, command: number): Uint8Array {
  const bytes = pureBytes(value, 'vector<u8>', command)
  try {
    return Uint8Array.from(bcs.vector(bcs.u8()).parse(bytes))
  } catch {
    fail(ErrorKind.commandArgumentError, 'invalid vector<u8> argument', command)
  }
}

/** A pure input's bytes from the parsed transaction (base64 in the SDK's parse output). */
export function pureFromInput(bytes: string | Uint8Array): PureValue {
  return { kind: 'pure', bytes: typeof bytes === 'string' ? fromBase64(bytes) : bytes }
}
