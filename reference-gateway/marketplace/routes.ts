import { Hono } from 'hono'
import { type Ledger, PaymentError } from 'tollgate'
import { lookUpAgent } from 'tollgate/conformance'
import { z } from 'zod'
import { clientAddressOf } from '../inference/aci.js'
import type { RateLimiter } from '../inference/limits.js'
import { problem, schemaProblem } from '../problem.js'
import { readBodyWith } from '../requestBody.js'
import type { ActivityStore } from './activity.js'
import { type PurchaseLookup, type ReviewStore, reviewBodySchema } from './reviews.js'
import { type MutationSigner, signedMutationSchema, suiAddressSchema } from './signing.js'
import type { Listing, MarketplaceStore } from './store.js'
import { type GateOptions, judgeSubmission, refusalOf } from './submission.js'

/** Options of {@link marketplaceRoutes}. */
export type MarketplaceRoutesOptions = {
  store: MarketplaceStore
  signer: MutationSigner
  /** Clock, ms. Default `Date.now`. */
  now?: (() => number) | undefined
  /** What the listing gates need; `POST /endpoint/submit` is served only with it. */
  gates?: GateOptions | undefined
  /** When the first re-probe of a new listing is due, ms after listing. Default one day. */
  reprobeIntervalMs?: number | undefined
  /** Reviews of paid calls (`/v1/reviews`, and ratings on profiles); off when undefined. */
  reviews?: { store: ReviewStore; purchases: PurchaseLookup } | undefined
  /**
   * Limits `POST /endpoint/prepare` per client IP address (each one stores a nonce): past it, 429
   * `rate_limited` with `Retry-After`. The address is the socket's peer, or with `trustProxy` the
   * last `X-Forwarded-For` entry. Default: not limited.
   */
  prepareLimit?: { limiter: RateLimiter; trustProxy: boolean } | undefined
  /** The activity feed (`/v1/activity`, `POST /api/mpp/report`); off when undefined. */
  activity?:
    | { store: ActivityStore; ledger: Pick<Ledger, 'getTransaction'>; pollMs?: number | undefined }
    | undefined
}

const address = suiAddressSchema

/** A tag: lowercase words joined by hyphens. */
export const tagSchema = z
  .string()
  .regex(/^[a-z0-9]+(-[a-z0-9]+)*$/)
  .max(32)

/** The largest body of a signed agent route, bytes. */
const maxAgentBodyBytes = 64 * 1024

/** Probes shown per endpoint on a profile, newest first. */
const profileProbes = 20

const listingId = z.string().regex(/^lst_[0-9a-f]{24}$/)

/** The body of `POST /v1/agent/service`: update a listing's description, or delist it. */
export const serviceBodySchema = z.discriminatedUnion('op', [
  z
    .object({
      op: z.literal('update'),
      listingId,
      name: z.string().min(1).max(120).optional(),
      description: z.string().max(2000).optional(),
      tags: z.array(tagSchema).max(16).optional(),
    })
    .strict(),
  z.object({ op: z.literal('delist'), listingId }).strict(),
])

/** The body of `POST /v1/agent/endpoint/submit`: the endpoint to list and its description. */
export const submitBodySchema = z
  .object({
    url: z.string().url().max(2048),
    method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']).default('POST'),
    /** The JSON body the probes send. */
    probeBody: z
      .string()
      .max(8192)
      .refine((text) => {
        try {
          JSON.parse(text)
          return true
        } catch {
          return false
        }
      }, 'not JSON')
      .default('{}'),
    name: z.string().min(1).max(120),
    description: z.string().max(2000).default(''),
    tags: z.array(tagSchema).max(16).default([]),
    /** JSON Schema of the request body, shown by discovery (`/discovery/resources`). */
    inputSchema: z
      .record(z.string(), z.unknown())
      .refine((schema) => JSON.stringify(schema).length <= 16_384, 'over 16 KiB')
      .optional(),
  })
  .strict()

const prepareSchema = z.discriminatedUnion('action', [
  z.object({ address, action: z.literal('service'), body: serviceBodySchema }).strict(),
  z
    .object({ address, action: z.literal('submit'), body: z.record(z.string(), z.unknown()) })
    .strict(),
  z.object({ address, action: z.literal('review'), body: reviewBodySchema }).strict(),
])

const submitSchema = signedMutationSchema(z.record(z.string(), z.unknown()))

const signedSchema = signedMutationSchema(serviceBodySchema)

/** 429 `rate_limited` with `Retry-After` (whole seconds, at least 1). */
function tooMany(message: string, retryAfterMs: number): Response {
  const error = new PaymentError('rate_limited', message)
  return Response.json(error.toProblem(), {
    status: error.status,
    headers: {
      'content-type': 'application/problem+json',
      'retry-after': String(Math.max(1, Math.ceil(retryAfterMs / 1000))),
    },
  })
}

const refused = (reason: string, message: string) =>
  problem('mutation_refused', message, { extra: { reason } })

const refusalMessages: Record<string, string> = {
  invalid_signature:
    'The signature is not a personal-message signature of the message by this address.',
  unknown_nonce: 'This nonce was not issued here.',
  nonce_used: 'This nonce has already been used.',
  nonce_expired: 'This nonce has expired; prepare a new one.',
  wrong_signer: 'This nonce was issued to another address.',
  wrong_action: 'This nonce was issued for another mutation.',
  wrong_body: 'This nonce was issued for another body.',
}

/** A listing as the API shows it (amounts as decimal strings of base units). */
export function listingJson(l: Listing) {
  return {
    id: l.id,
    seller: l.seller,
    url: l.url,
    method: l.method,
    name: l.name,
    description: l.description,
    tags: l.tags,
    network: l.network,
    asset: l.asset,
    price: l.price.toString(),
    payTo: l.payTo,
    state: l.state,
    consecutiveFailures: l.consecutiveFailures,
    createdAt: l.createdAt,
    updatedAt: l.updatedAt,
    inputSchema: l.inputSchema,
  }
}

function readBody<T>(request: Request, schema: z.ZodType<T>) {
  return readBodyWith(request, schema, maxAgentBodyBytes)
}

/**
 * The marketplace routes (a Hono app to mount at `/v1/agent`).
 *
 * @example
 * ```ts
 * app.route('/v1/agent', marketplaceRoutes({ store, signer }))
 * ```
 */
export function marketplaceRoutes(options: MarketplaceRoutesOptions): Hono {
  const now = options.now ?? Date.now
  const app = new Hono()

  app.post('/endpoint/prepare', async (c) => {
    const limit = options.prepareLimit
    if (limit !== undefined) {
      const client = clientAddressOf(c.req.raw, c.env, limit.trustProxy)
      const decision = await limit.limiter.take(client)
      if (decision.status === 'limited') {
        return tooMany('Too many nonces asked from this address; retry later.', decision.resetMs)
      }
    }
    const parsed = await readBody(c.req.raw, prepareSchema)
    if (!parsed.ok) return parsed.response
    if (parsed.value.action === 'submit') {
      if (options.gates === undefined) {
        return problem('invalid_request_body', 'action: submissions are not served here')
      }
      const body = submitBodySchema.safeParse(parsed.value.body)
      if (!body.success) return schemaProblem(body.error, 'body')
    }
    const prepared = await options.signer.prepare(parsed.value)
    if (prepared.status === 'full') {
      return tooMany('Too many nonces are outstanding; retry later.', prepared.retryAfterMs)
    }
    const { status: _, ...answer } = prepared
    return c.json(answer, 201)
  })

  const gates = options.gates
  if (gates !== undefined) {
    app.post('/endpoint/submit', async (c) => {
      const parsed = await readBody(c.req.raw, submitSchema)
      if (!parsed.ok) return parsed.response
      const request = parsed.value
      // The signature covers the body as sent; its defaults are filled in after checking it.
      const verdict = await options.signer.verify({ ...request, action: 'submit' })
      if (!verdict.ok) {
        return refused(verdict.reason, refusalMessages[verdict.reason] ?? 'Refused.')
      }
      const body = submitBodySchema.safeParse(request.body)
      if (!body.success) return schemaProblem(body.error, 'body')
      const submission = {
        seller: request.address,
        url: body.data.url,
        method: body.data.method,
        probeBody: body.data.probeBody,
      }
      const judged = await judgeSubmission(submission, gates)
      if (judged.status === 'unusable') return problem('invalid_request_body', judged.message)
      if (judged.status === 'failed') {
        return problem(
          'listing_refused',
          `Not listed: ${judged.summary}. Run tollgate conformance against the URL for the details.`,
          {
            extra: {
              failedGates: judged.failures.map((f) => f.gate),
              failures: refusalOf(judged.failures),
              notJudged: judged.notJudged,
            },
          },
        )
      }
      const at = now()
      const listing = await options.store.putListing(
        {
          ...submission,
          name: body.data.name,
          description: body.data.description,
          tags: body.data.tags,
          inputSchema: body.data.inputSchema ?? null,
          ...judged.terms,
          nextProbeAtMs: at + (options.reprobeIntervalMs ?? 24 * 60 * 60_000),
        },
        new Date(at),
      )
      await options.store.addProbe({
        listingId: listing.id,
        kind: 'submission',
        passed: true,
        failedGate: null,
        message: judged.summary,
        probedAt: new Date(at).toISOString(),
      })
      return c.json(listingJson(listing), 201)
    })
  }

  app.get('/:address', async (c) => {
    const parsed = address.safeParse(c.req.param('address'))
    if (!parsed.success) return problem('invalid_request_body', 'address: not a Sui address')
    const seller = parsed.data
    const listings = await options.store.listingsOf(seller)
    const endpoints = await Promise.all(
      listings.map(async (l) => ({
        ...listingJson(l),
        probes: (await options.store.probesOf(l.id, profileProbes)).map(({ listingId, ...p }) => p),
      })),
    )
    const reviews = options.reviews?.store
    const rating =
      reviews === undefined
        ? undefined
        : await reviews.of(seller, { limit: 1, offset: 0 }).then((r) => r.rating)
    return c.json({
      address: seller,
      identity: await identityOf(seller),
      endpoints,
      ...(rating === undefined ? {} : { rating }),
    })
  })

  const identityOf = async (seller: string) => {
    if (gates === undefined) return { status: 'unknown' as const }
    try {
      const found = await lookUpAgent(gates.client, {
        address: seller,
        registryPackage: gates.registryPackage,
      })
      return found.status === 'found' ? { status: 'found' as const, ...found.record } : found
    } catch {
      return { status: 'unavailable' as const }
    }
  }

  app.post('/service', async (c) => {
    const parsed = await readBody(c.req.raw, signedSchema)
    if (!parsed.ok) return parsed.response
    const request = parsed.value
    const verdict = await options.signer.verify({ ...request, action: 'service' })
    if (!verdict.ok) {
      return refused(verdict.reason, refusalMessages[verdict.reason] ?? 'Refused.')
    }
    const listing = await options.store.getListing(request.body.listingId)
    if (listing === undefined) return problem('listing_not_found', 'No listing with this id.')
    if (listing.seller !== request.address) {
      return refused('not_the_seller', 'Only the seller of a listing may change it.')
    }
    const at = new Date(now())
    if (request.body.op === 'delist') {
      await options.store.setListingState(
        listing.id,
        { state: 'delisted', consecutiveFailures: 0 },
        at,
      )
    } else {
      const { name, description, tags } = request.body
      await options.store.updateListing(listing.id, { name, description, tags }, at)
    }
    const after = await options.store.getListing(listing.id)
    return c.json(after ? listingJson(after) : null)
  })

  return app
}
