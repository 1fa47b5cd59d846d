/**
 * The gRPC methods the SDK's `client.core` calls, answered from the ledger engine.
 *
 * @module
 */
import { GrpcTypes } from '@mysten/sui/grpc'
import { normalizeStructTag, normalizeSuiAddress } from '@mysten/sui/utils'
import type { LedgerEngine } from './engine.js'
import { executedTransactionProto, fieldsOf, objectProto } from './proto.js'
import { resolveTransaction } from './resolve.js'
import { addressBalanceOf, coinsOf, objectsOwnedBy, SUI_TYPE, WORMHOLE_USDC_TYPE } from './state.js'
import { GrpcCode } from './validate.js'

/** An error answered as grpc-status + grpc-message. */
export class GrpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message)
    this.name = 'GrpcError'
  }
}

/** A unary handler: decoded request message in, response message out. */
export type Handler = (request: never) => Promise<object> | object

const MAX_PAGE = 1000

function address(value: string | undefined): string {
  if (!value) throw new GrpcError(GrpcCode.invalidArgument, 'missing owner address')
  try {
    return normalizeSuiAddress(value)
  } catch {
    throw new GrpcError(GrpcCode.invalidArgument, `invalid address ${value}`)
  }
}

function coinType(value: string | undefined): string {
  try {
    return normalizeStructTag(value ?? SUI_TYPE)
  } catch {
    throw new GrpcError(GrpcCode.invalidArgument, `invalid coin type ${value}`)
  }
}

function page<T>(items: T[], pageSize: number | undefined, token: Uint8Array | undefined) {
  const start = token && token.length > 0 ? Number(Buffer.from(token).toString('utf8')) || 0 : 0
  const size = Math.min(pageSize && pageSize > 0 ? pageSize : 50, MAX_PAGE)
  const slice = items.slice(start, start + size)
  const next =
    start + size < items.length ? new Uint8Array(Buffer.from(String(start + size))) : undefined
  return { slice, next }
}

/** Builds the handler table, keyed `sui.rpc.v2.Service/Method`. */
export function createHandlers(options: {
  engine: LedgerEngine
  execute: (
    txBytes: Uint8Array,
    signatures: string[],
    mask: { paths: string[] } | undefined,
  ) => Promise<object>
}): Map<string, Handler> {
  const { engine } = options
  const state = () => engine.state
  const balanceOf = (owner: string, type: string) => {
    const coinBalance = coinsOf(state(), owner, type).reduce(
      (sum, c) => sum + (c.coin?.balance ?? 0n),
      0n,
    )
    const addressBalance = addressBalanceOf(state(), owner, type)
    return { coinType: type, balance: coinBalance + addressBalance, coinBalance, addressBalance }
  }
  const getTransaction = (digest: string | undefined, mask: { paths: string[] } | undefined) => {
    const record = digest ? state().transactions.get(digest) : undefined
    if (!record) throw new GrpcError(GrpcCode.notFound, `Transaction ${digest} not found`)
    return executedTransactionProto(record, fieldsOf(mask))
  }
  const getObject = (id: string | undefined) => {
    const object = id ? state().objects.get(address(id)) : undefined
    if (!object) throw new GrpcError(GrpcCode.notFound, `Object ${id} not found`)
    return objectProto(object)
  }
  const epochProto = () => ({
    epoch: state().epoch,
    referenceGasPrice: state().referenceGasPrice,
    start: { seconds: BigInt(Math.floor(state().epochStartMs / 1000)), nanos: 0 },
    firstCheckpoint: 0n,
    protocolConfig: { protocolVersion: 100n, featureFlags: {}, attributes: {}, configs: {} },
    systemState: {
      version: 2n,
      epoch: state().epoch,
      protocolVersion: 100n,
      referenceGasPrice: state().referenceGasPrice,
      epochStartTimestampMs: BigInt(state().epochStartMs),
      safeMode: false,
      safeModeStorageRewards: 0n,
      safeModeComputationRewards: 0n,
      safeModeStorageRebates: 0n,
      safeModeNonRefundableStorageFee: 0n,
      validatorReportRecords: [],
      parameters: {
        epochDurationMs: 86_400_000n,
        stakeSubsidyStartEpoch: 0n,
        maxValidatorCount: 150n,
        minValidatorJoiningStake: 0n,
        validatorLowStakeThreshold: 0n,
        validatorLowStakeGracePeriod: 0n,
      },
      storageFund: { totalObjectStorageRebates: 0n, nonRefundableBalance: 0n },
      stakeSubsidy: {
        balance: 0n,
        distributionCounter: 0n,
        currentDistributionAmount: 0n,
        stakeSubsidyPeriodLength: 0n,
        stakeSubsidyDecreaseRate: 0,
      },
    },
  })
  const coinMetadata: Record<
    string,
    { decimals: number; name: string; symbol: string; description: string }
  > = {
    [SUI_TYPE]: {
      decimals: 9,
      name: 'Sui',
      symbol: 'SUI',
      description: 'Local ledger SUI (not real)',
    },
    [state().usdcType]: {
      decimals: 6,
      name: 'USDC',
      symbol: 'USDC',
      description: 'Local ledger USDC (not real)',
    },
    [WORMHOLE_USDC_TYPE]: {
      decimals: 6,
      name: 'USD Coin (Wormhole)',
      symbol: 'wUSDC',
      description: 'Local ledger wUSDC (not real)',
    },
  }

  const table: Record<string, Handler> = {
    'LedgerService/GetServiceInfo': () => ({
      chainId: state().chainId,
      chain: 'local',
      epoch: state().epoch,
      checkpointHeight: state().checkpoint,
      timestamp: { seconds: BigInt(Math.floor(Date.now() / 1000)), nanos: 0 },
      lowestAvailableCheckpoint: 0n,
      lowestAvailableCheckpointObjects: 0n,
      server: 'tollgate-local-ledger',
    }),
    'LedgerService/GetEpoch': (r: GrpcTypes.GetEpochRequest) => {
      if (r.epoch !== undefined && r.epoch !== state().epoch)
        throw new GrpcError(GrpcCode.notFound, `Epoch ${r.epoch} not found`)
      return { epoch: epochProto() }
    },
    'LedgerService/GetTransaction': (r: GrpcTypes.GetTransactionRequest) => ({
      transaction: getTransaction(r.digest, r.readMask),
    }),
    'LedgerService/BatchGetTransactions': (r: GrpcTypes.BatchGetTransactionsRequest) => ({
      transactions: r.digests.map((digest) => {
        try {
          return {
            result: { oneofKind: 'transaction', transaction: getTransaction(digest, r.readMask) },
          }
        } catch (error) {
          return {
            result: {
              oneofKind: 'error',
              error: { code: GrpcCode.notFound, message: (error as Error).message, details: [] },
            },
          }
        }
      }),
    }),
    'LedgerService/GetObject': (r: GrpcTypes.GetObjectRequest) => ({
      object: getObject(r.objectId),
    }),
    'LedgerService/BatchGetObjects': (r: GrpcTypes.BatchGetObjectsRequest) => ({
      objects: r.requests.map((q) => {
        try {
          return { result: { oneofKind: 'object', object: getObject(q.objectId) } }
        } catch (error) {
          return {
            result: {
              oneofKind: 'error',
              error: { code: GrpcCode.notFound, message: (error as Error).message, details: [] },
            },
          }
        }
      }),
    }),
    'LedgerService/GetCheckpoint': () => ({
      checkpoint: { sequenceNumber: state().checkpoint, digest: state().chainId, transactions: [] },
    }),
    'StateService/GetBalance': (r: GrpcTypes.GetBalanceRequest) => ({
      balance: balanceOf(address(r.owner), coinType(r.coinType)),
    }),
    'StateService/ListBalances': (r: GrpcTypes.ListBalancesRequest) => {
      const owner = address(r.owner)
      const types = new Set<string>()
      for (const o of objectsOwnedBy(state(), owner)) if (o.coin) types.add(o.coin.coinType)
      for (const key of state().addressBalances.keys()) {
        const [a, t] = key.split('|')
        if (a === owner && t) types.add(t)
      }
      const { slice, next } = page([...types].sort(), r.pageSize, r.pageToken)
      return {
        balances: slice.map((t) => balanceOf(owner, t)),
        ...(next ? { nextPageToken: next } : {}),
      }
    },
    'StateService/ListOwnedObjects': (r: GrpcTypes.ListOwnedObjectsRequest) => {
      const owner = address(r.owner)
      let objects = objectsOwnedBy(state(), owner)
      if (r.objectType) {
        let wanted: string
        try {
          wanted = normalizeStructTag(r.objectType)
        } catch {
          throw new GrpcError(GrpcCode.invalidArgument, `invalid object type ${r.objectType}`)
        }
        const bare = !wanted.includes('<')
        objects = objects.filter((o) =>
          bare ? o.type.split('<')[0] === wanted : o.type === wanted,
        )
      }
      const { slice, next } = page(objects, r.pageSize, r.pageToken)
      return { objects: slice.map(objectProto), ...(next ? { nextPageToken: next } : {}) }
    },
    'StateService/GetCoinInfo': (r: GrpcTypes.GetCoinInfoRequest) => {
      const type = coinType(r.coinType)
      const metadata = coinMetadata[type]
      if (!metadata) throw new GrpcError(GrpcCode.notFound, `Coin ${type} not found`)
      return { coinType: type, metadata }
    },
    'TransactionExecutionService/ExecuteTransaction': (r: GrpcTypes.ExecuteTransactionRequest) => {
      const bytes = r.transaction?.bcs?.value
      if (!bytes)
        throw new GrpcError(GrpcCode.invalidArgument, 'transaction BCS bytes are required')
      const signatures = r.signatures.map((s) =>
        Buffer.from(s.bcs?.value ?? new Uint8Array()).toString('base64'),
      )
      return options.execute(bytes, signatures, r.readMask)
    },
    'TransactionExecutionService/SimulateTransaction': async (
      r: GrpcTypes.SimulateTransactionRequest,
    ) => {
      let bytes = r.transaction?.bcs?.value
      if (!bytes) {
        if (!r.transaction)
          throw new GrpcError(GrpcCode.invalidArgument, 'a transaction is required')
        const resolved = await resolveTransaction(engine, r.transaction, r.doGasSelection ?? false)
        if (!(resolved instanceof Uint8Array)) throw new GrpcError(resolved.code, resolved.message)
        bytes = resolved
      }
      const result = await engine.simulate(bytes)
      if (result.status === 'rejected') throw new GrpcError(result.code, result.message)
      return {
        transaction: executedTransactionProto(result.record, fieldsOf(r.readMask, 'transaction.')),
        commandOutputs: [],
        suggestedGasPrice: state().referenceGasPrice,
      }
    },
  }
  const handlers = new Map<string, Handler>()
  for (const [name, handler] of Object.entries(table)) handlers.set(`sui.rpc.v2.${name}`, handler)
  return handlers
}

/** Request/response message types of every method the SDK knows, keyed `sui.rpc.v2.Service/Method`. */
export function methodTypes(): Map<
  string,
  { I: { fromBinary(b: Uint8Array): object }; O: { toBinary(m: never): Uint8Array } }
> {
  const map = new Map()
  for (const service of [
    GrpcTypes.LedgerService,
    GrpcTypes.StateService,
    GrpcTypes.TransactionExecutionService,
  ]) {
    for (const method of service.methods) map.set(`${service.typeName}/${method.name}`, method)
  }
  return map
}
