/**
 * Executes an accepted transaction: charges gas, runs the commands, computes effects and balance
 * changes, and (unless simulating) commits them atomically. A failed run commits only the gas.
 *
 * @module
 */
import { normalizeSuiAddress } from '@mysten/sui/utils'
import { type RunOutcome, runProgrammable } from './programmable.js'
import {
  addressBalanceOf,
  balanceKey,
  coinObjectType,
  type ExecutionFailure,
  type GasUsed,
  type LedgerState,
  newObjectId,
  type ObjectChange,
  type ObjectOwner,
  objectDigest,
  type StoredObject,
  SUI_TYPE,
  type TransactionRecord,
} from './state.js'
import {
  type Accepted,
  checkGaslessAmounts,
  MIN_COMPUTATION_UNITS,
  type Rejection,
} from './validate.js'
import type { NativeFunction } from './values.js'
import { type CoinValue, ErrorKind, ExecutionAbort } from './values.js'

/** Storage charged per written object, refunded at 99% when it is next mutated or deleted. */
const STORAGE_PER_OBJECT = 988_000n
const REBATE_PER_OBJECT = 978_120n

/** Executes `accepted`; commits unless `dryRun`. Gasless rule violations come back as a rejection. */
export function executeAccepted(options: {
  state: LedgerState
  accepted: Accepted
  digest: string
  txBytes: Uint8Array
  signatures: string[]
  functions: ReadonlyMap<string, NativeFunction>
  dryRun: boolean
  nowMs?: number
}): TransactionRecord | Rejection {
  const { state, accepted, digest } = options
  const nowMs = options.nowMs ?? Date.now()
  const { sender, gasOwner, gasMode, price, budget, payment } = accepted

  const paymentObjects = payment.map((p) => state.objects.get(p.objectId) as StoredObject)
  const gasTotal = paymentObjects.reduce((sum, o) => sum + (o.coin?.balance ?? 0n), 0n)
  const gasCoin: CoinValue | undefined = paymentObjects[0]
    ? {
        kind: 'coin',
        coinType: SUI_TYPE,
        balance: gasTotal - budget,
        objectId: paymentObjects[0].objectId,
        alive: true,
      }
    : undefined

  let outcome: RunOutcome | undefined
  let failure: ExecutionFailure | undefined
  try {
    outcome = runProgrammable({
      programmable: accepted.programmable,
      sender,
      gasOwner,
      nowMs,
      digest,
      ...(gasCoin ? { gasCoin } : {}),
      objects: state.objects,
      addressBalance: (address, type) => addressBalanceOf(state, address, type),
      functions: options.functions,
    })
  } catch (error) {
    if (!(error instanceof ExecutionAbort)) throw error
    failure = error.failure
  }

  if (gasMode === 'gasless') {
    if (failure)
      return {
        status: 'rejected',
        code: 3,
        message: `Gasless transaction would fail: ${failure.description}`,
      }
    const problem = checkGaslessAmounts(state, sender, outcome?.addressBalanceDeltas ?? new Map())
    if (problem) return problem
  }

  // Objects touched: every owned input and payment coin; their versions set the lamport version.
  const touched = new Map<string, StoredObject>()
  for (const id of [...accepted.ownedInputs, ...payment.map((p) => p.objectId)]) {
    const object = state.objects.get(id)
    if (object) touched.set(id, object)
  }
  const recordTargets = (outcome?.records ?? []).map((r) =>
    r.objectId ? state.objects.get(r.objectId) : undefined,
  )
  const lamport =
    [...touched.values(), ...recordTargets].reduce(
      (max, o) => (o && o.version > max ? o.version : max),
      0n,
    ) + 1n

  const writes: StoredObject[] = []
  const deletes: string[] = []
  const changes: ObjectChange[] = []
  const write = (
    object: Omit<StoredObject, 'digest' | 'previousTransaction' | 'version'>,
    before?: StoredObject,
  ) => {
    const next = { ...object, version: lamport }
    const stored: StoredObject = {
      ...next,
      digest: objectDigest(next),
      previousTransaction: digest,
    }
    writes.push(stored)
    changes.push({
      objectId: stored.objectId,
      objectType: stored.type,
      operation: before ? 'mutated' : 'created',
      ...(before
        ? { input: { version: before.version, digest: before.digest, owner: before.owner } }
        : {}),
      output: { version: stored.version, digest: stored.digest, owner: stored.owner },
    })
  }
  const remove = (before: StoredObject) => {
    deletes.push(before.objectId)
    changes.push({
      objectId: before.objectId,
      objectType: before.type,
      operation: 'deleted',
      input: { version: before.version, digest: before.digest, owner: before.owner },
    })
  }
  const addressOwner = (address: string): ObjectOwner => ({
    kind: 'address',
    address: normalizeSuiAddress(address),
  })

  const abDeltas = new Map<string, bigint>(failure ? [] : (outcome?.addressBalanceDeltas ?? []))
  if (outcome && !failure) {
    for (const coin of outcome.inputCoins) {
      if (coin === gasCoin || !coin.objectId) continue
      const before = touched.get(coin.objectId) as StoredObject
      if (!coin.alive && !coin.transferredTo) remove(before)
      else {
        write(
          {
            ...before,
            owner: coin.transferredTo ? addressOwner(coin.transferredTo) : before.owner,
            coin: { coinType: coin.coinType, balance: coin.balance },
          },
          before,
        )
      }
    }
    for (const coin of outcome.createdCoins) {
      write({
        objectId: newObjectId(state),
        owner: addressOwner(coin.transferredTo as string),
        type: coinObjectType(coin.coinType),
        coin: { coinType: coin.coinType, balance: coin.balance },
      })
    }
    outcome.records.forEach((record, i) => {
      const before = recordTargets[i]
      write(
        {
          objectId: record.objectId ?? newObjectId(state),
          owner: record.shared
            ? before?.owner.kind === 'shared'
              ? before.owner
              : { kind: 'shared', initialVersion: lamport }
            : addressOwner(record.owner),
          type: record.type,
          fields: record.fields,
        },
        before,
      )
    })
  }

  // Gas: computation, plus storage for written objects minus the rebate of the ones replaced.
  const gasObjectWrites = gasMode === 'coin' ? 1n : 0n
  const written = BigInt(writes.length) + gasObjectWrites
  const replaced = BigInt(changes.filter((c) => c.input).length) + BigInt(payment.length)
  let gasUsed: GasUsed =
    gasMode === 'gasless'
      ? { computationCost: 0n, storageCost: 0n, storageRebate: 0n, nonRefundableStorageFee: 0n }
      : {
          computationCost: price * MIN_COMPUTATION_UNITS,
          storageCost: written * STORAGE_PER_OBJECT,
          storageRebate: replaced * REBATE_PER_OBJECT,
          nonRefundableStorageFee: replaced * (STORAGE_PER_OBJECT - REBATE_PER_OBJECT),
        }
  let charge = gasUsed.computationCost + gasUsed.storageCost - gasUsed.storageRebate
  if (charge > budget && gasMode !== 'gasless') {
    failure = { kind: ErrorKind.insufficientGas, description: 'InsufficientGas' }
    writes.length = 0
    deletes.length = 0
    changes.length = 0
    abDeltas.clear()
    charge = budget
    gasUsed = {
      computationCost: budget,
      storageCost: 0n,
      storageRebate: 0n,
      nonRefundableStorageFee: 0n,
    }
  } else if (failure) {
    writes.length = 0
    deletes.length = 0
    changes.length = 0
  }

  if (gasMode === 'coin' && gasCoin) {
    const [first, ...rest] = paymentObjects as [StoredObject, ...StoredObject[]]
    const balance = (failure ? gasTotal : gasCoin.balance + budget) - charge
    for (const extra of rest) remove(extra)
    // TransferObjects may move the gas coin (after gas is charged): it goes to the recipient.
    const owner =
      !failure && gasCoin.transferredTo ? addressOwner(gasCoin.transferredTo) : first.owner
    write({ ...first, owner, coin: { coinType: SUI_TYPE, balance } }, first)
  } else if (gasMode === 'addressBalance') {
    const key = balanceKey(gasOwner, SUI_TYPE)
    abDeltas.set(key, (abDeltas.get(key) ?? 0n) - charge)
  }

  // Balance changes: coin objects before/after plus address-balance deltas, per (owner, type).
  const sums = new Map<string, bigint>()
  const add = (owner: ObjectOwner | undefined, coin: StoredObject['coin'], sign: bigint) => {
    if (!coin || owner?.kind !== 'address') return
    const key = balanceKey(owner.address, coin.coinType)
    sums.set(key, (sums.get(key) ?? 0n) + sign * coin.balance)
  }
  for (const id of deletes) {
    const before = state.objects.get(id)
    add(before?.owner, before?.coin, -1n)
  }
  for (const object of writes) {
    const before = state.objects.get(object.objectId)
    add(before?.owner, before?.coin, -1n)
    add(object.owner, object.coin, 1n)
  }
  for (const [key, delta] of abDeltas) sums.set(key, (sums.get(key) ?? 0n) + delta)
  const balanceChanges = [...sums]
    .filter(([, amount]) => amount !== 0n)
    .map(([key, amount]) => {
      const [address = '', coinType = ''] = key.split('|')
      return { address, coinType, amount }
    })

  const record: TransactionRecord = {
    digest,
    txBytes: options.txBytes,
    signatures: options.signatures,
    sender,
    epoch: state.epoch,
    checkpoint: state.checkpoint + 1n,
    timestampMs: nowMs,
    lamportVersion: lamport,
    status: failure ? { success: false, error: failure } : { success: true },
    gasUsed,
    ...(gasMode === 'coin' && payment[0] ? { gasObjectId: payment[0].objectId } : {}),
    changes,
    balanceChanges,
    events: failure ? [] : (outcome?.events ?? []).map((e) => ({ ...e, sender })),
  }
  if (options.dryRun) return record

  for (const id of deletes) state.objects.delete(id)
  for (const object of writes) state.objects.set(object.objectId, object)
  for (const [key, delta] of abDeltas) {
    const next = (state.addressBalances.get(key) ?? 0n) + delta
    if (next === 0n) state.addressBalances.delete(key)
    else state.addressBalances.set(key, next)
  }
  state.checkpoint = record.checkpoint
  state.transactions.set(digest, record)
  return record
}
