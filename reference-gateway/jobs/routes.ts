/**
 * The gateway's escrowed-job routes (`/v1/jobs`). The gateway holds no money and signs nothing: it
 * publishes escrow terms (a 402 demanding escrow), relays moves the parties signed to the ledger
 * after checking that each transaction is the move the route names on the job the path names, reads
 * jobs from the ledger, and keeps reviews of released jobs.
 *
 * ```
 * POST /v1/jobs                {seller, amount, description, …} ─▶ 402 extra.escrow (terms)
 * POST /v1/jobs/fund           {transaction, signature}         ─▶ 201 {jobId, digest, job}
 * GET  /v1/jobs/{id}                                            ─▶ 200 job | 404
 * POST /v1/jobs/{id}/{deliver|release|reject|refund} {transaction, signature} ─▶ 200 {digest, job} | 409
 * POST /v1/jobs/{id}/review    {rating, comment, reviewer, signature} ─▶ 201 | 403 {reason}
 * ```
 *
 * @module
 */
import type { ClientWithCoreApi } from '@mysten/sui/client'
import { Transaction } from '@mysten/sui/transactions'
import { fromBase64, isValidSuiAddress, normalizeSuiAddress } from '@mysten/sui/utils'
import { verifyPersonalMessageSignature } from '@mysten/sui/verify'
import { Hono } from 'hono'
import { Challenge, Escrow, type Ledger, PaymentError, parseAmount } from 'tollgate'
import { z } from 'zod'
import type { ReviewStore } from '../marketplace/reviews.js'
import { problem } from '../problem.js'
import { readBodyWith } from '../requestBody.js'
import { reviewEligibility } from '../reviews/rules.js'

/** Options of {@link jobRoutes}. */
export type JobRoutesOptions = {
  /** Reads jobs and the escrow configuration. */
  client: ClientWithCoreApi
  /** Executes the signed moves. */
  ledger: Ledger
  /** The package holding the `escrow` module. */
  package: string
  /** The shared `EscrowConfig` object. */
  config: string
  /** The USDC coin type jobs lock. */
  asset: string
  network: string
  /** Public base URL (the 402's resource). */
  publicBaseUrl: string
  /** HMAC secrets of the 402's challenge id. */
  secrets: readonly Challenge.ChallengeSecret[]
  reviews: ReviewStore
  /** Most a job may lock, base units. Default 1 000 USDC. */
  maxJobAmount?: bigint
  /** Clock for the offered deadlines (the ledger's), ms. Default `Date.now`. */
  now?: () => number
}

const moves = ['deliver', 'release', 'reject', 'refund'] as const
type Move = (typeof moves)[number] | 'fund'

const address = z
  .string()
  .max(66)
  .refine((a) => isValidSuiAddress(normalizeSuiAddress(a)), 'not a Sui address')
  .transform((a) => normalizeSuiAddress(a))

const OfferSchema = z
  .object({
    seller: address,
    /** USDC decimal (`"2.5"`). */
    amount: z.string().max(32),
    description: z.string().min(1).max(2000),
    deliverWithinSeconds: z
      .number()
      .int()
      .min(60)
      .max(365 * 86_400)
      .default(3600),
    reviewSeconds: z
      .number()
      .int()
      .min(60)
      .max(30 * 86_400)
      .default(3600),
  })
  .strict()

const SignedSchema = z
  .object({
    /** Base64 BCS `TransactionData`. */
    transaction: z
      .string()
      .min(1)
      .max(64 * 1024),
    signature: z.string().min(1).max(4096),
  })
  .strict()

const ReviewSchema = z
  .object({
    rating: z.number(),
    comment: z.string().max(2000).default(''),
    reviewer: address,
    /** Sui personal-message signature of `reviewMessage(…)`. */
    signature: z.string().min(1).max(4096),
  })
  .strict()

const JobIdSchema = z.string().regex(/^0x[0-9a-fA-F]{1,64}$/)

/** A job as JSON (amounts and times as decimal strings). */
export function jobJson(job: Escrow.EscrowJob): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(job).map(([k, v]) => [k, typeof v === 'bigint' ? v.toString() : v]),
  )
}

/**
 * Checks that signed bytes are exactly one call of `escrow::<move>` of our package, and (for moves
 * on an existing job) that its job argument is the job `jobId`. Other commands may only prepare the
 * payment of `fund` (split, merge, redeem).
 */
function checkMove(bytes: Uint8Array, pkg: string, move: Move, jobId?: string): string | undefined {
  let data: ReturnType<Transaction['getData']>
  try {
    data = Transaction.from(bytes).getData()
  } catch {
    return 'not a transaction'
  }
  const calls = data.commands.filter((c) => c.MoveCall)
  const ours = calls.filter(
    (c) =>
      normalizeSuiAddress(c.MoveCall?.package ?? '0x0') === pkg && c.MoveCall?.module === 'escrow',
  )
  if (ours.length !== 1 || ours[0]?.MoveCall?.function !== move) {
    return `the transaction must make exactly one escrow::${move} call`
  }
  const others = calls.filter((c) => !ours.includes(c))
  for (const c of others) {
    const target = `${normalizeSuiAddress(c.MoveCall?.package ?? '0x0')}::${c.MoveCall?.module}::${c.MoveCall?.function}`
    if (move !== 'fund' || target !== `${normalizeSuiAddress('0x2')}::coin::redeem_funds`) {
      return `the transaction makes another call (${target})`
    }
  }
  if (jobId !== undefined) {
    const first = ours[0]?.MoveCall?.arguments[0]
    const input = first?.$kind === 'Input' ? data.inputs[first.Input] : undefined
    const shared = input?.Object?.SharedObject
    if (!shared || normalizeSuiAddress(shared.objectId) !== normalizeSuiAddress(jobId)) {
      return 'the transaction moves another job'
    }
  }
  return undefined
}

/**
 * The `/v1/jobs` sub-application.
 *
 * @example
 * ```ts
 * app.route('/v1/jobs', jobRoutes({ client, ledger, package: pkg, config, asset, network, publicBaseUrl, secrets, reviews }))
 * ```
 */
export function jobRoutes(options: JobRoutesOptions): Hono {
  const pkg = normalizeSuiAddress(options.package)
  const now = options.now ?? Date.now
  const maxAmount = options.maxJobAmount ?? 1_000_000_000n
  const app = new Hono()

  const body = <T>(request: Request, schema: z.ZodType<T>) =>
    readBodyWith(request, schema, 96 * 1024)

  const job = (id: string) => Escrow.readJob(options.client, id, { package: pkg })

  const execute = async (move: Move, signed: z.infer<typeof SignedSchema>, jobId?: string) => {
    let bytes: Uint8Array
    try {
      bytes = fromBase64(signed.transaction)
    } catch {
      return {
        ok: false as const,
        response: problem('invalid_request_body', 'transaction: not base64'),
      }
    }
    const wrong = checkMove(bytes, pkg, move, jobId)
    if (wrong) return { ok: false as const, response: problem('invalid_request_body', wrong) }
    const outcome = await options.ledger.execute(bytes, [signed.signature])
    if (outcome.status === 'unknown') {
      return {
        ok: false as const,
        response: problem('ledger_unavailable', 'No answer from the ledger; look the digest up.', {
          status: 503,
          extra: {
            digest: outcome.digest,
          },
        }),
      }
    }
    if (outcome.status === 'rejected') {
      return { ok: false as const, response: problem('job_move_failed', outcome.reason) }
    }
    const t = outcome.transaction
    if (!t.success) {
      return {
        ok: false as const,
        response: problem(
          'job_move_failed',
          Escrow.explainEscrowAbort(t.error ?? 'The move failed on the ledger.'),
          {
            status: 409,
            extra: {
              digest: t.digest,
            },
          },
        ),
      }
    }
    const created = t.events
      .map((e) => (e.json as { job_id?: unknown } | null)?.job_id)
      .find((id): id is string => typeof id === 'string')
    return { ok: true as const, digest: t.digest, jobId: jobId ?? created ?? '' }
  }

  app.post('/', async (c) => {
    const parsed = await body(c.req.raw, OfferSchema)
    if (!parsed.ok) return parsed.response
    const offer = parsed.value
    let amount: bigint
    try {
      amount = parseAmount(offer.amount)
    } catch {
      return problem('invalid_request_body', 'amount: a USDC decimal such as "2.5"')
    }
    if (amount <= 0n || amount > maxAmount) {
      return problem('invalid_request_body', `amount: from 0.000001 to ${maxAmount} base units`)
    }
    const { feeBps } = await Escrow.readEscrowConfig(options.client, options.config)
    const at = now()
    const terms: Escrow.EscrowTerms = {
      package: pkg,
      config: normalizeSuiAddress(options.config),
      seller: offer.seller,
      amount: amount.toString(),
      asset: options.asset,
      feeBps: Number(feeBps),
      deliverByMs: at + offer.deliverWithinSeconds * 1000,
      reviewMs: offer.reviewSeconds * 1000,
      terms: Escrow.termsHash({
        seller: offer.seller,
        amount: amount.toString(),
        description: offer.description,
        at,
      }),
      jobUrl: `${options.publicBaseUrl}/v1/jobs/fund`,
    }
    return Challenge.paymentRequiredResponse(
      {
        price: amount,
        payTo: offer.seller,
        asset: options.asset,
        network: options.network,
        resource: `${options.publicBaseUrl}/v1/jobs`,
        description: `Escrowed job: ${offer.description.slice(0, 200)}`,
        escrow: terms,
      },
      { secrets: options.secrets },
    )
  })

  app.post('/fund', async (c) => {
    const parsed = await body(c.req.raw, SignedSchema)
    if (!parsed.ok) return parsed.response
    const done = await execute('fund', parsed.value)
    if (!done.ok) return done.response
    const funded = await job(done.jobId)
    return c.json(
      { jobId: done.jobId, digest: done.digest, job: funded ? jobJson(funded) : null },
      201,
    )
  })

  app.get('/:id', async (c) => {
    const id = JobIdSchema.safeParse(c.req.param('id'))
    if (!id.success) return problem('invalid_request_body', 'id: a 0x object id')
    const found = await job(id.data).catch((error: unknown) => {
      if (error instanceof PaymentError) return undefined
      throw error
    })
    if (!found) return problem('job_not_found', 'No escrow job with this id.')
    return c.json(jobJson(found))
  })

  for (const move of moves) {
    app.post(`/:id/${move}`, async (c) => {
      const id = JobIdSchema.safeParse(c.req.param('id'))
      if (!id.success) return problem('invalid_request_body', 'id: a 0x object id')
      const parsed = await body(c.req.raw, SignedSchema)
      if (!parsed.ok) return parsed.response
      const done = await execute(move, parsed.value, id.data)
      if (!done.ok) return done.response
      const after = await job(id.data)
      return c.json({ digest: done.digest, job: after ? jobJson(after) : null })
    })
  }

  app.post('/:id/review', async (c) => {
    const id = JobIdSchema.safeParse(c.req.param('id'))
    if (!id.success) return problem('invalid_request_body', 'id: a 0x object id')
    const parsed = await body(c.req.raw, ReviewSchema)
    if (!parsed.ok) return parsed.response
    const review = parsed.value
    const jobId = normalizeSuiAddress(id.data)
    try {
      await verifyPersonalMessageSignature(
        Escrow.reviewMessage({ purchaseId: jobId, rating: review.rating, comment: review.comment }),
        review.signature,
        { address: review.reviewer },
      )
    } catch {
      return problem('invalid_signature', 'The review is not signed by the reviewer.', {
        status: 401,
      })
    }
    const found = await job(jobId).catch(() => undefined)
    if (!found) return problem('job_not_found', 'No escrow job with this id.')
    const verdict = reviewEligibility({
      kind: 'job',
      id: jobId,
      buyer: found.buyer,
      seller: found.seller,
      outcome:
        found.state === 'released'
          ? 'released'
          : found.state === 'refunded'
            ? 'refunded'
            : 'pending',
      reviewer: review.reviewer,
      rating: review.rating,
      alreadyReviewed: (await options.reviews.get(jobId)) !== undefined,
    })
    if (verdict.status === 'refused') {
      return problem('review_refused', verdict.message, {
        status: 403,
        extra: { reason: verdict.reason },
      })
    }
    const added = await options.reviews.add({
      purchase: jobId,
      buyer: found.buyer,
      seller: found.seller,
      rating: review.rating,
      text: review.comment,
      createdAt: new Date().toISOString(),
      value: found.amount,
    })
    if (added === undefined) {
      return problem('review_refused', 'This purchase has already been reviewed.', {
        status: 403,
        extra: {
          reason: 'already_reviewed',
        },
      })
    }
    return c.json({ purchaseId: jobId, rating: review.rating, seller: found.seller }, 201)
  })

  app.get('/:id/review', async (c) => {
    const id = JobIdSchema.safeParse(c.req.param('id'))
    if (!id.success) return problem('invalid_request_body', 'id: a 0x object id')
    const review = await options.reviews.get(normalizeSuiAddress(id.data))
    return review
      ? c.json({
          purchaseId: review.purchase,
          kind: 'job',
          buyer: review.buyer,
          seller: review.seller,
          rating: review.rating,
          comment: review.text,
          createdAtMs: Date.parse(review.createdAt),
        })
      : c.json({ error: { code: 'not_found', message: 'No review.' } }, 404)
  })

  return app
}
