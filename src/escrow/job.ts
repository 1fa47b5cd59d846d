/**
 * An escrowed job as the ledger holds it (a shared `EscrowJob` object), read through the SDK's
 * core API, and the fee rule.
 *
 * @module
 */
import type { ClientWithCoreApi } from '@mysten/sui/client'
import { normalizeSuiAddress } from '@mysten/sui/utils'
import { z } from 'zod'
import { PaymentError } from '../errors.js'

/**
 * The job's states: `funded` (USDC locked, nothing delivered), `delivered` (a delivery awaits the
 * buyer's review), `rejected` (the buyer rejected the last delivery; the seller may deliver again
 * before the deadline), and the final `released` (paid to the seller and the treasury) and
 * `refunded` (returned to the buyer).
 */
export const jobStates = ['funded', 'delivered', 'rejected', 'released', 'refunded'] as const
/** One of {@link jobStates}. */
export type JobState = (typeof jobStates)[number]

/** Basis points in one whole. */
const BPS = 10_000n

/**
 * The fee of a release: `floor(amount × feeBps / 10 000)`. The seller gets `amount − fee`, so no
 * base unit is lost; the rounding favours the seller by less than one base unit.
 *
 * @example
 * escrowFee(1_000_001n, 500n) // 50_000n: the seller gets 950_001n
 */
export function escrowFee(amount: bigint, feeBps: bigint): bigint {
  if (amount < 0n || feeBps < 0n || feeBps > BPS) {
    throw new PaymentError('invalid_amount', 'Escrow amounts and fee rates must be in range.')
  }
  return (amount * feeBps) / BPS
}

const u64 = z
  .string()
  .regex(/^\d{1,20}$/)
  .transform((v) => BigInt(v))
const hex = z.string().regex(/^([0-9a-f]{64})?$/)

const JobFieldsSchema = z.object({
  config: z.string(),
  buyer: z.string(),
  seller: z.string(),
  amount: u64,
  balance: u64,
  fee_bps: u64,
  treasury: z.string(),
  funded_at_ms: u64,
  deliver_by_ms: u64,
  review_ms: u64,
  terms: hex,
  state: z.enum(jobStates),
  delivery_hash: hex,
  delivered_at_ms: u64,
  deliveries: u64,
  rejections: u64,
  reject_reason: z.string().max(1024),
  paid_to_seller: u64,
  paid_fee: u64,
  refunded: u64,
})

/** An escrowed job, read from the ledger. Amounts in base units, times in ms of the ledger's clock. */
export type EscrowJob = {
  id: string
  /** The shared object's initial version (needed to use the job in a transaction). */
  initialSharedVersion: string
  /** The object's type, `<package>::escrow::EscrowJob`. */
  type: string
  state: JobState
  buyer: string
  seller: string
  /** What was funded. */
  amount: bigint
  /** What the job still holds (0 once released or refunded). */
  balance: bigint
  /** The fee rate fixed at funding. */
  feeBps: bigint
  treasury: string
  config: string
  fundedAtMs: bigint
  deliverByMs: bigint
  reviewMs: bigint
  /** Hex SHA-256 of the offer. */
  terms: string
  /** Hex SHA-256 of the last delivery ('' before any). */
  deliveryHash: string
  deliveredAtMs: bigint
  deliveries: bigint
  rejections: bigint
  rejectReason: string
  paidToSeller: bigint
  paidFee: bigint
  refunded: bigint
}

/**
 * Reads a job from the ledger (`client.core.getObject`).
 *
 * @returns the job, or `undefined` when no such job exists.
 * @throws PaymentError `invalid_transaction` when the object is not an escrow job of `pkg`.
 * @example
 * const job = await readJob(client, jobId, { package: pkg })
 * if (job?.state === 'delivered') …
 */
export async function readJob(
  client: ClientWithCoreApi,
  jobId: string,
  options: { package: string },
): Promise<EscrowJob | undefined> {
  const id = normalizeSuiAddress(jobId)
  let object: Awaited<ReturnType<ClientWithCoreApi['core']['getObject']>>['object']
  try {
    ;({ object } = await client.core.getObject({ objectId: id, include: { json: true } }))
  } catch (error) {
    if (/not found/i.test(String((error as Error)?.message))) return undefined
    throw error
  }
  const type = `${normalizeSuiAddress(options.package)}::escrow::EscrowJob`
  const owner = object.owner
  const fields = JobFieldsSchema.safeParse(object.json)
  if (object.type !== type || owner.$kind !== 'Shared' || !fields.success) {
    throw new PaymentError('invalid_transaction', `Object ${id} is not an escrow job.`, {
      details: { objectId: id },
    })
  }
  const f = fields.data
  return {
    id,
    initialSharedVersion: String(owner.Shared.initialSharedVersion),
    type,
    state: f.state,
    buyer: normalizeSuiAddress(f.buyer),
    seller: normalizeSuiAddress(f.seller),
    amount: f.amount,
    balance: f.balance,
    feeBps: f.fee_bps,
    treasury: normalizeSuiAddress(f.treasury),
    config: normalizeSuiAddress(f.config),
    fundedAtMs: f.funded_at_ms,
    deliverByMs: f.deliver_by_ms,
    reviewMs: f.review_ms,
    terms: f.terms,
    deliveryHash: f.delivery_hash,
    deliveredAtMs: f.delivered_at_ms,
    deliveries: f.deliveries,
    rejections: f.rejections,
    rejectReason: f.reject_reason,
    paidToSeller: f.paid_to_seller,
    paidFee: f.paid_fee,
    refunded: f.refunded,
  }
}

/** The escrow configuration: the fee rate new jobs get and the treasury. */
export type EscrowConfig = {
  id: string
  initialSharedVersion: string
  feeBps: bigint
  treasury: string
}

/**
 * Reads the shared `EscrowConfig` object.
 *
 * @example
 * const { feeBps } = await readEscrowConfig(client, configId)
 */
export async function readEscrowConfig(
  client: ClientWithCoreApi,
  configId: string,
): Promise<EscrowConfig> {
  const { object } = await client.core.getObject({
    objectId: normalizeSuiAddress(configId),
    include: { json: true },
  })
  const json = z.object({ fee_bps: u64, treasury: z.string() }).safeParse(object.json)
  if (
    object.owner.$kind !== 'Shared' ||
    !json.success ||
    !object.type.endsWith('::escrow::EscrowConfig')
  ) {
    throw new PaymentError('invalid_config', `Object ${configId} is not an escrow configuration.`)
  }
  return {
    id: object.objectId,
    initialSharedVersion: String(object.owner.Shared.initialSharedVersion),
    feeBps: json.data.fee_bps,
    treasury: normalizeSuiAddress(json.data.treasury),
  }
}
