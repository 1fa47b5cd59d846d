/**
 * The in-memory state of the local ledger: objects (coins with versions and digests, and the
 * project's own records), address balances, executed transactions, epochs and checkpoints.
 *
 * @module
 */

import { createHash } from 'node:crypto'
import { normalizeStructTag, normalizeSuiAddress, toBase58, toHex } from '@mysten/sui/utils'
import { normalizeTypeTag } from '../../internal/typeTag.js'

/** Mainnet chain identifier (base58 of the genesis checkpoint digest). */
export const MAINNET_CHAIN_ID = '4btiuiMPvEENsttpZC7CZ53DruC3MAgfznDbASZ7DR6S'
/** Circle's native USDC on Sui mainnet. */
export const MAINNET_USDC_TYPE = normalizeStructTag(
  '0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC',
)
/** Wormhole-bridged USDC ("wUSDC"): a different coin, never accepted as USDC. */
export const WORMHOLE_USDC_TYPE = normalizeStructTag(
  '0x5d4b302506645c37ff133b98c4b50a5ae14841659738d6d733d59d0d217a93bf::coin::COIN',
)
/** The SUI coin type, normalized. */
export const SUI_TYPE = normalizeStructTag('0x2::sui::SUI')

/** Who owns an object. */
export type ObjectOwner =
  | { kind: 'address'; address: string }
  | { kind: 'shared'; initialVersion: bigint }
  | { kind: 'immutable' }

/** One object on the ledger. Coins carry `coin`; the project's records carry `fields`. */
export type StoredObject = {
  objectId: string
  version: bigint
  digest: string
  owner: ObjectOwner
  /** Full Move type, normalized, e.g. `0x2::coin::Coin<0x…::usdc::USDC>`. */
  type: string
  coin?: { coinType: string; balance: bigint }
  fields?: Record<string, unknown>
  previousTransaction: string
}

/** One object's line in the effects of a transaction. */
export type ObjectChange = {
  objectId: string
  objectType: string
  operation: 'created' | 'mutated' | 'deleted'
  input?: { version: bigint; digest: string; owner: ObjectOwner }
  output?: { version: bigint; digest: string; owner: ObjectOwner }
}

/** A Move-style event emitted by a transaction. */
export type LedgerEvent = {
  packageId: string
  module: string
  sender: string
  eventType: string
  json: Record<string, unknown>
  bcs: Uint8Array
}

/** An execution error, in the shape of Sui's `ExecutionError`. */
export type ExecutionFailure = {
  /** `ExecutionError_ExecutionErrorKind` number (e.g. 8 = INSUFFICIENT_COIN_BALANCE, 13 = MOVE_ABORT). */
  kind: number
  description: string
  command?: number
  abort?: { code: bigint; package: string; module: string; functionName: string }
}

/** Gas charged, as in Sui's `GasCostSummary`. */
export type GasUsed = {
  computationCost: bigint
  storageCost: bigint
  storageRebate: bigint
  nonRefundableStorageFee: bigint
}

/** A committed transaction with its effects: what `GetTransaction` answers. */
export type TransactionRecord = {
  digest: string
  txBytes: Uint8Array
  signatures: string[]
  sender: string
  epoch: bigint
  checkpoint: bigint
  timestampMs: number
  lamportVersion: bigint
  status: { success: true } | { success: false; error: ExecutionFailure }
  gasUsed: GasUsed
  gasObjectId?: string
  changes: ObjectChange[]
  balanceChanges: { address: string; coinType: string; amount: bigint }[]
  events: LedgerEvent[]
}

/** The whole ledger. Mutated only by `commit` (execution) and the faucet. */
export type LedgerState = {
  chainId: string
  usdcType: string
  seed: string
  referenceGasPrice: bigint
  epoch: bigint
  epochStartMs: number
  checkpoint: bigint
  objectCounter: bigint
  objects: Map<string, StoredObject>
  /** Key: `${address}|${coinType}` (both normalized). */
  addressBalances: Map<string, bigint>
  transactions: Map<string, TransactionRecord>
}

/** Options for a fresh ledger state. */
export type StateOptions = {
  /** Chain identifier. Default: the mainnet one, so production code runs unchanged. */
  chainId?: string
  /** The coin type treated as USDC (gasless rules, faucet). Default: mainnet USDC. */
  usdcType?: string
  /** Seed for deterministic object ids. Default: `'tollgate'`. */
  seed?: string
  /** Reference gas price in MIST. Default: 1000. */
  referenceGasPrice?: bigint
}

/** Creates an empty ledger state at epoch 0, checkpoint 0. */
export function createState(options: StateOptions = {}): LedgerState {
  return {
    chainId: options.chainId ?? MAINNET_CHAIN_ID,
    usdcType: normalizeStructTag(options.usdcType ?? MAINNET_USDC_TYPE),
    seed: options.seed ?? 'tollgate',
    referenceGasPrice: options.referenceGasPrice ?? 1000n,
    epoch: 0n,
    epochStartMs: Date.now(),
    checkpoint: 0n,
    objectCounter: 0n,
    objects: new Map(),
    addressBalances: new Map(),
    transactions: new Map(),
  }
}

/** 32-byte hash for emulator ids and digests (native; only their shape has to match Sui's). */
function sha256(text: string): Uint8Array {
  return createHash('sha256').update(text).digest()
}

/** A fresh, deterministic object id (from the seed and a counter). */
export function newObjectId(state: LedgerState): string {
  state.objectCounter += 1n
  return normalizeSuiAddress(toHex(sha256(`${state.seed}/object/${state.objectCounter}`)))
}

/** The digest of an object's content at a version (base58 of 32 bytes, like Sui's). */
export function objectDigest(object: Omit<StoredObject, 'digest' | 'previousTransaction'>): string {
  const owner =
    object.owner.kind === 'address'
      ? object.owner.address
      : object.owner.kind === 'shared'
        ? `shared:${object.owner.initialVersion}`
        : 'immutable'
  const content = `${object.objectId}|${object.version}|${owner}|${object.type}|${object.coin?.balance ?? ''}|${JSON.stringify(object.fields ?? null)}`
  return toBase58(sha256(content))
}

/** `0x2::coin::Coin<T>` for a coin type. */
export function coinObjectType(coinType: string): string {
  return normalizeStructTag(`0x2::coin::Coin<${coinType}>`)
}

/** The key of an address balance. */
export function balanceKey(address: string, coinType: string): string {
  return `${normalizeSuiAddress(address)}|${normalizeTypeTag(coinType) ?? coinType}`
}

/** An address balance (0 when none). */
export function addressBalanceOf(state: LedgerState, address: string, coinType: string): bigint {
  return state.addressBalances.get(balanceKey(address, coinType)) ?? 0n
}

/** Coins of one type owned by an address. */
export function coinsOf(state: LedgerState, address: string, coinType: string): StoredObject[] {
  const owner = normalizeSuiAddress(address)
  const type = normalizeTypeTag(coinType) ?? coinType
  const coins: StoredObject[] = []
  for (const object of state.objects.values()) {
    if (
      object.coin?.coinType === type &&
      object.owner.kind === 'address' &&
      object.owner.address === owner
    ) {
      coins.push(object)
    }
  }
  return coins
}

/** Every object owned by an address, in id order. */
export function objectsOwnedBy(state: LedgerState, address: string): StoredObject[] {
  const owner = normalizeSuiAddress(address)
  return [...state.objects.values()]
    .filter((o) => o.owner.kind === 'address' && o.owner.address === owner)
    .sort((a, b) => (a.objectId < b.objectId ? -1 : a.objectId > b.objectId ? 1 : 0))
}

/** Writes an object at a version, recomputing its digest. */
export function putObject(state: LedgerState, object: Omit<StoredObject, 'digest'>): StoredObject {
  const stored: StoredObject = { ...object, digest: objectDigest(object) }
  state.objects.set(stored.objectId, stored)
  return stored
}
