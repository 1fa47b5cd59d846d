/**
 * The private inference API as the gateway starts it: its models (configured, or on stub upstreams
 * the embedded default — one open model served by a local deterministic model server and one
 * confidential model behind a simulated enclave), the relational database (keys, credit, receipts,
 * the marketplace), the rate limiter (Redis when `REDIS_URL` is set), the receipt anchor worker and
 * the API itself.
 *
 * @module
 */
import { randomBytes } from 'node:crypto'
import type { Signer } from '@mysten/sui/cryptography'
import type { Redis } from 'ioredis'
import type { Ledger } from 'tollgate'
import type { ModelUpstream, SimulatedEnclave } from 'tollgate/testing'
import type { GatewayLogger } from '../app/app.js'
import type { GatewayConfig } from '../config.js'
import { databaseLocationOf, type GatewayDatabase, openDatabase } from '../db/database.js'
import { type AnchorWorker, createAnchorWorker } from '../inference/anchors.js'
import { createInferenceApi, type InferenceApi } from '../inference/api.js'
import { createGatewayReceiptSigner } from '../inference/gatewayReceipt.js'
import { createKeyStore, type KeyStore } from '../inference/keys.js'
import { createRateLimiter, type RateLimiter } from '../inference/limits.js'
import { defaultConfidentialModel, defaultModel, type ModelConfig } from '../inference/models.js'
import { createReceiptStore } from '../inference/receipts.js'
import type { GatewayMetrics } from '../metrics.js'
import type { Cleanups } from './shutdown.js'

/** The inference API's models, database and limiter, before the API is built. */
export type InferenceParts = {
  models: ModelConfig[]
  /** The local model server of the embedded default model, when one was started. */
  modelStub: ModelUpstream | undefined
  /** The simulated enclave of the embedded default's confidential model, when one was started. */
  enclave: SimulatedEnclave | undefined
  database: GatewayDatabase
  keys: KeyStore
  limiter: RateLimiter
  /** Fresh-nonce attestations per client (`ATTESTATION_NONCE_PER_MINUTE`). */
  attestationLimiter: RateLimiter
  /** Marketplace nonces asked per client (`AGENT_PREPARE_PER_MINUTE`), in the same Redis. */
  prepareLimiter: RateLimiter
}

/**
 * Opens the models, the relational database and the rate limiter, registering their closing with
 * `cleanups`.
 *
 * @example
 * ```ts
 * const parts = await openInferenceParts(config, 'stub', logger, cleanups)
 * ```
 */
export async function openInferenceParts(
  config: GatewayConfig,
  upstreamMode: 'stub' | 'real',
  logger: GatewayLogger,
  cleanups: Cleanups,
): Promise<InferenceParts> {
  // The private inference API: its models (configured, or the embedded default on stub upstreams:
  // one open model served by a local deterministic model server), keys, credit and limits.
  let modelStub: ModelUpstream | undefined
  let enclave: SimulatedEnclave | undefined
  let models: ModelConfig[] = config.inferenceModels ?? []
  if (config.inferenceModels === undefined && upstreamMode === 'stub') {
    const { startModelUpstream } = await import('tollgate/testing')
    modelStub = await startModelUpstream()
    cleanups.push(() => modelStub?.stop())
    models = [defaultModel(modelStub.baseUrl)]
    const { startSimulatedEnclave } = await import('tollgate/testing')
    enclave = await startSimulatedEnclave({ misbehaviour: config.enclaveFault })
    cleanups.push(() => enclave?.stop())
    models.push(defaultConfidentialModel(enclave, config.confidentialModelPrefix))
  }
  const database = await openDatabase(databaseLocationOf(config), {
    onError: (error) => logger.error({ event: 'database_connection_error', error: error.name }),
  })
  cleanups.push(() => database.close())
  const keys = createKeyStore(database.db, { sqlite: database.sqlite })
  let redis: Redis | undefined
  if (config.redisUrl !== undefined) {
    const { Redis: RedisClient } = await import('ioredis')
    // Commands fail at once while Redis is away (the limiter's in-memory stand-in answers), rather
    // than queueing and holding requests.
    redis = new RedisClient(config.redisUrl, { maxRetriesPerRequest: 1, enableOfflineQueue: false })
    redis.on('error', (error: Error) =>
      logger.error({ event: 'rate_limit_redis_error', error: error.name }),
    )
    cleanups.push(() => redis?.quit())
  }
  const limiter = createRateLimiter({
    points: config.rateLimitPerMinute,
    durationSeconds: 60,
    redis,
    keyPrefix: `${config.storePrefix}_rl`,
  })
  const attestationLimiter = createRateLimiter({
    points: config.attestationNoncePerMinute,
    durationSeconds: 60,
    redis,
    keyPrefix: `${config.storePrefix}_attest`,
  })
  const prepareLimiter = createRateLimiter({
    points: config.agentPreparePerMinute,
    durationSeconds: 60,
    redis,
    keyPrefix: `${config.storePrefix}_prepare`,
  })
  return { models, modelStub, enclave, database, keys, limiter, attestationLimiter, prepareLimiter }
}

/** What {@link startInferenceApi} needs besides the parts. */
export type StartInferenceApiOptions = {
  config: GatewayConfig
  parts: InferenceParts
  ledger: Ledger
  /** The operator key: it signs the receipt anchors. Without it no anchors are written. */
  operator: Signer | undefined
  /** The receipt_anchor package (configured, or the emulator's). */
  anchorPackage: string | undefined
  providerKeys: Readonly<Record<string, string>>
  fetch: typeof globalThis.fetch
  metrics: GatewayMetrics
  logger: GatewayLogger
  /** The issuer of the gateway's signed receipts. */
  publicBaseUrl: string
  /** The keyless route's flat price of one call (shown in the model lists); none without one. */
  keylessPrice: bigint | undefined
  /** The keyless route's session price of one streamed token; none without sessions. */
  keylessTokenPrice: bigint | undefined
  cleanups: Cleanups
}

/**
 * Starts the receipt anchor worker (when an operator key and the anchor package are configured)
 * and the sweeper of keyed calls' lapsed reservations (every `leaseSweepIntervalMs`; a call's
 * reservation lease is `serveLeaseMs`, like a paid call's serve lease), and builds the inference
 * API, registering their closing with `cleanups`.
 *
 * @example
 * ```ts
 * const { api, anchors } = startInferenceApi({ config, parts, ledger, operator, anchorPackage, … })
 * ```
 */
export function startInferenceApi(options: StartInferenceApiOptions): {
  api: InferenceApi
  anchors: AnchorWorker | undefined
} {
  const { config, parts, ledger, operator, anchorPackage, logger, metrics, cleanups } = options
  const { database } = parts
  // Receipt anchors on the ledger: the operator key signs them, with the receipt_anchor package.
  const anchors =
    operator === undefined || anchorPackage === undefined
      ? undefined
      : createAnchorWorker({
          db: database.db,
          ledger,
          signer: operator,
          packageId: anchorPackage,
          holder: `gw_${randomBytes(6).toString('hex')}`,
          onError: (receiptId, reason) =>
            logger.warn({ event: 'receipt_anchor_failed', receiptId, reason }),
        })
  anchors?.start(config.refundIntervalMs)
  cleanups.push(() => anchors?.stop())
  // Keyed calls whose process died mid-call: their reservations are given back once the lease lapsed.
  const reservations = setInterval(
    () =>
      void parts.keys.releaseLapsed(Date.now()).then(
        (restored) => {
          if (restored > 0) logger.warn({ event: 'inference_reservations_released', restored })
        },
        (error: unknown) =>
          logger.warn({
            event: 'inference_reservation_sweep_failed',
            error: error instanceof Error ? error.name : 'unknown',
          }),
      ),
    config.leaseSweepIntervalMs,
  )
  reservations.unref()
  cleanups.push(() => clearInterval(reservations))
  const inferenceApi = createInferenceApi({
    models: parts.models,
    keys: parts.keys,
    limiter: parts.limiter,
    upstreams: {
      providerKeys: options.providerKeys,
      fetch: options.fetch,
      timeoutMs: config.upstreamTimeoutMs,
      onEvent: (event) => metrics.upstream(event),
    },
    maxBodyBytes: config.maxBodyBytes,
    keylessMaxTokens: config.openMaxTokens,
    logger,
    confidentialPrefix: config.confidentialModelPrefix,
    receipts: createReceiptStore(database.db),
    receiptSigner: createGatewayReceiptSigner(database.db, { issuer: options.publicBaseUrl }),
    anchorNow: anchors?.runOnce,
    attestationLimiter: parts.attestationLimiter,
    keylessPrice: options.keylessPrice,
    keylessTokenPrice: options.keylessTokenPrice,
    reservationLeaseMs: config.serveLeaseMs,
  })
  cleanups.push(() => inferenceApi.close())
  return { api: inferenceApi, anchors }
}
