/**
 * Server-side transaction resolution, as a full node does for `SimulateTransaction` when the SDK
 * builds with a client (`tx.build({ client })`): object ids become full refs, a missing gas price
 * becomes the reference price, gas coins are selected and a budget is estimated by a dry run.
 *
 * @module
 */
import { bcs } from '@mysten/sui/bcs'
import { GrpcTypes } from '@mysten/sui/grpc'
import { normalizeSuiAddress } from '@mysten/sui/utils'
import type { LedgerEngine } from './engine.js'
import { addressBalanceOf, coinsOf, SUI_TYPE } from './state.js'
import { GrpcCode } from './validate.js'

/** A resolution problem, answered as a gRPC error. */
export type ResolveError = { status: 'rejected'; code: number; message: string }

type Arg =
  | { GasCoin: true }
  | { Input: number }
  | { Result: number }
  | { NestedResult: [number, number] }
const MAX_BUDGET = 50_000_000_000n

function argument(a: GrpcTypes.Argument | undefined): Arg {
  const K = GrpcTypes.Argument_ArgumentKind
  switch (a?.kind) {
    case K.GAS:
      return { GasCoin: true }
    case K.INPUT:
      return { Input: a.input ?? 0 }
    case K.RESULT:
      return a.subresult === undefined
        ? { Result: a.result ?? 0 }
        : { NestedResult: [a.result ?? 0, a.subresult] }
    default:
      throw new Error('unknown argument kind')
  }
}

function command(c: GrpcTypes.Command) {
  const cmd = c.command
  switch (cmd.oneofKind) {
    case 'moveCall':
      return {
        MoveCall: {
          package: cmd.moveCall.package ?? '',
          module: cmd.moveCall.module ?? '',
          function: cmd.moveCall.function ?? '',
          typeArguments: cmd.moveCall.typeArguments,
          arguments: cmd.moveCall.arguments.map(argument),
        },
      }
    case 'transferObjects':
      return {
        TransferObjects: {
          objects: cmd.transferObjects.objects.map(argument),
          address: argument(cmd.transferObjects.address),
        },
      }
    case 'splitCoins':
      return {
        SplitCoins: {
          coin: argument(cmd.splitCoins.coin),
          amounts: cmd.splitCoins.amounts.map(argument),
        },
      }
    case 'mergeCoins':
      return {
        MergeCoins: {
          destination: argument(cmd.mergeCoins.coin),
          sources: cmd.mergeCoins.coinsToMerge.map(argument),
        },
      }
    case 'makeMoveVector':
      return {
        MakeMoveVec: {
          type: cmd.makeMoveVector.elementType ?? null,
          elements: cmd.makeMoveVector.elements.map(argument),
        },
      }
    default:
      throw new Error(`command ${cmd.oneofKind} is not supported by the local ledger`)
  }
}

/**
 * Resolves a (possibly partial) gRPC transaction to BCS `TransactionData` bytes.
 * `doGasSelection`: pick gas coins (or the address balance) and estimate the budget.
 */
export async function resolveTransaction(
  engine: LedgerEngine,
  tx: GrpcTypes.Transaction,
  doGasSelection: boolean,
): Promise<Uint8Array | ResolveError> {
  const reject = (message: string): ResolveError => ({
    status: 'rejected',
    code: GrpcCode.invalidArgument,
    message,
  })
  const { state } = engine
  const ptb =
    tx.kind?.data.oneofKind === 'programmableTransaction'
      ? tx.kind.data.programmableTransaction
      : undefined
  if (!ptb) return reject('only programmable transactions can be resolved by the local ledger')
  const sender = normalizeSuiAddress(tx.sender ?? '0x0')
  const gasOwner = normalizeSuiAddress(tx.gasPayment?.owner ?? sender)
  const IK = GrpcTypes.Input_InputKind
  const used = new Set<string>()
  try {
    const inputs = ptb.inputs.map((input) => {
      if (input.kind === IK.PURE) return { Pure: { bytes: input.pure ?? new Uint8Array() } }
      if (input.kind === IK.FUNDS_WITHDRAWAL) {
        const w = input.fundsWithdrawal
        return {
          FundsWithdrawal: {
            reservation: { MaxAmountU64: String(w?.amount ?? 0n) },
            typeArg: { Balance: w?.coinType ?? SUI_TYPE },
            withdrawFrom:
              w?.source === GrpcTypes.FundsWithdrawal_Source.SPONSOR
                ? { Sponsor: true }
                : { Sender: true },
          },
        }
      }
      if (input.kind === IK.SHARED || input.kind === IK.RECEIVING)
        throw new Error('shared and receiving objects are not supported by the local ledger')
      const objectId = normalizeSuiAddress(input.objectId ?? '0x0')
      const object = state.objects.get(objectId)
      if (!object) throw new Error(`object ${objectId} not found`)
      used.add(objectId)
      return {
        Object: {
          ImmOrOwnedObject: { objectId, version: String(object.version), digest: object.digest },
        },
      }
    })
    const commands = ptb.commands.map(command)
    const price = tx.gasPayment?.price ?? state.referenceGasPrice
    let payment = (tx.gasPayment?.objects ?? []).map((o) => ({
      objectId: normalizeSuiAddress(o.objectId ?? '0x0'),
      version: String(o.version ?? 0n),
      digest: o.digest ?? '',
    }))
    const EK = GrpcTypes.TransactionExpiration_TransactionExpirationKind
    const e = tx.expiration
    let expiration: object =
      e?.kind === EK.VALID_DURING
        ? {
            ValidDuring: {
              minEpoch: e.minEpoch === undefined ? null : String(e.minEpoch),
              maxEpoch: e.epoch === undefined ? null : String(e.epoch),
              minTimestamp: null,
              maxTimestamp: null,
              chain: e.chain ?? '',
              nonce: e.nonce ?? 0,
            },
          }
        : e?.kind === EK.EPOCH
          ? { Epoch: String(e.epoch ?? 0n) }
          : { None: true }
    const gasless = price === 0n && tx.gasPayment?.budget === 0n
    if (doGasSelection && payment.length === 0 && !gasless) {
      const coins = coinsOf(state, gasOwner, SUI_TYPE).filter((c) => !used.has(c.objectId))
      if (coins.length > 0) {
        payment = coins
          .slice(0, 256)
          .map((c) => ({ objectId: c.objectId, version: String(c.version), digest: c.digest }))
      } else if (
        addressBalanceOf(state, gasOwner, SUI_TYPE) > 0n &&
        !('ValidDuring' in expiration)
      ) {
        const nonce = (Math.random() * 0x100000000) >>> 0
        expiration = {
          ValidDuring: {
            minEpoch: String(state.epoch),
            maxEpoch: String(state.epoch + 1n),
            minTimestamp: null,
            maxTimestamp: null,
            chain: state.chainId,
            nonce,
          },
        }
      }
    }
    const serialize = (budget: bigint) =>
      bcs.TransactionData.serialize({
        V1: {
          kind: { ProgrammableTransaction: { inputs, commands } },
          sender,
          gasData: { payment, owner: gasOwner, price: String(price), budget: String(budget) },
          expiration,
        },
      } as never).toBytes()
    if (tx.gasPayment?.budget !== undefined || gasless)
      return serialize(tx.gasPayment?.budget ?? 0n)
    // Estimate the budget: dry-run with everything available, then charge computation + storage.
    const available =
      payment.length > 0
        ? payment.reduce((sum, p) => sum + (state.objects.get(p.objectId)?.coin?.balance ?? 0n), 0n)
        : addressBalanceOf(state, gasOwner, SUI_TYPE)
    const probeBudget = available < MAX_BUDGET ? available : MAX_BUDGET
    const probe = await engine.simulate(serialize(probeBudget))
    if (probe.status === 'rejected') return probe
    const { computationCost, storageCost } = probe.record.gasUsed
    const estimate = computationCost + storageCost
    return serialize(estimate > price * 1000n ? estimate : price * 1000n)
  } catch (error) {
    return reject(error instanceof Error ? error.message : 'transaction does not resolve')
  }
}
