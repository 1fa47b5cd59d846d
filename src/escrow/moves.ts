/**
 * Transaction builders for the moves of an escrowed job: `fund` (buyer), `deliver` (seller),
 * `release` and `reject` (buyer), `refund` (seller at any time, buyer after the deadline), and
 * `setFee` (the admin). Each returns a `Transaction` with sender, gas price, budget and gas coins
 * set, ready to be signed by that party and executed.
 *
 * @module
 */
import type { ClientWithCoreApi } from '@mysten/sui/client'
import type { Transaction } from '@mysten/sui/transactions'
import { fromHex, normalizeStructTag, normalizeSuiAddress } from '@mysten/sui/utils'
import { PaymentError } from '../errors.js'
import { moveTransaction, takeFunds } from '../internal/moveTx.js'
import { type EscrowJob, readEscrowConfig } from './job.js'
import type { EscrowTerms } from './terms.js'

/** Gas budget of an escrow move (0.01 SUI). */
export const escrowGasBudget = 10_000_000n

/** What every builder needs: the client, the package, and who signs. */
export type MoveOptions = {
  client: ClientWithCoreApi
  /** The package holding the `escrow` module. */
  package: string
  /** The address that signs (the buyer, the seller or the admin, as the move requires). */
  sender: string
  /** Gas budget in MIST. Default {@link escrowGasBudget}. */
  gasBudget?: bigint
}

/** A job as a transaction argument: its id and initial shared version (from {@link readJob}). */
export type JobRef = Pick<EscrowJob, 'id' | 'initialSharedVersion'>

function base(options: MoveOptions): Promise<Transaction> {
  return moveTransaction({ ...options, gasBudget: options.gasBudget ?? escrowGasBudget })
}

function jobArg(tx: Transaction, job: JobRef) {
  return tx.sharedObjectRef({
    objectId: job.id,
    initialSharedVersion: job.initialSharedVersion,
    mutable: true,
  })
}

function hash32(hex: string, what: string): Uint8Array {
  if (!/^[0-9a-f]{64}$/.test(hex)) {
    throw new PaymentError('invalid_request_body', `${what} must be 64 lowercase hex characters.`)
  }
  return fromHex(hex)
}

/**
 * Builds `escrow::fund`: locks exactly `terms.amount` of the buyer's USDC in a new shared job.
 * Uses the buyer's USDC coins, or else the address balance. The call aborts on the ledger when the
 * fee rate is no longer `terms.feeBps` or the amount is not the budget (nothing is locked then).
 *
 * @param options.sender - the buyer.
 * @param options.configInitialSharedVersion - the config object's initial shared version (default:
 *   read from the ledger; "1" on the local ledger, the publish transaction's version on a network).
 * @example
 * const tx = await buildFund({ client, package: terms.package, sender: buyer, terms })
 * const bytes = await tx.build(); const { signature } = await keypair.signTransaction(bytes)
 */
export async function buildFund(
  options: MoveOptions & { terms: EscrowTerms; configInitialSharedVersion?: string },
): Promise<Transaction> {
  const { terms } = options
  const amount = BigInt(terms.amount)
  const asset = normalizeStructTag(terms.asset)
  const tx = await base(options)
  const payment = await takeFunds(tx, { ...options, asset, amount, as: 'coin' })
  tx.moveCall({
    target: `${normalizeSuiAddress(options.package)}::escrow::fund`,
    arguments: [
      tx.sharedObjectRef({
        objectId: terms.config,
        initialSharedVersion: await configVersion(options, terms.config),
        mutable: false,
      }),
      payment,
      tx.pure.address(terms.seller),
      tx.pure.u64(amount),
      tx.pure.u64(terms.feeBps),
      tx.pure.u64(terms.deliverByMs),
      tx.pure.u64(terms.reviewMs),
      tx.pure.vector('u8', hash32(terms.terms, 'terms')),
      tx.object.clock(),
    ],
  })
  return tx
}

/**
 * Builds `escrow::deliver`: the seller commits to a delivery by its 32-byte hash (hex SHA-256,
 * see `deliveryHash`).
 *
 * @param options.sender - the seller.
 */
export async function buildDeliver(
  options: MoveOptions & { job: JobRef; deliveryHash: string },
): Promise<Transaction> {
  const tx = await base(options)
  tx.moveCall({
    target: `${normalizeSuiAddress(options.package)}::escrow::deliver`,
    arguments: [
      jobArg(tx, options.job),
      tx.pure.vector('u8', hash32(options.deliveryHash, 'deliveryHash')),
      tx.object.clock(),
    ],
  })
  return tx
}

/**
 * Builds `escrow::release`: the buyer accepts the delivery (the seller may after the review window).
 * Pays the seller `amount − fee` and the treasury the job's fee.
 */
export async function buildRelease(options: MoveOptions & { job: JobRef }): Promise<Transaction> {
  const tx = await base(options)
  tx.moveCall({
    target: `${normalizeSuiAddress(options.package)}::escrow::release`,
    arguments: [jobArg(tx, options.job), tx.object.clock()],
  })
  return tx
}

/** Builds `escrow::reject`: the buyer rejects the delivery within the review window. */
export async function buildReject(
  options: MoveOptions & { job: JobRef; reason?: string },
): Promise<Transaction> {
  const reason = options.reason ?? ''
  if (new TextEncoder().encode(reason).length > 1024) {
    throw new PaymentError('invalid_request_body', 'A rejection reason is at most 1024 bytes.')
  }
  const tx = await base(options)
  tx.moveCall({
    target: `${normalizeSuiAddress(options.package)}::escrow::reject`,
    arguments: [jobArg(tx, options.job), tx.pure.string(reason), tx.object.clock()],
  })
  return tx
}

/** Builds `escrow::refund`: everything back to the buyer, no fee. */
export async function buildRefund(options: MoveOptions & { job: JobRef }): Promise<Transaction> {
  const tx = await base(options)
  tx.moveCall({
    target: `${normalizeSuiAddress(options.package)}::escrow::refund`,
    arguments: [jobArg(tx, options.job), tx.object.clock()],
  })
  return tx
}

/**
 * Builds `escrow::set_fee`: the admin (holder of the `AdminCap`) sets the fee rate of jobs funded
 * from now on. Jobs already funded keep theirs.
 *
 * @param options.configInitialSharedVersion - the config object's initial shared version (default:
 *   read from the ledger).
 */
export async function buildSetFee(
  options: MoveOptions & {
    adminCap: { objectId: string; version: string; digest: string }
    config: string
    feeBps: number
    configInitialSharedVersion?: string
  },
): Promise<Transaction> {
  const tx = await base(options)
  tx.moveCall({
    target: `${normalizeSuiAddress(options.package)}::escrow::set_fee`,
    arguments: [
      tx.objectRef(options.adminCap),
      tx.sharedObjectRef({
        objectId: options.config,
        initialSharedVersion: await configVersion(options, options.config),
        mutable: true,
      }),
      tx.pure.u64(options.feeBps),
    ],
  })
  return tx
}

/**
 * The `EscrowConfig`'s initial shared version: the one given, else read from the ledger (it is 1
 * only on the local ledger, where the config exists from the start).
 */
async function configVersion(
  options: MoveOptions & { configInitialSharedVersion?: string | undefined },
  config: string,
): Promise<string> {
  if (options.configInitialSharedVersion !== undefined) return options.configInitialSharedVersion
  return (await readEscrowConfig(options.client, config)).initialSharedVersion
}
