/**
 * `createEscrowSeller()`: the seller side of an escrowed job. It answers a job request with a 402
 * demanding escrow (`extra.escrow`: package, config, seller, amount, fee, deadlines, terms hash),
 * and once the buyer has funded a job on the ledger, checks the job against the offer, does the
 * work and delivers it through `escrow::deliver` (hash-committed), keeping the delivered content
 * for the buyer to fetch.
 *
 * ```
 * POST {job}                 ─▶ 402 extra.escrow (terms)        (buyer funds the job on the ledger)
 * POST {job} {"jobId": "0x…"} ─▶ read job ▸ check terms ▸ work ▸ deliver ─▶ 200 {jobId, deliveryHash, result}
 * ```
 *
 * @module
 */
import type { ClientWithCoreApi } from '@mysten/sui/client'
import type { Signer } from '@mysten/sui/cryptography'
import { normalizeStructTag, normalizeSuiAddress } from '@mysten/sui/utils'
import { z } from 'zod'
import { type ChallengeSecret, paymentRequiredResponse } from '../challenge.js'
import { PaymentError, type PaymentErrorCode } from '../errors.js'
import { type EscrowJob, readEscrowConfig, readJob } from './job.js'
import { buildDeliver } from './moves.js'
import { deliveryHash, type EscrowTerms, termsHash } from './terms.js'

/** Options of {@link createEscrowSeller}. */
export type EscrowSellerOptions = {
  /** The seller's key: receives the payout and signs `deliver`. Never logged. */
  signer: Signer
  client: ClientWithCoreApi
  /** The package holding the `escrow` module. */
  package: string
  /** The shared `EscrowConfig` object. */
  config: string
  /** The coin type jobs lock (the network's USDC). */
  asset: string
  /** Network id for the 402, default `sui:mainnet`. */
  network?: string
  /** HMAC secrets of the 402's challenge id (≥ 32 bytes each). */
  secrets: readonly ChallengeSecret[]
  /** The price of a job in base units, from the request body (throw a `PaymentError` to refuse). */
  price: (body: unknown) => bigint
  /** Does the work once the job is funded; the returned text is what gets delivered. */
  work: (body: unknown, job: EscrowJob) => Promise<string>
  /** Time the seller gives itself to deliver, ms. Default 1 hour. */
  deliverWithinMs?: number
  /** Review window the buyer gets for a delivery, ms. Default 1 hour. */
  reviewMs?: number
  /**
   * Most offers awaiting funding, and most deliveries, kept in memory; the oldest is dropped beyond
   * it. Default 1000.
   */
  maxPendingOffers?: number
  /** Clock (the ledger's), ms. Default `Date.now`. */
  now?: () => number
}

/** What the seller answers once a job is delivered. */
export type EscrowDelivery = { jobId: string; deliveryHash: string; digest: string; result: string }

/** The seller helper. */
export type EscrowSeller = {
  /** The Web-standard handler of the job route: the 402 offer, or the delivery of a funded job. */
  handle(request: Request): Promise<Response>
  /** Delivered content by job id (for a buyer who lost the answer). */
  delivery(jobId: string): EscrowDelivery | undefined
}

const FundedSchema = z.object({ jobId: z.string().regex(/^0x[0-9a-fA-F]{1,64}$/) }).strict()
const MAX_BODY = 64 * 1024

type Pending = { body: unknown; terms: EscrowTerms }

/**
 * Creates the seller helper.
 *
 * @example
 * ```ts
 * const seller = createEscrowSeller({ signer, client, package: pkg, config, asset, secrets,
 *   price: () => 2_000_000n, work: async (body) => translate(body) })
 * app.post('/translate', (c) => seller.handle(c.req.raw))
 * ```
 */
export function createEscrowSeller(options: EscrowSellerOptions): EscrowSeller {
  const seller = normalizeSuiAddress(options.signer.toSuiAddress())
  const now = options.now ?? Date.now
  const pending = new Map<string, Pending>()
  const delivered = new Map<string, EscrowDelivery>()
  const maxPending = options.maxPendingOffers ?? 1000

  const problem = (status: number, code: PaymentErrorCode, message: string) =>
    Response.json(new PaymentError(code, message, { status }).toProblem(), {
      status,
      headers: { 'content-type': 'application/problem+json' },
    })

  async function offer(request: Request, body: unknown): Promise<Response> {
    const price = options.price(body)
    const { feeBps } = await readEscrowConfig(options.client, options.config)
    const at = now()
    const terms: EscrowTerms = {
      package: normalizeSuiAddress(options.package),
      config: normalizeSuiAddress(options.config),
      seller,
      amount: price.toString(),
      asset: normalizeStructTag(options.asset),
      feeBps: Number(feeBps),
      deliverByMs: at + (options.deliverWithinMs ?? 3_600_000),
      reviewMs: options.reviewMs ?? 3_600_000,
      terms: termsHash({ body, seller, price: price.toString(), at }),
      jobUrl: request.url,
    }
    pending.set(terms.terms, { body, terms })
    while (pending.size > maxPending) pending.delete(pending.keys().next().value as string)
    return paymentRequiredResponse(
      {
        price,
        payTo: seller,
        asset: terms.asset,
        ...(options.network === undefined ? {} : { network: options.network }),
        resource: request.url,
        description: 'Escrowed job: fund it on the ledger, then POST {"jobId"} here.',
        escrow: terms,
      },
      { secrets: options.secrets },
    )
  }

  async function serveFunded(jobId: string): Promise<Response> {
    const done = delivered.get(normalizeSuiAddress(jobId))
    if (done) return Response.json(done)
    const job = await readJob(options.client, jobId, { package: options.package })
    if (!job) return problem(404, 'job_not_found', 'No such job on the ledger.')
    const offered = pending.get(job.terms)
    if (!offered || job.seller !== seller) {
      return problem(
        409,
        'job_terms_mismatch',
        'The job was not funded for an offer of this seller.',
      )
    }
    const t = offered.terms
    if (
      job.amount !== BigInt(t.amount) ||
      job.feeBps !== BigInt(t.feeBps) ||
      job.deliverByMs !== BigInt(t.deliverByMs) ||
      job.reviewMs !== BigInt(t.reviewMs)
    ) {
      return problem(409, 'job_terms_mismatch', 'The job does not carry the offered terms.')
    }
    if (job.state !== 'funded' && job.state !== 'rejected') {
      return problem(409, 'job_move_failed', `The job is ${job.state}.`)
    }
    const result = await options.work(offered.body, job)
    const hash = deliveryHash(result)
    const tx = await buildDeliver({
      client: options.client,
      package: options.package,
      sender: seller,
      job,
      deliveryHash: hash,
    })
    const bytes = await tx.build()
    const { signature } = await options.signer.signTransaction(bytes)
    const executed = await options.client.core.executeTransaction({
      transaction: bytes,
      signatures: [signature],
    })
    if (executed.$kind !== 'Transaction') {
      return problem(
        409,
        'job_move_failed',
        executed.FailedTransaction.status.error?.message ?? 'failed',
      )
    }
    const delivery: EscrowDelivery = {
      jobId: job.id,
      deliveryHash: hash,
      digest: executed.Transaction.digest,
      result,
    }
    delivered.set(job.id, delivery)
    while (delivered.size > maxPending) delivered.delete(delivered.keys().next().value as string)
    pending.delete(job.terms)
    return Response.json(delivery)
  }

  return {
    async handle(request) {
      const text = await request.text()
      if (text.length > MAX_BODY) return problem(413, 'request_body_too_large', 'Body too large.')
      let body: unknown
      try {
        body = text === '' ? {} : JSON.parse(text)
      } catch {
        return problem(400, 'invalid_request_body', 'The body is not JSON.')
      }
      const funded = FundedSchema.safeParse(body)
      try {
        return funded.success ? await serveFunded(funded.data.jobId) : await offer(request, body)
      } catch (error) {
        if (error instanceof PaymentError)
          return problem(error.status, error.code, error.shortMessage)
        throw error
      }
    },
    delivery: (jobId) => delivered.get(normalizeSuiAddress(jobId)),
  }
}
