/**
 * Checks a validator makes before executing: signatures, expiration and chain, owned-object
 * versions, gas, withdrawals and the gasless rules. A failure here is a rejection: nothing is
 * executed, nothing is charged, and the client sees a gRPC error, as from a real node.
 *
 * @module
 */
import { bcs } from '@mysten/sui/bcs'
import { normalizeSuiAddress } from '@mysten/sui/utils'
import { verifyTransactionSigner } from '../../internal/suiSignature.js'
import { normalizeTypeTag } from '../../internal/typeTag.js'
import { gaslessAllowList } from './natives.js'
import type { Programmable } from './programmable.js'
import { addressBalanceOf, type LedgerState, SUI_TYPE } from './state.js'

/** gRPC status codes the emulator answers with. */
export const GrpcCode = {
  ok: 0,
  invalidArgument: 3,
  deadlineExceeded: 4,
  notFound: 5,
  failedPrecondition: 9,
  unimplemented: 12,
  internal: 13,
  unavailable: 14,
} as const

/** A transaction the ledger refuses to execute. */
export type Rejection = { status: 'rejected'; code: number; message: string }

/** How gas is paid. */
export type GasMode = 'coin' | 'addressBalance' | 'gasless'

/** A transaction that passed every pre-execution check. */
export type Accepted = {
  status: 'accepted'
  sender: string
  gasOwner: string
  price: bigint
  budget: bigint
  gasMode: GasMode
  payment: { objectId: string; version: bigint; digest: string }[]
  programmable: Programmable
  ownedInputs: string[]
}

/** Minimum gasless transfer and minimum remainder: 0.01 USDC. */
export const GASLESS_MINIMUM = 10_000n
/** Computation units charged per transaction (the smallest bucket on Sui). */
export const MIN_COMPUTATION_UNITS = 1_000n

function reject(message: string, code: number = GrpcCode.invalidArgument): Rejection {
  return { status: 'rejected', code, message }
}

function hex(value: bigint): string {
  return `0x${value.toString(16)}`
}

/** Parsed transaction data whose signatures were checked. */
export type Signed = { status: 'signed'; data: ReturnType<typeof bcs.TransactionData.parse> }

/** Parses the bytes and checks that exactly the required signers signed them. */
export async function checkSignatures(
  txBytes: Uint8Array,
  signatures: string[],
  options: { checkSignatures?: boolean } = {},
): Promise<Signed | Rejection> {
  let data: ReturnType<typeof bcs.TransactionData.parse>
  try {
    data = bcs.TransactionData.parse(txBytes)
  } catch {
    return reject('Invalid transaction: could not deserialize TransactionData')
  }
  const v1 = data.V1
  const programmable = v1?.kind.ProgrammableTransaction
  if (!v1 || !programmable)
    return reject('Only programmable transactions are supported by the local ledger')
  const sender = normalizeSuiAddress(v1.sender)
  const gasOwner = normalizeSuiAddress(v1.gasData.owner)

  // Signatures: one per required signer (sender, and gas owner when sponsored), no others.
  const required = new Set([sender, gasOwner])
  const checkSignatures = options.checkSignatures ?? true
  if (checkSignatures && signatures.length === 0)
    return reject('Invalid user signature: no signatures')
  if (signatures.length > 2) return reject('Invalid user signature: too many signatures')
  const signers = new Set<string>()
  for (const signature of checkSignatures ? signatures : []) {
    const check = await verifyTransactionSigner(txBytes, signature)
    if (check.status === 'invalid') return reject(`Invalid user signature: ${check.reason}`)
    if (!required.has(check.address)) {
      return reject(
        `Invalid user signature: signer ${check.address} is not the sender or the gas owner`,
      )
    }
    signers.add(check.address)
  }
  for (const who of checkSignatures ? required : []) {
    if (!signers.has(who)) {
      const role = who === sender ? 'sender' : 'gas owner (sponsor)'
      return reject(
        `Signer signatures is not valid: required signature from ${role} ${who} is absent`,
      )
    }
  }

  return { status: 'signed', data }
}

/** State checks (synchronous): expiration, chain, objects, gas, withdrawals, gasless shape. */
export function validateState(
  state: LedgerState,
  data: ReturnType<typeof bcs.TransactionData.parse>,
): Accepted | Rejection {
  const v1 = data.V1
  const programmable = v1?.kind.ProgrammableTransaction
  if (!v1 || !programmable) {
    return reject('Only programmable transactions are supported by the local ledger')
  }
  const sender = normalizeSuiAddress(v1.sender)
  const gasOwner = normalizeSuiAddress(v1.gasData.owner)

  // Expiration and chain.
  const expiration = v1.expiration
  if (expiration.Epoch !== undefined && state.epoch > BigInt(expiration.Epoch)) {
    return reject('Transaction Expired')
  }
  if (expiration.ValidDuring) {
    const { minEpoch, maxEpoch, minTimestamp, maxTimestamp, chain } = expiration.ValidDuring
    if (chain !== state.chainId) {
      return reject(`Transaction is for chain ${chain}, but this is chain ${state.chainId}`)
    }
    if (minEpoch !== null && maxEpoch !== null && BigInt(maxEpoch) - BigInt(minEpoch) > 1n) {
      return reject('Invalid ValidDuring: the range may span at most one epoch')
    }
    const now = BigInt(Date.now())
    if (
      (minEpoch !== null && state.epoch < BigInt(minEpoch)) ||
      (maxEpoch !== null && state.epoch > BigInt(maxEpoch)) ||
      (minTimestamp !== null && now < BigInt(minTimestamp)) ||
      (maxTimestamp !== null && now > BigInt(maxTimestamp))
    ) {
      return reject('Transaction Expired')
    }
  } else if (expiration.$kind !== 'None' && expiration.$kind !== 'Epoch') {
    return reject(`Unsupported transaction expiration ${expiration.$kind}`)
  }

  // Owned objects: exist, owned by the sender, current version and digest, no duplicates.
  const seen = new Set<string>()
  const ownedInputs: string[] = []
  const checkRef = (
    ref: { objectId: string; version: string | number | bigint; digest: string },
    owner: string,
  ) => {
    const id = normalizeSuiAddress(ref.objectId)
    if (seen.has(id)) return reject(`Object ${id} is used twice in the transaction`)
    seen.add(id)
    const current = state.objects.get(id)
    if (!current)
      return reject(
        `Could not find the referenced object ${id} at version ${hex(BigInt(ref.version))}`,
      )
    if (current.version !== BigInt(ref.version) || current.digest !== ref.digest) {
      return reject(
        `Transaction needs to be rebuilt because object ${id} version ${hex(BigInt(ref.version))} is unavailable for consumption, current version: ${hex(current.version)}`,
      )
    }
    if (current.owner.kind !== 'address' || current.owner.address !== owner) {
      return reject(`Object ${id} is not owned by ${owner}`)
    }
    return undefined
  }
  for (const input of programmable.inputs) {
    const shared = input.Object?.SharedObject
    if (shared) {
      const problem = checkShared(state, shared, seen)
      if (problem) return problem
      continue
    }
    if (input.Object) {
      const ref = input.Object.ImmOrOwnedObject
      if (!ref)
        return reject(
          `Object input kind ${input.Object.$kind} is not supported by the local ledger`,
        )
      const problem = checkRef(ref, sender)
      if (problem) return problem
      ownedInputs.push(normalizeSuiAddress(ref.objectId))
    }
  }

  // Gas.
  const price = BigInt(v1.gasData.price)
  const budget = BigInt(v1.gasData.budget)
  const payment = v1.gasData.payment.map((p) => ({
    objectId: normalizeSuiAddress(p.objectId),
    version: BigInt(p.version),
    digest: p.digest,
  }))
  let gasMode: GasMode
  if (payment.length > 0) {
    gasMode = 'coin'
    let total = 0n
    for (const ref of v1.gasData.payment) {
      const problem = checkRef(ref, gasOwner)
      if (problem) return problem
      const coin = state.objects.get(normalizeSuiAddress(ref.objectId))?.coin
      if (coin?.coinType !== SUI_TYPE) return reject(`Gas object ${ref.objectId} is not a SUI coin`)
      total += coin.balance
    }
    if (total < budget) {
      return reject(`Balance of gas object ${total} is lower than the needed amount: ${budget}`)
    }
  } else if (price === 0n && budget === 0n) {
    gasMode = 'gasless'
  } else {
    gasMode = 'addressBalance'
    const available = addressBalanceOf(state, gasOwner, SUI_TYPE)
    if (available < budget) {
      return reject(
        `Address balance of gas owner ${available} is lower than the needed amount: ${budget}`,
      )
    }
  }
  if (payment.length === 0 && !expiration.ValidDuring) {
    return reject('Transactions without gas coins need a ValidDuring expiration')
  }
  if (gasMode !== 'gasless') {
    if (price < state.referenceGasPrice) {
      return reject(`Gas price ${price} under reference gas price (RGP) ${state.referenceGasPrice}`)
    }
    if (budget < price * MIN_COMPUTATION_UNITS) {
      return reject(
        `Gas budget ${budget} is lower than the minimum ${price * MIN_COMPUTATION_UNITS}`,
      )
    }
  }

  // Withdrawals: each reservation must be covered by the owner's address balance.
  const reserved = new Map<string, bigint>()
  for (const input of programmable.inputs) {
    const w = input.FundsWithdrawal
    if (!w) continue
    const owner = w.withdrawFrom.Sponsor ? gasOwner : w.withdrawFrom.Sender ? sender : undefined
    if (!owner) return reject('Withdrawals from an allowance are not supported by the local ledger')
    const type = normalizeTypeTag(w.typeArg.Balance ?? '') ?? String(w.typeArg.Balance)
    const key = `${owner}|${type}`
    const total = (reserved.get(key) ?? 0n) + BigInt(w.reservation.MaxAmountU64 ?? 0)
    reserved.set(key, total)
    if (addressBalanceOf(state, owner, type) < total) {
      return reject(
        `Available balance for withdrawal is insufficient: ${owner} holds less than ${total} of ${type}`,
      )
    }
  }

  if (gasMode === 'gasless') {
    const problem = checkGaslessShape(state, programmable)
    if (problem) return problem
  }
  return {
    status: 'accepted',
    sender,
    gasOwner,
    price,
    budget,
    gasMode,
    payment,
    programmable,
    ownedInputs,
  }
}

/** A shared-object input: the object exists, is shared, at the initial version the input names. */
function checkShared(
  state: LedgerState,
  ref: { objectId: string; initialSharedVersion: string | number | bigint },
  seen: Set<string>,
): Rejection | undefined {
  const id = normalizeSuiAddress(ref.objectId)
  if (seen.has(id)) return reject(`Object ${id} is used twice in the transaction`)
  seen.add(id)
  const current = state.objects.get(id)
  if (!current) return reject(`Could not find the referenced shared object ${id}`)
  if (current.owner.kind !== 'shared') return reject(`Object ${id} is not a shared object`)
  if (current.owner.initialVersion !== BigInt(ref.initialSharedVersion)) {
    return reject(
      `Shared object ${id} has initial shared version ${hex(current.owner.initialVersion)}, not ${hex(BigInt(ref.initialSharedVersion))}`,
    )
  }
  return undefined
}

/** Gasless transactions: only allow-listed commands, only USDC. */
function checkGaslessShape(state: LedgerState, programmable: Programmable): Rejection | undefined {
  const framework = normalizeSuiAddress('0x2')
  for (const cmd of programmable.commands) {
    if (cmd.SplitCoins || cmd.MergeCoins) continue
    const call = cmd.MoveCall
    if (
      !call ||
      normalizeSuiAddress(call.package) !== framework ||
      !gaslessAllowList.has(`${call.module}::${call.function}`)
    ) {
      const what = call ? `${call.package}::${call.module}::${call.function}` : cmd.$kind
      return reject(`Gasless transaction calls ${what}, which is not allowed without gas`)
    }
    for (const t of call.typeArguments) {
      if (normalizeTypeTag(t) !== state.usdcType) {
        return reject(`Gasless transactions may only move ${state.usdcType}, not ${t}`)
      }
    }
  }
  for (const input of programmable.inputs) {
    const type = input.FundsWithdrawal?.typeArg.Balance
    if (type !== undefined && normalizeTypeTag(type) !== state.usdcType) {
      return reject(`Gasless transactions may only withdraw ${state.usdcType}, not ${type}`)
    }
    if (input.Object) return reject('Gasless transactions may not take owned objects')
  }
  return undefined
}

/**
 * Gasless amount rules, checked on the outcome: every recipient other than the sender gets at
 * least 0.01 USDC, and the sender ends with 0 or at least 0.01.
 */
export function checkGaslessAmounts(
  state: LedgerState,
  sender: string,
  deltas: ReadonlyMap<string, bigint>,
): Rejection | undefined {
  for (const [key, delta] of deltas) {
    const [address = '', type = ''] = key.split('|')
    if (address === sender) {
      const after = addressBalanceOf(state, address, type) + delta
      if (after > 0n && after < GASLESS_MINIMUM) {
        return reject(
          `Gasless transfer leaves a remainder of ${after}, under the minimum of ${GASLESS_MINIMUM}`,
        )
      }
    } else if (delta > 0n && delta < GASLESS_MINIMUM) {
      return reject(`Gasless transfer of ${delta} is below the minimum of ${GASLESS_MINIMUM}`)
    }
  }
  return undefined
}
