/**
 * Route terms: validation and the per-route precomputation the challenge hot path relies on.
 *
 * @module
 * @internal
 */
import { normalizeStructTag } from '@mysten/sui/utils'
import { z } from 'zod'
import { PaymentError } from '../errors.js'
import { defaultMaxAmount } from '../money.js'
import { encodeRequest } from '../mpp.js'
import { type PaymentRequirement, suiAddressSchema } from '../x402.js'
import type { PaymentRequiredV2, PaymentRequirementV2 } from '../x402v2.js'
import { parseWith } from './wire.js'

/** USDC coin types by network (Circle native USDC; never the bridged wUSDC). */
export const usdcCoinTypes: Readonly<Record<string, string>> = {
  'sui:mainnet': '0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC',
  'sui:testnet': '0xa1ec7fc00a6f40db9693ad1415d0c193ad3906494428cf252621037bd7117e29::usdc::USDC',
}

const termsSchema = z.object({
  price: z.bigint().positive().max(defaultMaxAmount),
  payTo: suiAddressSchema,
  asset: z.string().max(256).optional(),
  network: z
    .string()
    .regex(/^sui:[a-z0-9-]{1,32}$/)
    .default('sui:mainnet'),
  resource: z.url({ protocol: /^https?$/ }).max(2048),
  description: z.string().max(1024).default(''),
  mimeType: z.string().max(256).default('application/json'),
  maxTimeoutSeconds: z.number().int().min(1).max(3600).default(60),
  escrow: z.record(z.string(), z.unknown()).optional(),
  outputSchema: z.record(z.string(), z.unknown()).optional(),
})

/** A priced route's payment terms. */
export type RouteTerms = {
  /** Price in base units (USDC has 6 decimals: `20000n` is 0.02 USDC). */
  price: bigint
  /** Recipient Sui address. */
  payTo: string
  /** Coin type; default the USDC of `network`. */
  asset?: string
  /** Network; default `sui:mainnet`. */
  network?: string
  /** Absolute URL of the paid resource (see {@link resourceUrl}); bound into the challenge id. */
  resource: string
  /** Human description; default empty. */
  description?: string
  /** MIME type of the paid response; default `application/json`. */
  mimeType?: string
  /** Seconds a challenge stays valid (at least this, at most 25 % more); default 60. */
  maxTimeoutSeconds?: number
  /** Escrow terms of an escrow-only route, published as `extra.escrow`. */
  escrow?: Record<string, unknown>
  /** JSON Schema of the paid response, published as `outputSchema`. */
  outputSchema?: Record<string, unknown>
}

/** Route terms validated and precomputed once (what the hot path uses). */
export type PreparedTerms = {
  readonly kind: 'prepared-terms'
  readonly price: bigint
  readonly amount: string
  readonly payTo: string
  readonly asset: string
  readonly network: string
  readonly resource: string
  readonly realm: string
  readonly description: string
  readonly maxTimeoutSeconds: number
  /** The MPP `request` parameter (base64url of JCS JSON). */
  readonly request: string
  /** The MPP `opaque` parameter (binds the resource). */
  readonly opaque: string
  /** The x402 requirement without `extra.challengeId`. */
  readonly requirement: Readonly<Omit<PaymentRequirement, 'extra'>>
  /**
   * The JSON text of the x402 version 2 PaymentRequired around its challenge id (`head` + the id as
   * a JSON string + `tail`), so that a new expiry bucket costs a concatenation and a base64.
   */
  readonly paymentRequiredV2: { readonly head: string; readonly tail: string }
  readonly escrow: Record<string, unknown> | undefined
  /** @internal */
  readonly source: RouteTerms
  /** @internal */
  readonly sourceRealm: string | undefined
}

/** The PaymentRequired text around `extra.challengeId` (then `extra.escrow`, when set). */
function paymentRequiredV2Text(
  top: Omit<PaymentRequiredV2, 'accepts'>,
  requirement: Omit<PaymentRequirementV2, 'extra'>,
  escrow: Record<string, unknown> | undefined,
): { head: string; tail: string } {
  const open = (value: object) => JSON.stringify(value).slice(0, -1)
  return Object.freeze({
    head: `${open(top)},"accepts":[${open(requirement)},"extra":{"challengeId":`,
    tail: `${escrow === undefined ? '' : `,"escrow":${JSON.stringify(escrow)}`}}}]}`,
  })
}

/** Preparations per terms object (the caller's; re-prepared when one of its fields changed). */
const prepared = new WeakMap<RouteTerms, PreparedTerms>()

function unchanged(p: PreparedTerms, t: RouteTerms, realm: string | undefined): boolean {
  const s = p.source
  return (
    p.sourceRealm === realm &&
    s.price === t.price &&
    s.payTo === t.payTo &&
    s.asset === t.asset &&
    s.network === t.network &&
    s.resource === t.resource &&
    s.description === t.description &&
    s.mimeType === t.mimeType &&
    s.maxTimeoutSeconds === t.maxTimeoutSeconds &&
    s.escrow === t.escrow &&
    s.outputSchema === t.outputSchema
  )
}

/**
 * Validates and precomputes a route's terms. Functions of this module accept raw terms too and
 * keep the preparation per terms object (re-preparing if a field changed), so calling this is
 * optional; it is the place configuration errors surface.
 *
 * @param options.realm - MPP realm; default the host name of `resource` (no port). Bound into the id.
 * @throws {PaymentError} `invalid_config` for terms that do not validate.
 */
export function prepareTerms(
  terms: RouteTerms | PreparedTerms,
  options: { realm?: string | undefined } = {},
): PreparedTerms {
  if ('kind' in terms && terms.kind === 'prepared-terms') {
    if (options.realm === undefined || options.realm === terms.realm) return terms
    return prepareTerms(terms.source, options)
  }
  const raw = terms as RouteTerms
  const cached = prepared.get(raw)
  if (cached !== undefined && unchanged(cached, raw, options.realm)) return cached
  const t = parseWith(termsSchema, raw, 'route terms', 'invalid_config')
  const assetInput = t.asset ?? usdcCoinTypes[t.network]
  if (assetInput === undefined) {
    throw new PaymentError('invalid_config', `No default USDC coin type for ${t.network}.`)
  }
  let asset: string
  try {
    asset = normalizeStructTag(assetInput)
  } catch (cause) {
    throw new PaymentError('invalid_config', 'The asset is not a Move coin type.', { cause })
  }
  const url = new URL(t.resource)
  const resource = url.href
  const realm = options.realm ?? url.hostname
  const amount = t.price.toString()
  const request = encodeRequest({
    amount,
    currency: asset,
    recipient: t.payTo,
    methodDetails: { network: t.network },
  })
  const result: PreparedTerms = {
    kind: 'prepared-terms',
    price: t.price,
    amount,
    payTo: t.payTo,
    asset,
    network: t.network,
    resource,
    realm,
    description: t.description,
    maxTimeoutSeconds: t.maxTimeoutSeconds,
    request,
    opaque: encodeRequest({ resource }),
    requirement: Object.freeze({
      scheme: 'exact',
      network: t.network,
      maxAmountRequired: amount,
      resource,
      description: t.description,
      mimeType: t.mimeType,
      ...(t.outputSchema === undefined ? {} : { outputSchema: t.outputSchema }),
      payTo: t.payTo,
      maxTimeoutSeconds: t.maxTimeoutSeconds,
      asset,
    }),
    paymentRequiredV2: paymentRequiredV2Text(
      {
        x402Version: 2,
        error: 'Payment required',
        resource: { url: resource, description: t.description, mimeType: t.mimeType },
      },
      {
        scheme: 'exact',
        network: t.network,
        amount,
        asset,
        payTo: t.payTo,
        maxTimeoutSeconds: t.maxTimeoutSeconds,
      },
      t.escrow,
    ),
    escrow: t.escrow,
    source: { ...raw },
    sourceRealm: options.realm,
  }
  prepared.set(raw, result)
  return result
}
