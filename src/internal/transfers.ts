/**
 * A small abstract interpreter over a programmable transaction: which amounts of which coin types
 * does it provably send to which addresses? Used by the seller's local pre-check to reject obvious
 * underpayment, a wrong recipient or a wrong asset before any ledger round trip. The ledger's
 * effects (balance changes) stay the authority; this only rejects early.
 *
 * @module
 */
import { bcs } from '@mysten/sui/bcs'
import { fromBase64, normalizeStructTag, normalizeSuiAddress } from '@mysten/sui/utils'
import { normalizeTypeTag } from './typeTag.js'

/** The raw, BCS-decoded transaction data (V1). */
export type RawTransactionData = ReturnType<typeof bcs.TransactionData.parse>['V1']
type RawCommand = NonNullable<
  RawTransactionData['kind']['ProgrammableTransaction']
>['commands'][number]
type RawArgument = NonNullable<RawCommand['SplitCoins']>['coin']

/** A value the interpreter tracks: a coin or a balance of a (maybe unknown) type and amount. */
type Value = {
  kind: 'coin' | 'balance' | 'withdrawal' | 'other'
  /** Normalised coin type, when the transaction states it. */
  type: string | undefined
  /** Amount in base units, when the transaction states it. */
  amount: bigint | undefined
}

/** One transfer the transaction makes. */
export type Transfer = {
  /** Normalised recipient address. */
  to: string
  /** Normalised coin type, `undefined` when only the ledger knows it (an owned coin object). */
  type: string | undefined
  /** Amount, `undefined` when only the ledger knows it (a whole coin object moved). */
  amount: bigint | undefined
  /** `object` for TransferObjects, `funds` for the address-balance send calls. */
  via: 'object' | 'funds'
}

/** What {@link analyseTransfers} found. */
export type TransferAnalysis =
  | { status: 'ok'; transfers: Transfer[]; calls: string[] }
  | { status: 'unsupported'; reason: string }

const sui = normalizeStructTag('0x2::sui::SUI')
const unknownValue: Value = { kind: 'other', type: undefined, amount: undefined }

/**
 * Walks the commands of `data` and lists every transfer of coins or balances it makes. Move calls
 * other than the known coin/balance helpers are listed in `calls` (their outputs are opaque).
 */
export function analyseTransfers(data: RawTransactionData): TransferAnalysis {
  const ptb = data.kind.ProgrammableTransaction
  if (!ptb) return { status: 'unsupported', reason: 'not a programmable transaction' }
  const inputs = ptb.inputs
  const results: Value[][] = []
  const transfers: Transfer[] = []
  const calls: string[] = []

  const pureBytes = (arg: RawArgument): Uint8Array | undefined => {
    if (arg.$kind !== 'Input') return undefined
    const input = inputs[arg.Input]
    return input?.$kind === 'Pure' ? fromBase64(input.Pure.bytes) : undefined
  }
  const pureU64 = (arg: RawArgument): bigint | undefined => {
    const bytes = pureBytes(arg)
    return bytes?.length === 8 ? BigInt(bcs.u64().parse(bytes)) : undefined
  }
  const pureAddress = (arg: RawArgument): string | undefined => {
    const bytes = pureBytes(arg)
    return bytes?.length === 32 ? normalizeSuiAddress(bcs.Address.parse(bytes)) : undefined
  }
  const valueAt = (arg: RawArgument): Value => {
    switch (arg.$kind) {
      case 'GasCoin':
        return { kind: 'coin', type: sui, amount: undefined }
      case 'Input': {
        const input = inputs[arg.Input]
        if (input?.$kind === 'Object') return { kind: 'coin', type: undefined, amount: undefined }
        if (input?.$kind === 'FundsWithdrawal') {
          const w = input.FundsWithdrawal
          return {
            kind: 'withdrawal',
            type: w.typeArg.$kind === 'Balance' ? typeOf(w.typeArg.Balance) : undefined,
            amount:
              w.reservation.$kind === 'MaxAmountU64'
                ? BigInt(w.reservation.MaxAmountU64)
                : undefined,
          }
        }
        return unknownValue
      }
      case 'Result':
        return results[arg.Result]?.[0] ?? unknownValue
      case 'NestedResult':
        return results[arg.NestedResult[0]]?.[arg.NestedResult[1]] ?? unknownValue
      default:
        return unknownValue
    }
  }

  for (const command of ptb.commands) {
    switch (command.$kind) {
      case 'SplitCoins': {
        const source = valueAt(command.SplitCoins.coin)
        results.push(
          command.SplitCoins.amounts.map((a) => ({
            kind: 'coin' as const,
            type: source.type,
            amount: pureU64(a),
          })),
        )
        break
      }
      case 'MergeCoins':
        results.push([])
        break
      case 'TransferObjects': {
        const to = pureAddress(command.TransferObjects.address)
        for (const object of command.TransferObjects.objects) {
          const value = valueAt(object)
          if (value.kind !== 'coin') continue
          if (to === undefined)
            return { status: 'unsupported', reason: 'recipient is not a pure address' }
          transfers.push({ to, type: value.type, amount: value.amount, via: 'object' })
        }
        results.push([])
        break
      }
      case 'MoveCall': {
        const call = command.MoveCall
        const target = `${normalizeSuiAddress(call.package)}::${call.module}::${call.function}`
        const typeArg = call.typeArguments[0]
        const type = typeArg === undefined ? undefined : typeOf(typeArg)
        const [first, second] = call.arguments
        const input = first === undefined ? unknownValue : valueAt(first)
        switch (target) {
          case `${framework}::balance::redeem_funds`:
            results.push([{ kind: 'balance', type, amount: input.amount }])
            break
          case `${framework}::coin::redeem_funds`:
            results.push([{ kind: 'coin', type, amount: input.amount }])
            break
          case `${framework}::coin::into_balance`:
            results.push([{ kind: 'balance', type, amount: input.amount }])
            break
          case `${framework}::coin::from_balance`:
            results.push([{ kind: 'coin', type, amount: input.amount }])
            break
          case `${framework}::balance::send_funds`:
          case `${framework}::coin::send_funds`: {
            const to = second === undefined ? undefined : pureAddress(second)
            if (to === undefined)
              return { status: 'unsupported', reason: 'recipient is not a pure address' }
            transfers.push({ to, type: type ?? input.type, amount: input.amount, via: 'funds' })
            results.push([])
            break
          }
          default:
            calls.push(target)
            results.push([])
        }
        break
      }
      default:
        results.push([])
    }
  }
  return { status: 'ok', transfers, calls }
}

const framework = normalizeSuiAddress('0x2')

/**
 * A stated type, normalised. Text that is not a type tag stays as it is: it can never equal the
 * asset, so whatever it moves counts as another asset, never as the asset.
 */
function typeOf(text: string): string {
  return normalizeTypeTag(text) ?? text
}

/** How much of `asset` a list of transfers can send to `payTo`, as far as the bytes tell. */
export type PaymentToRecipient = {
  /** Sum of stated amounts to `payTo` whose stated type is `asset`. */
  provenAmount: bigint
  /** Sum of stated amounts to `payTo` whose type is `asset` or only known to the ledger. */
  possibleAmount: bigint
  /** Whether some transfer to `payTo` (of `asset` or an unknown type) has an unstated amount. */
  unbounded: boolean
  /** Whether some transfer to `payTo` is of a stated type other than `asset`. */
  hasOtherAsset: boolean
  /** Whether anything at all goes to `payTo`. */
  reachesRecipient: boolean
}

/** Sums what `transfers` send to `payTo` in `asset` (both normalised by the caller). */
export function paymentTo(transfers: Transfer[], payTo: string, asset: string): PaymentToRecipient {
  const found: PaymentToRecipient = {
    provenAmount: 0n,
    possibleAmount: 0n,
    unbounded: false,
    hasOtherAsset: false,
    reachesRecipient: false,
  }
  for (const t of transfers) {
    if (t.to !== payTo) continue
    found.reachesRecipient = true
    if (t.type !== undefined && t.type !== asset) {
      found.hasOtherAsset = true
    } else if (t.amount === undefined) {
      found.unbounded = true
    } else {
      found.possibleAmount += t.amount
      if (t.type === asset) found.provenAmount += t.amount
    }
  }
  return found
}
