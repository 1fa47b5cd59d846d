/**
 * `createJobClient()`: the buyer's (and seller's) side of escrowed jobs. A 402 that demands escrow
 * is never instant-paid (`ESCROW_REQUIRED`, whose `details.escrow` carries the terms); this client
 * funds a job on those terms instead, and makes the later moves: release, reject, refund (and, for
 * a seller, deliver). Transactions are built and signed here and submitted either straight to the
 * ledger or through a relay (the gateway's `/v1/jobs` routes).
 *
 * @module
 */
import type { ClientWithCoreApi } from '@mysten/sui/client'
import type { Signer } from '@mysten/sui/cryptography'
import { SuiGrpcClient } from '@mysten/sui/grpc'
import type { Transaction } from '@mysten/sui/transactions'
import { normalizeStructTag, normalizeSuiAddress } from '@mysten/sui/utils'
import { isPaymentError, PaymentError } from '../errors.js'
import { type EscrowJob, readJob } from '../escrow/job.js'
import { buildDeliver, buildFund, buildRefund, buildReject, buildRelease } from '../escrow/moves.js'
import { type EscrowTerms, EscrowTermsSchema } from '../escrow/terms.js'
import { formatAmount, type PriceInput, parseAmount } from '../money.js'
import type { WalletLimits } from './limits.js'

/** A job move. */
export type JobMove = 'fund' | 'deliver' | 'release' | 'reject' | 'refund'

/**
 * Submits a signed move: `jobId` is undefined for `fund`. Return the executed digest and job id,
 * or throw a `PaymentError` (`job_move_failed` when the ledger refused or aborted it).
 */
export type MoveSubmitter = (move: {
  move: JobMove
  jobId: string | undefined
  transaction: Uint8Array
  signature: string
}) => Promise<{ digest: string; jobId: string }>

/**
 * The escrow deployment a job client calls, from the buyer's own configuration: a network's
 * published ids, or those the local ledger reports (`tollgate wallet fund` records them). Never
 * taken from a seller's terms.
 */
export type PinnedEscrow = {
  /** The package holding the `escrow` module. */
  package: string
  /** Its shared `EscrowConfig` object (fee rate, treasury). */
  config: string
  /** The coin type a job may lock (the network's USDC). */
  asset: string
}

/** What the buyer asked for when funding a job: the offer must say the same. */
export type FundIntent = {
  /** Who the buyer means to pay. */
  seller?: string | undefined
  /** The budget the buyer means to lock, in USDC (`"2.5"`) or base units. */
  amount?: PriceInput | undefined
}

/** Options of {@link createJobClient}. */
export type JobClientOptions = {
  /** The buyer's (or seller's) key. Security: signs only the moves asked for; never logged. */
  signer: Signer
  /**
   * The escrow package, config object and asset this client signs calls to. Security: terms that
   * name another package, config object or asset are refused (`terms_mismatch`) before signing,
   * and so are later moves on a job of another package — a hostile server's terms cannot point
   * the buyer's signature at a package of its choosing.
   */
  escrow: PinnedEscrow
  /** The ledger: a gRPC URL or a core client. Used to build transactions and read jobs. */
  ledger: string | ClientWithCoreApi
  /** Where signed moves go. Default: executed on `ledger` directly. */
  submit?: MoveSubmitter
  /** Most a job may lock, in USDC (`"5"`) or base units; `PRICE_ABOVE_MAX` above it. Default none. */
  maxPrice?: PriceInput
  /**
   * Wallet limits a funded budget counts against (`LIMIT_PER_TX`, `LIMIT_PER_DAY`, refused before
   * signing), e.g. the paying fetch's `createWalletLimits()`. Default: none.
   */
  limits?: WalletLimits
  /**
   * Called with what is about to be signed, after every check and before signing (show it to the
   * user); throw to refuse. Default: none.
   */
  onSign?: ((move: SigningMove) => void | Promise<void>) | undefined
}

/** What a job client is about to sign (see `onSign`). */
export type SigningMove = {
  move: JobMove
  /** The escrow package called (the pinned one). */
  package: string
  /** The job moved; undefined for `fund`. */
  jobId: string | undefined
  /** The terms funded (for `fund`). */
  terms: EscrowTerms | undefined
}

/** The job client. */
export type JobClient = {
  readonly address: string
  /**
   * Funds a job on a seller's escrow terms: the terms themselves, or the `ESCROW_REQUIRED` error a
   * paying fetch threw (its `details.escrow`). Refuses before signing anything: malformed terms
   * (`invalid_payload`); terms whose package, config object or asset are not the pinned ones, or
   * whose seller or amount are not those of `intent` (`terms_mismatch`); a price above `maxPrice`
   * (`PRICE_ABOVE_MAX`).
   */
  fundJob(
    terms: unknown,
    intent?: FundIntent,
  ): Promise<{ jobId: string; digest: string; terms: EscrowTerms }>
  /** Reads a job (undefined when there is none). */
  status(jobId: string): Promise<EscrowJob | undefined>
  release(jobId: string): Promise<{ digest: string }>
  reject(jobId: string, reason?: string): Promise<{ digest: string }>
  refund(jobId: string): Promise<{ digest: string }>
  /** The seller's move: commits to a delivery by its hex SHA-256. */
  deliver(jobId: string, deliveryHash: string): Promise<{ digest: string }>
}

/** Parses escrow terms out of terms or an `ESCROW_REQUIRED` error. */
export function escrowTermsFrom(input: unknown): EscrowTerms {
  const raw =
    isPaymentError(input) && input.code === 'ESCROW_REQUIRED'
      ? (input.details as { escrow?: unknown } | undefined)?.escrow
      : input
  const parsed = EscrowTermsSchema.safeParse(raw)
  if (!parsed.success) {
    throw new PaymentError('invalid_payload', 'The escrow terms are missing or malformed.', {
      details: { issues: parsed.error.issues.slice(0, 5).map((i) => i.path.join('.')) },
    })
  }
  return parsed.data
}

/**
 * Checks escrow terms against the pinned deployment and the buyer's intent; throws
 * `terms_mismatch` naming every field that differs (what was offered, what was expected).
 */
export function checkEscrowTerms(
  terms: EscrowTerms,
  pinned: PinnedEscrow,
  intent: FundIntent = {},
) {
  const differs: { field: string; offered: string; expected: string }[] = []
  const compare = (field: string, offered: string, expected: string) => {
    if (offered !== expected) differs.push({ field, offered, expected })
  }
  compare('package', terms.package, normalizeSuiAddress(pinned.package))
  compare('config', terms.config, normalizeSuiAddress(pinned.config))
  compare('asset', sameType(terms.asset), sameType(pinned.asset))
  if (intent.seller !== undefined) {
    compare('seller', terms.seller, normalizeSuiAddress(intent.seller))
  }
  if (intent.amount !== undefined) {
    compare('amount', formatAmount(BigInt(terms.amount)), formatAmount(parseAmount(intent.amount)))
  }
  if (differs.length > 0) {
    throw new PaymentError(
      'terms_mismatch',
      `The offered escrow terms are not what was asked; nothing was signed: ${differs
        .map((d) => `${d.field} ${d.offered} (expected ${d.expected})`)
        .join('; ')}.`,
      { details: { differs } },
    )
  }
}

function sameType(type: string): string {
  try {
    return normalizeStructTag(type)
  } catch {
    return type
  }
}

/**
 * Creates a job client.
 *
 * @example
 * ```ts
 * const escrow = { package: ledger.modulesPackage, config: ledger.escrow.config, asset: ledger.usdcType }
 * const jobs = createJobClient({ signer, ledger: ledger.url, escrow, maxPrice: '5' })
 * try { await pay(url, init) } catch (error) {
 *   if (hasCode(error, 'ESCROW_REQUIRED')) {
 *     const { jobId } = await jobs.fundJob(error, { seller, amount: '2' })
 *     // … the seller delivers; check the hash, then:
 *     await jobs.release(jobId)
 *   }
 * }
 * ```
 */
export function createJobClient(options: JobClientOptions): JobClient {
  const client =
    typeof options.ledger === 'string'
      ? new SuiGrpcClient({ network: 'mainnet', baseUrl: options.ledger })
      : options.ledger
  const address = normalizeSuiAddress(options.signer.toSuiAddress())
  const max = options.maxPrice === undefined ? undefined : parseAmount(options.maxPrice)
  const pinned = normalizeSuiAddress(options.escrow.package)
  /** Package of each job this client has seen (from its terms or a read). */
  const packages = new Map<string, string>()

  const submit: MoveSubmitter =
    options.submit ??
    (async ({ transaction, signature }) => {
      const result = await client.core.executeTransaction({
        transaction,
        signatures: [signature],
        include: { events: true },
      })
      if (result.$kind !== 'Transaction') {
        throw new PaymentError(
          'job_move_failed',
          result.FailedTransaction.status.error?.message ?? 'The move failed on the ledger.',
          { details: { digest: result.FailedTransaction.digest } },
        )
      }
      const jobId = result.Transaction.events
        ?.map((e) => (e.json as { job_id?: unknown } | null)?.job_id)
        .find((id): id is string => typeof id === 'string')
      return { digest: result.Transaction.digest, jobId: jobId ?? '' }
    })

  const sign = async (tx: Transaction, move: JobMove, jobId?: string, terms?: EscrowTerms) => {
    await options.onSign?.({ move, package: pinned, jobId, terms })
    const transaction = await tx.build()
    const { signature } = await options.signer.signTransaction(transaction)
    return { transaction, signature }
  }

  const status = async (jobId: string): Promise<EscrowJob | undefined> => {
    const id = normalizeSuiAddress(jobId)
    const known = packages.get(id)
    if (known !== undefined) return readJob(client, id, { package: known })
    const { object } = await client.core
      .getObject({ objectId: id })
      .catch(() => ({ object: undefined }))
    const pkg = object?.type.match(/^(0x[0-9a-f]{64})::escrow::EscrowJob$/)?.[1]
    if (pkg === undefined) return undefined
    if (pkg !== pinned) {
      throw new PaymentError(
        'terms_mismatch',
        `The job ${id} belongs to the package ${pkg}, not the pinned escrow package ${pinned}; no move is signed on it.`,
        { details: { package: pkg, expected: pinned } },
      )
    }
    packages.set(id, pkg)
    return readJob(client, id, { package: pkg })
  }

  const jobOf = async (jobId: string): Promise<EscrowJob> => {
    const job = await status(jobId)
    if (!job) throw new PaymentError('job_not_found', `No escrow job ${jobId} on the ledger.`)
    return job
  }

  const later =
    (move: 'release' | 'refund') =>
    async (jobId: string): Promise<{ digest: string }> => {
      const job = await jobOf(jobId)
      const base = { client, package: packages.get(job.id) as string, sender: address, job }
      const tx = move === 'release' ? await buildRelease(base) : await buildRefund(base)
      const { digest } = await submit({ move, jobId: job.id, ...(await sign(tx, move, job.id)) })
      return { digest }
    }

  return {
    address,
    async fundJob(input, intent) {
      const terms = escrowTermsFrom(input)
      checkEscrowTerms(terms, options.escrow, intent)
      const amount = BigInt(terms.amount)
      if (max !== undefined && amount > max) {
        throw new PaymentError('PRICE_ABOVE_MAX', 'The job costs more than the price cap.', {
          details: { amount: terms.amount, max: max.toString() },
        })
      }
      const reservation = await options.limits?.reserve({
        amount,
        resource: `escrow:${terms.seller}:${terms.terms}`,
      })
      let submitted = false
      try {
        // The package comes from the pinned deployment (equal to the terms', checked above).
        const tx = await buildFund({ client, package: pinned, sender: address, terms })
        const signed = await sign(tx, 'fund', undefined, terms)
        submitted = true
        const { digest, jobId } = await submit({ move: 'fund', jobId: undefined, ...signed })
        await reservation?.settle(digest)
        packages.set(normalizeSuiAddress(jobId), pinned)
        return { jobId, digest, terms }
      } catch (error) {
        // Nothing moved when it never left, or when the ledger refused or aborted it.
        if (!submitted || (isPaymentError(error) && error.code === 'job_move_failed')) {
          await reservation?.release()
        }
        throw error
      }
    },
    status,
    release: later('release'),
    refund: later('refund'),
    async reject(jobId, reason = '') {
      const job = await jobOf(jobId)
      const pkg = packages.get(job.id) as string
      const tx = await buildReject({ client, package: pkg, sender: address, job, reason })
      const { digest } = await submit({
        move: 'reject',
        jobId: job.id,
        ...(await sign(tx, 'reject', job.id)),
      })
      return { digest }
    },
    async deliver(jobId, hash) {
      const job = await jobOf(jobId)
      const pkg = packages.get(job.id) as string
      const tx = await buildDeliver({
        client,
        package: pkg,
        sender: address,
        job,
        deliveryHash: hash,
      })
      const { digest } = await submit({
        move: 'deliver',
        jobId: job.id,
        ...(await sign(tx, 'deliver', job.id)),
      })
      return { digest }
    },
  }
}
