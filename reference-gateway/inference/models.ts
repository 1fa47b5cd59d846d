/**
 * The models of the private inference API, from configuration: an id, token prices (USDC per
 * million input and per million output tokens, see `pricing.ts`), a context window, an output cap, a privacy tier, whether the keyless route offers it, and the upstream that serves
 * it. The upstream is a tagged union on `kind`; each kind says which privacy tiers it may serve, so a
 * confidential model can only ever be served by an upstream kind that proves it (`confidential`: an
 * ACI enclave whose attestation verified), never silently by an ordinary upstream.
 *
 * @module
 */

import { X509Certificate } from 'node:crypto'
import { Attestation, formatAmount, parseAmount } from 'tollgate'
import { z } from 'zod'
import { perTokenText, type TokenPricing } from './pricing.js'

/** Privacy tiers: `open` (an ordinary upstream), `confidential` (an attested enclave). */
export const privacyTiers = ['open', 'confidential'] as const
/** A model's privacy tier. */
export type PrivacyTier = (typeof privacyTiers)[number]

const httpUrl = z.url({ protocol: /^https?$/ }).max(2048)

/** Upstream kind `openai-compatible`: any OpenAI-style `/chat/completions` API. */
export const openaiCompatibleUpstreamSchema = z
  .object({
    kind: z.literal('openai-compatible'),
    /** Base URL ending before `/chat/completions` (`https://api.example/v1`). */
    baseUrl: httpUrl,
    /**
     * Name of the provider-key setting holding the operator's key for it (`GROQ_API_KEY`), read
     * from the environment like every provider key. Never logged.
     */
    credential: z
      .string()
      .regex(/^[A-Z][A-Z0-9_]*_(API_)?KEY$/, 'must name a *_API_KEY or *_KEY setting')
      .optional(),
    /** The model's name at the upstream. Default: the model id. */
    model: z.string().min(1).max(256).optional(),
  })
  .strict()

const hex = (bytes: number) =>
  z
    .string()
    .regex(new RegExp(`^[0-9a-f]{${bytes * 2}}$`), `must be ${bytes} bytes of lowercase hex`)

const pemCertificate = z
  .string()
  .max(16 * 1024)
  .refine((pem) => {
    try {
      return pem.includes('-----BEGIN CERTIFICATE-----') && new X509Certificate(pem) !== undefined
    } catch {
      return false
    }
  }, 'must be a PEM certificate')

/**
 * How a confidential upstream's hardware quotes are checked. `tdx`: Intel TDX quotes, checked by
 * `@phala/dcap-qvl` with the operator-supplied DCAP `collateral` (what a PCCS answers for the
 * platform: TCB info, QE identity, CRLs and their issuer chains), under Intel's root CA unless
 * `rootCa` names another (only the simulated enclave's test root, in tests). The collateral must
 * still be valid (`nextUpdate`) when the gateway starts.
 */
export const quoteVerifierConfigSchema = z.discriminatedUnion('kind', [
  z
    .object({
      kind: z.literal('tdx'),
      rootCa: pemCertificate.optional(),
      collateral: Attestation.TdxCollateralSchema.strict().superRefine((collateral, context) => {
        for (const field of ['tcb_info', 'qe_identity'] as const) {
          let nextUpdate = Number.NaN
          try {
            nextUpdate = Date.parse(String(JSON.parse(collateral[field]).nextUpdate))
          } catch {}
          if (Number.isNaN(nextUpdate)) {
            context.addIssue({ code: 'custom', path: [field], message: 'must be DCAP JSON' })
          } else if (nextUpdate <= Date.now()) {
            context.addIssue({ code: 'custom', path: [field], message: 'has expired (nextUpdate)' })
          }
        }
      }),
    })
    .strict(),
])

/**
 * GPU evidence required of a confidential upstream: its report's GPU attestation token (JWT) must
 * verify against the JWKS at `jwksUrl` (NVIDIA's attestation service by default), name `issuer` if
 * set, be bound to the attestation nonce and state a passing measurement result.
 */
export const gpuVerifierConfigSchema = z
  .object({
    jwksUrl: httpUrl.default(Attestation.NVIDIA_NRAS_JWKS_URL),
    issuer: z.string().min(1).max(512).optional(),
  })
  .strict()

/**
 * Upstream kind `confidential`: an ACI ("aci/1") enclave. Every request waits for a VERIFIED
 * attestation (fresh nonce, quote, measurement allow-list) and every answer for a receipt signed by
 * an attested key over the exact bytes; any failure refuses the request (`attestation_failed`).
 */
export const confidentialUpstreamSchema = z
  .object({
    kind: z.literal('confidential'),
    /** Base URL of the enclave's ACI API (`…/v1`: `/attestation`, `/chat/completions`, `/receipts/{id}`). */
    baseUrl: httpUrl,
    /** Setting holding a bearer key for the enclave, if it wants one. Never logged. */
    credential: z
      .string()
      .regex(/^[A-Z][A-Z0-9_]*_(API_)?KEY$/, 'must name a *_API_KEY or *_KEY setting')
      .optional(),
    /** The model's name at the enclave. Default: the model id. */
    model: z.string().min(1).max(256).optional(),
    quoteVerifier: quoteVerifierConfigSchema,
    /** GPU evidence required (a GPU attestation token). Absent: the report's GPU token is not checked. */
    gpu: gpuVerifierConfigSchema.optional(),
    /**
     * Measurements (48 bytes hex) accepted: for TDX, `tdxMeasurementOf` the MRTD and RTMR0..3.
     * Security: only these workloads are trusted.
     */
    allowedMeasurements: z.array(hex(48)).min(1).max(64),
    /** Attest again (fresh nonce) after this long, ms; 0 attests before every request. Default 60 000. */
    refreshMs: z.int().min(0).max(86_400_000).default(60_000),
  })
  .strict()

/** The upstream of a model, by kind (a later kind adds its schema here). */
export const modelUpstreamSchema = z.discriminatedUnion('kind', [
  openaiCompatibleUpstreamSchema,
  confidentialUpstreamSchema,
])
/** A model's upstream configuration. */
export type ModelUpstreamConfig = z.output<typeof modelUpstreamSchema>
/** An upstream kind. */
export type UpstreamKind = ModelUpstreamConfig['kind']

/** The privacy tiers each upstream kind may serve. */
export const upstreamTiers: Readonly<Record<UpstreamKind, readonly PrivacyTier[]>> = {
  'openai-compatible': ['open'],
  confidential: ['confidential'],
}

/** The reserved id prefix of confidential models, by default. */
export const defaultConfidentialPrefix = 'confidential/'

/**
 * Problems of a model list with the reserved confidential prefix: a model whose id has the prefix
 * must be `confidential` on a `confidential` upstream, and a confidential model must have the
 * prefix (so that the id alone tells a buyer where it runs). Empty when none.
 */
export function confidentialPrefixProblems(
  models: readonly ModelConfig[],
  prefix: string,
): string[] {
  const problems: string[] = []
  for (const m of models) {
    const reserved = m.id.startsWith(prefix)
    const confidential = m.privacy === 'confidential' || m.upstream.kind === 'confidential'
    if (reserved && !(m.privacy === 'confidential' && m.upstream.kind === 'confidential')) {
      problems.push(`model ${m.id}: the prefix ${prefix} is reserved for confidential models`)
    } else if (confidential && !reserved) {
      problems.push(`model ${m.id}: a confidential model's id must start with ${prefix}`)
    }
  }
  return problems
}

const usdc = z
  .string()
  .regex(
    /^(0|[1-9]\d{0,6})(\.\d{1,6})?$/,
    'must be a USDC amount with at most 6 decimals, like 0.6',
  )
const usdcAboveZero = usdc.regex(/^(?!0+(\.0+)?$)/, 'must be more than 0')

/**
 * A model's token prices in USDC per million tokens (`{ "prompt": "0.6", "completion": "2.4" }`):
 * input (prompt) tokens may be free, output (completion) tokens may not.
 */
export const modelPricingSchema = z.object({ prompt: usdc, completion: usdcAboveZero }).strict()

/** One configured model. */
export const modelConfigSchema = z
  .object({
    /** Public id (what buyers put in `model`). */
    id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/, 'must be a model id'),
    /** Token prices, USDC per million tokens: `{ "prompt": "0.6", "completion": "2.4" }`. */
    pricing: modelPricingSchema,
    /** Context window in tokens. */
    contextWindow: z.int().min(16).max(100_000_000),
    /**
     * Most output tokens of one call: a keyed call without `max_tokens` is reserved (and sent) with
     * this, less what the prompt takes of the window. Default: the context window.
     */
    maxOutputTokens: z.int().min(1).max(100_000_000).optional(),
    privacy: z.enum(privacyTiers).default('open'),
    /** Offered on the keyless paid route too. Default true. */
    keyless: z.boolean().default(true),
    upstream: modelUpstreamSchema,
  })
  .strict()
  .refine((m) => upstreamTiers[m.upstream.kind].includes(m.privacy), {
    message: 'this upstream kind cannot serve the privacy tier (no silent downgrade)',
    path: ['privacy'],
  })

/** A model as configured. */
export type ModelConfig = z.output<typeof modelConfigSchema>

/** The model list setting: a JSON array (the environment holds its text). */
export const modelListSchema = z
  .preprocess((value) => {
    if (typeof value !== 'string') return value
    try {
      return JSON.parse(value) as unknown
    } catch {
      return value
    }
  }, z.array(modelConfigSchema).min(1).max(256))
  .refine((list) => new Set(list.map((m) => m.id)).size === list.length, 'model ids must differ')

/** A model ready to serve: its token prices in base units, its output cap. */
export type InferenceModel = ModelConfig & { tokenPricing: TokenPricing; maxOutput: number }

/** Prepares configured models (token prices in base units per million tokens). */
export function prepareModels(models: readonly ModelConfig[]): InferenceModel[] {
  return models.map((m) => ({
    ...m,
    tokenPricing: {
      promptPerMillion: parseAmount(m.pricing.prompt, { allowZero: true }),
      completionPerMillion: parseAmount(m.pricing.completion),
    },
    maxOutput: Math.min(m.maxOutputTokens ?? m.contextWindow, m.contextWindow),
  }))
}

/** The id of the model the embedded default serves. */
export const defaultModelId = 'llama-3.3-70b'

/**
 * The embedded default: one open model, served by a local deterministic upstream (the model stub of
 * `tollgate/testing`) at `baseUrl`.
 */
export function defaultModel(baseUrl: string): ModelConfig {
  return {
    id: defaultModelId,
    pricing: { prompt: '0.6', completion: '0.8' },
    contextWindow: 131_072,
    maxOutputTokens: 4096,
    privacy: 'open',
    keyless: true,
    upstream: { kind: 'openai-compatible', baseUrl, credential: 'INFERENCE_API_KEY' },
  }
}

/** The id of the confidential model the embedded default serves (default prefix). */
export const defaultConfidentialModelId = `${defaultConfidentialPrefix}llama-3.3-70b`

/**
 * The embedded default's confidential model: served by the simulated enclave of `tollgate/testing`
 * at `baseUrl`, its TDX quotes checked with its collateral under its test root, its GPU tokens
 * with its test JWKS, its measurement allowed.
 */
export function defaultConfidentialModel(
  enclave: {
    baseUrl: string
    rootCa: string
    collateral: Attestation.TdxCollateral
    gpuJwksUrl: string
    gpuIssuer: string
    measurement: string
  },
  prefix: string = defaultConfidentialPrefix,
): ModelConfig {
  return {
    id: `${prefix}llama-3.3-70b`,
    pricing: { prompt: '1.2', completion: '1.6' },
    contextWindow: 131_072,
    maxOutputTokens: 4096,
    privacy: 'confidential',
    keyless: true,
    upstream: {
      kind: 'confidential',
      baseUrl: enclave.baseUrl,
      quoteVerifier: { kind: 'tdx', rootCa: enclave.rootCa, collateral: enclave.collateral },
      gpu: { jwksUrl: enclave.gpuJwksUrl, issuer: enclave.gpuIssuer },
      allowedMeasurements: [enclave.measurement],
      refreshMs: 60_000,
    },
  }
}

/**
 * A model's prices in a model list entry: USDC per token (the field's convention, as OpenRouter's
 * `pricing.prompt` and `pricing.completion`), decimal strings; and, for a model the keyless route
 * offers, that route's flat price of one call.
 */
export type ModelEntryPricing = {
  currency: 'USDC'
  /** USDC per input (prompt) token. */
  prompt: string
  /** USDC per output (completion) token. */
  completion: string
  /** The keyless route's flat price of one call (6 decimals), when the model is offered there. */
  keyless_per_call?: string
  /**
   * USDC per streamed token of the keyless route's session (pay as you go, docs/protocol.md §7),
   * when the model is offered there and the gateway offers sessions.
   */
  keyless_session_per_token?: string
}

/**
 * A model list entry (`GET /v1/models`, docs/inference.md "Models"): id, pricing, context window,
 * output cap, privacy tier.
 */
export type ModelEntry = {
  id: string
  object: 'model'
  created: number
  owned_by: string
  pricing: ModelEntryPricing
  context_window: number
  max_output_tokens: number
  privacy: PrivacyTier
}

/** Fixed `created` time of the model entries (configuration has no clock). */
const listedSince = 1_767_225_600 // 2026-01-01T00:00:00Z

/**
 * The public model list; `keylessPrice` is the keyless route's flat price of one call (shown on the
 * models it offers), undefined when the gateway has no keyless route; `keylessTokenPrice` the
 * price of one streamed token of its session (base units), when the gateway offers sessions.
 */
export function modelList(
  models: readonly InferenceModel[],
  keylessPrice: bigint | undefined,
  keylessTokenPrice?: bigint | undefined,
): { object: 'list'; data: ModelEntry[] } {
  return {
    object: 'list',
    data: models.map((m) => ({
      id: m.id,
      object: 'model',
      created: listedSince,
      owned_by: 'tollgate',
      pricing: {
        currency: 'USDC',
        prompt: perTokenText(m.tokenPricing.promptPerMillion),
        completion: perTokenText(m.tokenPricing.completionPerMillion),
        ...(m.keyless && keylessPrice !== undefined
          ? { keyless_per_call: formatAmount(keylessPrice) }
          : {}),
        ...(m.keyless && keylessTokenPrice !== undefined
          ? { keyless_session_per_token: perTokenText(keylessTokenPrice * 1_000_000n) }
          : {}),
      },
      context_window: m.contextWindow,
      max_output_tokens: m.maxOutput,
      privacy: m.privacy,
    })),
  }
}
