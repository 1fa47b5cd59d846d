/**
 * Conversions from the ledger's records to the gRPC messages of `@mysten/sui/grpc` (`GrpcTypes`).
 *
 * @module
 */
import { bcs } from '@mysten/sui/bcs'
import { GrpcTypes } from '@mysten/sui/grpc'
import { fromBase64 } from '@mysten/sui/utils'
import { normalizeTypeTag } from '../../internal/typeTag.js'
import type {
  LedgerEvent,
  ObjectChange,
  ObjectOwner,
  StoredObject,
  TransactionRecord,
} from './state.js'

type Proto<T extends keyof typeof GrpcTypes> = (typeof GrpcTypes)[T] extends { create(): infer M }
  ? M
  : never

/** A JSON value as `google.protobuf.Value`. */
export function jsonValue(value: unknown): NonNullable<GrpcTypes.Object['json']> {
  if (value === null || value === undefined)
    return { kind: { oneofKind: 'nullValue', nullValue: 0 } }
  if (typeof value === 'string') return { kind: { oneofKind: 'stringValue', stringValue: value } }
  if (typeof value === 'number') return { kind: { oneofKind: 'numberValue', numberValue: value } }
  if (typeof value === 'bigint')
    return { kind: { oneofKind: 'stringValue', stringValue: value.toString() } }
  if (typeof value === 'boolean') return { kind: { oneofKind: 'boolValue', boolValue: value } }
  if (Array.isArray(value)) {
    return {
      kind: {
        oneofKind: 'listValue',
        listValue: { values: value.map((v) => jsonValue(v) as never) },
      },
    }
  }
  const fields: Record<string, never> = {}
  for (const [k, v] of Object.entries(value as Record<string, unknown>))
    fields[k] = jsonValue(v) as never
  return { kind: { oneofKind: 'structValue', structValue: { fields } } }
}

/** An owner as `sui.rpc.v2.Owner`. */
export function ownerProto(owner: ObjectOwner): Proto<'Owner'> {
  switch (owner.kind) {
    case 'address':
      return { kind: GrpcTypes.Owner_OwnerKind.ADDRESS, address: owner.address }
    case 'shared':
      return { kind: GrpcTypes.Owner_OwnerKind.SHARED, version: owner.initialVersion }
    case 'immutable':
      return { kind: GrpcTypes.Owner_OwnerKind.IMMUTABLE }
  }
}

/** An object as `sui.rpc.v2.Object`. */
export function objectProto(object: StoredObject): Proto<'Object'> {
  const coinBcs = object.coin
    ? bcs
        .struct('Coin', { id: bcs.Address, balance: bcs.u64() })
        .serialize({ id: object.objectId, balance: object.coin.balance })
        .toBytes()
    : undefined
  return {
    objectId: object.objectId,
    version: object.version,
    digest: object.digest,
    owner: ownerProto(object.owner),
    objectType: object.type,
    hasPublicTransfer: true,
    ...(object.coin ? { balance: object.coin.balance } : {}),
    ...(coinBcs ? { contents: { name: object.type, value: coinBcs } } : {}),
    previousTransaction: object.previousTransaction,
    storageRebate: 978_120n,
    json: jsonValue(
      object.coin
        ? { id: object.objectId, balance: object.coin.balance.toString() }
        : (object.fields ?? {}),
    ),
  }
}

function changedObjectProto(change: ObjectChange): Proto<'ChangedObject'> {
  const {
    ChangedObject_InputObjectState: In,
    ChangedObject_OutputObjectState: Out,
    ChangedObject_IdOperation: Op,
  } = GrpcTypes
  return {
    objectId: change.objectId,
    objectType: change.objectType,
    inputState: change.input ? In.EXISTS : In.DOES_NOT_EXIST,
    ...(change.input
      ? {
          inputVersion: change.input.version,
          inputDigest: change.input.digest,
          inputOwner: ownerProto(change.input.owner),
        }
      : {}),
    outputState: change.output ? Out.OBJECT_WRITE : Out.DOES_NOT_EXIST,
    ...(change.output
      ? {
          outputVersion: change.output.version,
          outputDigest: change.output.digest,
          outputOwner: ownerProto(change.output.owner),
        }
      : {}),
    idOperation:
      change.operation === 'created'
        ? Op.CREATED
        : change.operation === 'deleted'
          ? Op.DELETED
          : Op.NONE,
  }
}

function eventProto(event: LedgerEvent, record: TransactionRecord, index: number): Proto<'Event'> {
  return {
    packageId: event.packageId,
    module: event.module,
    sender: event.sender,
    eventType: event.eventType,
    contents: { name: event.eventType, value: event.bcs },
    json: jsonValue(event.json),
    checkpoint: record.checkpoint,
    transactionDigest: record.digest,
    eventIndex: index,
  }
}

function statusProto(record: TransactionRecord): Proto<'ExecutionStatus'> {
  if (record.status.success) return { success: true }
  const { error } = record.status
  return {
    success: false,
    error: {
      description: error.description,
      kind: error.kind,
      ...(error.command === undefined ? {} : { command: BigInt(error.command) }),
      errorDetails: error.abort
        ? {
            oneofKind: 'abort',
            abort: {
              abortCode: error.abort.code,
              location: {
                package: error.abort.package,
                module: error.abort.module,
                functionName: error.abort.functionName,
              },
            },
          }
        : { oneofKind: undefined },
    },
  }
}

/** Which parts of an executed transaction a read mask asks for. */
export type TransactionFields = {
  transactionData: boolean
  effects: boolean
  changedObjects: boolean
  events: boolean
  balanceChanges: boolean
}

/**
 * Reads a field mask (paths such as `effects.status`, `balance_changes`, `transaction.sender`).
 * No mask means everything. `prefix` is stripped first (simulation nests under `transaction.`).
 */
export function fieldsOf(mask: { paths: string[] } | undefined, prefix = ''): TransactionFields {
  if (!mask || mask.paths.length === 0) {
    return {
      transactionData: true,
      effects: true,
      changedObjects: true,
      events: true,
      balanceChanges: true,
    }
  }
  const paths = mask.paths.map((p) => (prefix && p.startsWith(prefix) ? p.slice(prefix.length) : p))
  const has = (test: (p: string) => boolean) => paths.some(test)
  return {
    transactionData: has(
      (p) => p === 'transaction' || p === 'transaction.kind' || p === 'transaction.sender',
    ),
    effects: has((p) => p === 'effects'),
    changedObjects: has((p) => p === 'effects' || p.startsWith('effects.changed_objects')),
    events: has((p) => p === 'events' || p.startsWith('events.')),
    balanceChanges: has((p) => p === 'balance_changes'),
  }
}

/** A committed (or simulated) transaction as `sui.rpc.v2.ExecutedTransaction`, pruned to `fields`. */
export function executedTransactionProto(
  record: TransactionRecord,
  fields: TransactionFields,
): Proto<'ExecutedTransaction'> {
  const changed = fields.changedObjects ? record.changes.map(changedObjectProto) : []
  const gasObject = record.gasObjectId
    ? changed.find((c) => c.objectId === record.gasObjectId)
    : undefined
  const effects: Proto<'TransactionEffects'> = fields.effects
    ? {
        version: 2,
        digest: record.digest,
        status: statusProto(record),
        epoch: record.epoch,
        gasUsed: record.gasUsed,
        transactionDigest: record.digest,
        ...(gasObject ? { gasObject } : {}),
        dependencies: [],
        lamportVersion: record.lamportVersion,
        changedObjects: changed,
        unchangedConsensusObjects: [],
        unchangedLoadedRuntimeObjects: [],
      }
    : {
        status: statusProto(record),
        epoch: record.epoch,
        dependencies: [],
        changedObjects: changed,
        unchangedConsensusObjects: [],
        unchangedLoadedRuntimeObjects: [],
      }
  return {
    digest: record.digest,
    transaction: {
      bcs: { name: 'TransactionData', value: record.txBytes },
      digest: record.digest,
      ...(fields.transactionData ? transactionDataProto(record.txBytes) : {}),
    },
    signatures: record.signatures.map((s) => ({
      bcs: { name: 'UserSignatureBytes', value: fromBase64(s) },
      signature: { oneofKind: undefined },
    })),
    effects,
    ...(fields.events
      ? { events: { events: record.events.map((e, i) => eventProto(e, record, i)) } }
      : {}),
    checkpoint: record.checkpoint,
    timestamp: {
      seconds: BigInt(Math.floor(record.timestampMs / 1000)),
      nanos: (record.timestampMs % 1000) * 1_000_000,
    },
    balanceChanges: fields.balanceChanges
      ? record.balanceChanges.map((c) => ({
          address: c.address,
          coinType: normalizeTypeTag(c.coinType) ?? c.coinType,
          amount: c.amount.toString(),
        }))
      : [],
  }
}

type RawArg = {
  GasCoin?: unknown
  Input?: number
  Result?: number
  NestedResult?: [number, number]
}

function argumentProto(arg: RawArg): Proto<'Argument'> {
  const K = GrpcTypes.Argument_ArgumentKind
  if (arg.GasCoin) return { kind: K.GAS }
  if (arg.Input !== undefined) return { kind: K.INPUT, input: arg.Input }
  if (arg.Result !== undefined) return { kind: K.RESULT, result: arg.Result }
  const [result, subresult] = arg.NestedResult ?? [0, 0]
  return { kind: K.RESULT, result, subresult }
}

/** The parsed fields of `sui.rpc.v2.Transaction` (sender, gas, expiration, kind) from BCS bytes. */
export function transactionDataProto(txBytes: Uint8Array): Partial<Proto<'Transaction'>> {
  const v1 = bcs.TransactionData.parse(txBytes).V1
  const ptb = v1?.kind.ProgrammableTransaction
  if (!v1 || !ptb) return {}
  const IK = GrpcTypes.Input_InputKind
  const inputs: Proto<'Input'>[] = ptb.inputs.map((input) => {
    if (input.Pure) return { kind: IK.PURE, pure: fromBase64(input.Pure.bytes) }
    if (input.FundsWithdrawal) {
      const w = input.FundsWithdrawal
      return {
        kind: IK.FUNDS_WITHDRAWAL,
        fundsWithdrawal: {
          amount: BigInt(w.reservation.MaxAmountU64 ?? 0),
          coinType: w.typeArg.Balance ?? '',
          source: w.withdrawFrom.Sponsor
            ? GrpcTypes.FundsWithdrawal_Source.SPONSOR
            : GrpcTypes.FundsWithdrawal_Source.SENDER,
        },
      }
    }
    const ref = input.Object?.ImmOrOwnedObject
    return {
      kind: IK.IMMUTABLE_OR_OWNED,
      objectId: ref?.objectId ?? '',
      version: BigInt(ref?.version ?? 0),
      digest: ref?.digest ?? '',
    }
  })
  const commands: Proto<'Command'>[] = ptb.commands.map((cmd) => {
    if (cmd.MoveCall) {
      const c = cmd.MoveCall
      return {
        command: {
          oneofKind: 'moveCall',
          moveCall: {
            package: c.package,
            module: c.module,
            function: c.function,
            typeArguments: c.typeArguments,
            arguments: c.arguments.map(argumentProto),
          },
        },
      }
    }
    if (cmd.TransferObjects) {
      return {
        command: {
          oneofKind: 'transferObjects',
          transferObjects: {
            objects: cmd.TransferObjects.objects.map(argumentProto),
            address: argumentProto(cmd.TransferObjects.address),
          },
        },
      }
    }
    if (cmd.SplitCoins) {
      return {
        command: {
          oneofKind: 'splitCoins',
          splitCoins: {
            coin: argumentProto(cmd.SplitCoins.coin),
            amounts: cmd.SplitCoins.amounts.map(argumentProto),
          },
        },
      }
    }
    if (cmd.MergeCoins) {
      return {
        command: {
          oneofKind: 'mergeCoins',
          mergeCoins: {
            coin: argumentProto(cmd.MergeCoins.destination),
            coinsToMerge: cmd.MergeCoins.sources.map(argumentProto),
          },
        },
      }
    }
    return { command: { oneofKind: undefined } }
  })
  const EK = GrpcTypes.TransactionExpiration_TransactionExpirationKind
  const exp = v1.expiration
  const expiration: Proto<'TransactionExpiration'> = exp.ValidDuring
    ? {
        kind: EK.VALID_DURING,
        ...(exp.ValidDuring.minEpoch === null
          ? {}
          : { minEpoch: BigInt(exp.ValidDuring.minEpoch) }),
        ...(exp.ValidDuring.maxEpoch === null ? {} : { epoch: BigInt(exp.ValidDuring.maxEpoch) }),
        chain: exp.ValidDuring.chain,
        nonce: exp.ValidDuring.nonce,
      }
    : exp.Epoch !== undefined
      ? { kind: EK.EPOCH, epoch: BigInt(exp.Epoch) }
      : { kind: EK.NONE }
  return {
    version: 1,
    sender: v1.sender,
    gasPayment: {
      objects: v1.gasData.payment.map((p) => ({
        objectId: p.objectId,
        version: BigInt(p.version),
        digest: p.digest,
      })),
      owner: v1.gasData.owner,
      price: BigInt(v1.gasData.price),
      budget: BigInt(v1.gasData.budget),
    },
    expiration,
    kind: {
      kind: GrpcTypes.TransactionKind_Kind.PROGRAMMABLE_TRANSACTION,
      data: { oneofKind: 'programmableTransaction', programmableTransaction: { inputs, commands } },
    },
  }
}
