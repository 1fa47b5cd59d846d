/**
 * Starts and stops the gateway: resolves the configuration into a ledger (a full node, or the embedded
 * emulator on its own loopback port with a funded operator key), a payment store (SQLite in the data
 * folder; PostgreSQL or Redis when their URLs are set), upstreams (the providers' APIs, or the local
 * stub upstreams), blob storage, logs and metrics; builds the app and listens. `stop()` shuts down
 * gracefully: it stops accepting, lets in-flight paid calls finish (served or refunded), pays due
 * refunds once more, and closes everything it opened.
 *
 * @module
 */
import { randomBytes } from 'node:crypto'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { createAdaptorServer } from '@hono/node-server'
import type { Signer } from '@mysten/sui/cryptography'
import { decodeSuiPrivateKey } from '@mysten/sui/cryptography'
import { SuiGrpcClient } from '@mysten/sui/grpc'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Secp256k1Keypair } from '@mysten/sui/keypairs/secp256k1'
import { Secp256r1Keypair } from '@mysten/sui/keypairs/secp256r1'
import type { Redis } from 'ioredis'
import pino from 'pino'
import type { SellerEvent } from 'tollgate'
import { Challenge, createLedger } from 'tollgate'
import { createNodeFetch, type HostResolver, nodeFetch } from 'tollgate/node'
import type {
  ModelUpstream,
  SimulatedEnclave,
  StartedLedger,
  StubUpstreams,
} from 'tollgate/testing'
import pkg from '../package.json' with { type: 'json' }
import { createGatewayApp, type GatewayApp, type GatewayLogger, type LedgerInfo } from './app.js'
import { createLocalBlobStore } from './blobs/local.js'
import { type Catalog, defaultMaxBodyBytes, paidEntries, withUpstreams } from './catalog/catalog.js'
import { defaultCatalog } from './catalog/default.js'
import { configError, type GatewayConfig } from './config.js'
import { databaseLocationOf, openDatabase } from './db/database.js'
import { type AnchorWorker, createAnchorWorker } from './inference/anchors.js'
import { createInferenceApi, type InferenceApi } from './inference/api.js'
import { createGatewayReceiptSigner } from './inference/gatewayReceipt.js'
import { createKeyStore, type KeyStore } from './inference/keys.js'
import { createRateLimiter } from './inference/limits.js'
import { defaultConfidentialModel, defaultModel, type ModelConfig } from './inference/models.js'
import { createReceiptStore } from './inference/receipts.js'
import type { JobRoutesOptions } from './jobs/routes.js'
import { createActivityStore } from './marketplace/activity.js'
import { createReviewStore, gatewayPurchases } from './marketplace/reviews.js'
import { startMarketplaceReprobes } from './marketplace/schedule.js'
import { createMutationSigner } from './marketplace/signing.js'
import { createMarketplaceStore } from './marketplace/store.js'
import { createMetrics, type GatewayMetrics } from './metrics.js'
import {
  checkStoreReachable,
  checkWritableFolder,
  errorFields,
  listenProblem,
  secretValues,
} from './startup.js'
import { gatewayStoreLocation, openStoreAt, type StoreKind } from './storeLocation.js'

/** Options of {@link startGateway}. */
export type StartGatewayOptions = {
  config: GatewayConfig
  /** Logger. Default pino to stdout at `config.logLevel`. */
  logger?: GatewayLogger | undefined
  /** The catalog before upstream resolution. Default `defaultCatalog()` with the keyless models. */
  catalog?: Catalog | undefined
  /**
   * Fetch for upstream calls (tests). Default: keep-alive requests over undici's `request()`
   * (`createNodeFetch`; answers streamed unless JSON or text, those read up to 64 MiB).
   */
  fetch?: typeof globalThis.fetch | undefined
  /** Resolver of media host names (tests). Default `node:dns`. */
  resolveHost?: HostResolver | undefined
  /** Observes payment and refund events (tests, the demo). */
  onEvent?: ((event: SellerEvent) => void) | undefined
}

export type { StoreKind } from './storeLocation.js'

/** A running gateway. */
export type RunningGateway = {
  /** `http://host:port` it listens on. */
  url: string
  /** The public base URL bound into challenges. */
  publicBaseUrl: string
  port: number
  payTo: string
  /** The operator key's address (refunds), if one is configured. */
  operator: string | undefined
  ledger: LedgerInfo
  /** The embedded ledger emulator, when one was started. */
  emulator: StartedLedger | undefined
  /** The stub upstreams, when in use. */
  stubs: StubUpstreams | undefined
  store: StoreKind
  upstreams: 'stub' | 'real'
  /** The catalog as served (upstreams resolved). */
  catalog: Catalog
  metrics: GatewayMetrics
  gateway: GatewayApp
  /** The private inference API: its keys and credit, the relational store's kind, the model stub. */
  inference: {
    api: InferenceApi
    keys: KeyStore
    database: 'sqlite' | 'postgres'
    /** The local model server of the embedded default model, when one was started. */
    modelStub: ModelUpstream | undefined
    /** The simulated enclave of the embedded default's confidential model, when one was started. */
    enclave: SimulatedEnclave | undefined
    /** The receipt anchor worker, when an operator key and the anchor package are configured. */
    anchors: AnchorWorker | undefined
  }
  /** Stops gracefully (see the module doc). Idempotent. */
  stop(): Promise<void>
}

/** Test money the embedded emulator gives a fresh operator key (gas for refunds). */
const operatorFunding = { usdc: '100', sui: '10' }

/**
 * Starts the gateway.
 *
 * @example
 * ```ts
 * const gateway = await startGateway({ config: loadConfig() })
 * process.once('SIGTERM', () => gateway.stop())
 * ```
 */
export async function startGateway(options: StartGatewayOptions): Promise<RunningGateway> {
  const { config } = options
  const logger: GatewayLogger =
    options.logger ??
    pino({ level: config.logLevel, base: { service: 'tollgate-gateway' }, redact: redactPaths })
  const cleanups: (() => Promise<unknown> | unknown)[] = []
  const cleanup = async () => {
    for (const step of cleanups.reverse()) {
      try {
        await step()
      } catch (error) {
        logger.warn({ event: 'shutdown_step_failed', error: errorFields(error) })
      }
    }
    cleanups.length = 0
  }
  try {
    return await start(options, config, logger, cleanups, cleanup)
  } catch (error) {
    await cleanup()
    throw error
  }
}

async function start(
  options: StartGatewayOptions,
  config: GatewayConfig,
  logger: GatewayLogger,
  cleanups: (() => Promise<unknown> | unknown)[],
  cleanup: () => Promise<void>,
): Promise<RunningGateway> {
  const asset = config.asset ?? Challenge.usdcCoinTypes[config.network]
  if (asset === undefined) {
    throw configError([`ASSET (asset): required on ${config.network} (no known USDC type)`])
  }
  const storeLocation = gatewayStoreLocation(config)
  if (storeLocation.kind === 'missing') {
    throw configError([
      `${storeLocation.setting} (${storeLocation.setting === 'DATABASE_URL' ? 'databaseUrl' : 'redisUrl'}): required when STORE=${storeLocation.store}`,
    ])
  }
  const storeKind: StoreKind = storeLocation.kind
  // Folders first: a data folder the gateway cannot write fails the start, not the first payment.
  if (storeKind === 'sqlite' || config.blobDir === undefined) {
    checkWritableFolder('dataDir', config.dataDir)
  }
  if (config.blobDir !== undefined) checkWritableFolder('blobDir', config.blobDir)

  // Ledger: a configured full node, or the embedded emulator.
  let emulator: StartedLedger | undefined
  let ledgerUrl = config.ledgerUrl
  if (ledgerUrl === undefined) {
    const { startLedger } = await import('tollgate/testing')
    emulator = await startLedger({
      latencyMs: config.emulatorLatencyMs,
      ...(config.emulatorState === undefined ? {} : { stateFile: config.emulatorState }),
    })
    cleanups.push(() => emulator?.stop())
    ledgerUrl = emulator.url
  }
  const ledgerInfo: LedgerInfo = {
    url: ledgerUrl,
    network: config.network,
    emulated: emulator !== undefined,
  }

  // Operator key (refunds) and recipient.
  let operator: Signer | undefined
  if (config.operatorKey !== undefined) operator = signerOf(config.operatorKey)
  else if (emulator !== undefined) {
    const keypair = Ed25519Keypair.generate()
    emulator.faucet({ address: keypair.toSuiAddress(), ...operatorFunding })
    operator = keypair
  }
  const operatorAddress = operator?.toSuiAddress()
  const payTo = config.payTo ?? operatorAddress
  if (payTo === undefined) {
    throw configError([
      'PAY_TO (payTo): required when no OPERATOR_KEY is set and the ledger is not the embedded emulator',
    ])
  }
  if (operator === undefined) {
    logger.warn({
      event: 'no_operator_key',
      message: 'OPERATOR_KEY is not set: refunds of failed paid calls stay owed (tollgate refunds)',
    })
  }
  const secrets = config.challengeSecrets ?? [randomBytes(32).toString('base64url')]
  if (config.challengeSecrets === undefined && emulator === undefined) {
    logger.warn({
      event: 'random_challenge_secret',
      message:
        'CHALLENGE_SECRETS is not set: a random secret is used; challenges do not survive a restart or work across processes',
    })
  }

  const ledger = createLedger({
    url: ledgerUrl,
    fetch: nodeFetch,
    network: (config.network.split(':')[1] ?? 'mainnet') as 'mainnet',
    usdcType: asset,
    timeoutMs: config.ledgerTimeoutMs,
    ...(operator === undefined ? {} : { operator }),
  })

  // Payment store: opened, then asked once, so a store it cannot reach stops the start.
  const store = await openStoreAt(storeLocation, {
    synchronous: config.sqliteSynchronous,
    onError: (error) =>
      logger.error({
        event: 'store_connection_error',
        error: errorFields(error, secretValues(config)),
      }),
  })
  cleanups.push(() => store.close())
  await checkStoreReachable(store, storeKind, config)

  // Upstreams: the providers' APIs, or the local stubs.
  const upstreamMode =
    config.upstreams === 'auto' ? (emulator === undefined ? 'real' : 'stub') : config.upstreams
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
  const keys = createKeyStore(database.db)
  const marketplace = createMarketplaceStore(database.db)
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
  const keylessModels = models.filter((m) => m.keyless).map((m) => m.id)

  const base =
    options.catalog ??
    defaultCatalog({
      openMaxTokens: config.openMaxTokens,
      ...(keylessModels.length > 0 ? { openModels: keylessModels as [string, ...string[]] } : {}),
    })
  let stubs: StubUpstreams | undefined
  const providerKeys: Record<string, string> = { ...config.providerKeys }
  let baseUrls: Record<string, string> = { ...config.upstreamUrls }
  if (upstreamMode === 'stub') {
    const { startStubUpstreams } = await import('tollgate/testing')
    stubs = await startStubUpstreams()
    cleanups.push(() => stubs?.stop())
    baseUrls = { ...stubs.baseUrls, ...config.upstreamUrls }
    for (const service of base.services) {
      if (service.upstream.credential !== undefined) {
        providerKeys[service.upstream.credential] ??= 'stub-key'
      }
    }
    for (const model of models) {
      if (model.upstream.credential !== undefined)
        providerKeys[model.upstream.credential] ??= 'stub-key'
    }
  } else {
    const missing = base.services
      .filter(
        (s) =>
          s.servedBy === undefined &&
          s.upstream.credential !== undefined &&
          providerKeys[s.upstream.credential] === undefined,
      )
      .map((s) => `${s.segment} (${s.upstream.credential})`)
    if (missing.length > 0) {
      logger.warn({
        event: 'missing_provider_keys',
        services: missing,
        message: 'calls to these services fail and are refunded until their keys are set',
      })
    }
  }
  const catalog = withBodyLimit(withUpstreams(base, { baseUrls }), config.maxBodyBytes)

  // Listen first, so the public URL is known when the app is built.
  // The Node bindings (`env.incoming`, `env.outgoing`) are passed on: the paywall reads paid
  // requests' bodies and finishes paid responses through them.
  let handler: (request: Request, env: unknown) => Response | Promise<Response> = () =>
    new Response('starting', { status: 503 })
  const server = createAdaptorServer({
    fetch: (request: Request, env: unknown) => handler(request, env),
  }) as Server
  let httpInFlight = 0
  server.on('request', (_req, res) => {
    httpInFlight++
    res.once('close', () => httpInFlight--)
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) => reject(listenProblem(error, config) ?? error))
    // A deep accept queue: bursts of buyers are queued, not reset.
    server.listen({ port: config.port, host: config.host, backlog: 4096 }, () => {
      server.off('error', reject)
      resolve()
    })
  })
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  )
  const port = (server.address() as AddressInfo).port
  const urlHost = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host
  const url = `http://${urlHost.includes(':') ? `[${urlHost}]` : urlHost}:${port}`
  const publicBaseUrl = (config.publicBaseUrl ?? url).replace(/\/+$/, '')

  const blobs = createLocalBlobStore({
    directory: config.blobDir ?? join(config.dataDir, 'blobs'),
    publicBaseUrl: `${publicBaseUrl}/blobs`,
    retentionMs: config.blobRetentionHours * 3_600_000,
  })
  const sweeper = setInterval(
    () => void blobs.sweep().catch(() => {}),
    Math.min(3_600_000, config.blobRetentionHours * 3_600_000),
  )
  sweeper.unref()
  cleanups.push(() => clearInterval(sweeper))

  // Escrowed jobs: on the emulator's package, or a configured package and config object.
  if ((config.escrowPackage === undefined) !== (config.escrowConfig === undefined)) {
    throw configError([
      'ESCROW_CONFIG (escrowConfig) and ESCROW_PACKAGE (escrowPackage): set both or neither',
    ])
  }
  const escrowPackage = config.escrowPackage ?? emulator?.modulesPackage
  const escrowConfig = config.escrowConfig ?? emulator?.escrow.config
  let jobs: JobRoutesOptions | undefined
  if (escrowPackage !== undefined && escrowConfig !== undefined) {
    const { createSqliteReviewStore } = await import('./reviews/store.js')
    const reviews = createSqliteReviewStore({
      file: storeKind === 'memory' ? ':memory:' : join(config.dataDir, 'reviews.db'),
    })
    cleanups.push(() => reviews.close())
    jobs = {
      client: new SuiGrpcClient({
        network: (config.network.split(':')[1] ?? 'mainnet') as 'mainnet',
        baseUrl: ledgerUrl,
      }),
      ledger,
      package: escrowPackage,
      config: escrowConfig,
      asset,
      network: config.network,
      publicBaseUrl,
      secrets,
      reviews,
    }
  }

  const metrics = createMetrics()
  const upstreamFetch = options.fetch ?? createNodeFetch({ maxBufferedBytes: 64 * 1024 * 1024 })
  // Receipt anchors on the ledger: the operator key signs them, with the receipt_anchor package.
  const anchorPackage = config.receiptAnchorPackage ?? emulator?.modulesPackage
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
  const inferenceApi = createInferenceApi({
    models,
    keys,
    limiter,
    upstreams: {
      providerKeys,
      fetch: upstreamFetch,
      timeoutMs: config.upstreamTimeoutMs,
      onEvent: (event) => metrics.upstream(event),
    },
    maxBodyBytes: config.maxBodyBytes,
    keylessMaxTokens: config.openMaxTokens,
    logger,
    confidentialPrefix: config.confidentialModelPrefix,
    receipts: createReceiptStore(database.db),
    receiptSigner: createGatewayReceiptSigner(database.db, { issuer: publicBaseUrl }),
    anchorNow: anchors?.runOnce,
  })
  cleanups.push(() => inferenceApi.close())
  const listingGates = {
    client: new SuiGrpcClient({
      network: (config.network.split(':')[1] ?? 'mainnet') as 'mainnet',
      baseUrl: ledgerUrl,
    }),
    registryPackage: config.agentRegistryPackage ?? emulator?.modulesPackage,
    network: config.network,
    usdc: asset,
    allowPrivateNetwork: config.listingAllowPrivateNetwork ?? emulator !== undefined,
  }
  const gateway = createGatewayApp({
    catalog,
    seller: {
      payTo,
      ledger,
      store,
      secrets,
      network: config.network,
      asset,
      publicBaseUrl,
      trustProxy: config.trustProxy,
      refundSigner: operator,
      refundIntervalMs: config.refundIntervalMs,
      maxBodyBytes: config.maxBodyBytes,
      onEvent: options.onEvent,
    },
    providerKeys,
    blobs,
    metrics,
    logger,
    ledger: ledgerInfo,
    health: {
      version: pkg.version,
      store: storeKind,
      upstreams: upstreamMode,
      services: catalog.services.length,
      endpoints: paidEntries(catalog).length,
      inference: { models: models.length, database: database.dialect },
    },
    readiness: {
      store: () => store.counts(),
      database: () => database.db.selectFrom('inference_keys').select('id').limit(1).execute(),
      ledger: () => ledger.getBalance(payTo, asset),
    },
    redact: secretValues(config),
    upstreamTimeoutMs: config.upstreamTimeoutMs,
    corsOrigins: config.corsOrigins,
    allowInternalHosts: upstreamMode === 'stub',
    resolveHost: options.resolveHost,
    fetch: upstreamFetch,
    jobs,
    marketplace: {
      store: marketplace,
      signer: createMutationSigner({ store: marketplace }),
      gates: listingGates,
      reprobeIntervalMs: config.reprobeIntervalMs,
      reviews: { store: createReviewStore(database.db), purchases: gatewayPurchases(store, payTo) },
      activity: { store: createActivityStore(database.db), ledger },
    },
    inference: { api: inferenceApi, keys, topUps: config.creditTopUps },
  })
  cleanups.push(() => gateway.paywall.close())
  handler = (request, env) => gateway.app.fetch(request, env as never)
  const reprobes = startMarketplaceReprobes(config, marketplace, listingGates, logger)
  cleanups.push(() => reprobes.stop())

  let stopping: Promise<void> | undefined
  async function stop(): Promise<void> {
    stopping ??= (async () => {
      // Stop accepting; finish what is in flight (served or owed a refund), then close.
      server.close()
      server.closeIdleConnections()
      const deadline = Date.now() + config.shutdownTimeoutMs
      while ((httpInFlight > 0 || gateway.paidInFlight() > 0) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20))
        server.closeIdleConnections()
      }
      if (operator !== undefined) {
        await gateway.paywall.seller.refunder.runOnce().catch(() => undefined)
      }
      logger.info({ event: 'stopped', paidInFlight: gateway.paidInFlight() })
      await cleanup()
    })()
    return stopping
  }

  logger.info({
    event: 'started',
    url,
    publicBaseUrl,
    ledger: ledgerInfo,
    store: storeKind,
    upstreams: upstreamMode,
  })
  return {
    url,
    publicBaseUrl,
    port,
    payTo,
    operator: operatorAddress,
    ledger: ledgerInfo,
    emulator,
    stubs,
    store: storeKind,
    upstreams: upstreamMode,
    catalog,
    metrics,
    gateway,
    inference: {
      api: inferenceApi,
      keys,
      database: database.dialect,
      modelStub,
      enclave,
      anchors,
    },
    stop,
  }
}

/** Log fields never written (defence in depth: nothing secret is logged on purpose). */
const redactPaths = [
  'authorization',
  '*.authorization',
  'apiKey',
  '*.apiKey',
  'operatorKey',
  'headers',
  '*.headers',
]

/** Applies the configured default body limit to endpoints that use the catalog default. */
function withBodyLimit(catalog: Catalog, maxBodyBytes: number): Catalog {
  if (maxBodyBytes === defaultMaxBodyBytes) return catalog
  return {
    services: catalog.services.map((service) => ({
      ...service,
      endpoints: service.endpoints.map((endpoint) =>
        endpoint.kind === 'paid' &&
        (endpoint.maxBodyBytes === undefined || endpoint.maxBodyBytes === defaultMaxBodyBytes)
          ? { ...endpoint, maxBodyBytes }
          : endpoint,
      ),
    })),
  }
}

function signerOf(secret: string): Signer {
  let decoded: ReturnType<typeof decodeSuiPrivateKey>
  try {
    decoded = decodeSuiPrivateKey(secret)
  } catch {
    throw configError(['OPERATOR_KEY (operatorKey): not a valid Sui private key'])
  }
  switch (decoded.scheme) {
    case 'ED25519':
      return Ed25519Keypair.fromSecretKey(decoded.secretKey)
    case 'Secp256k1':
      return Secp256k1Keypair.fromSecretKey(decoded.secretKey)
    case 'Secp256r1':
      return Secp256r1Keypair.fromSecretKey(decoded.secretKey)
    default:
      throw configError([`OPERATOR_KEY (operatorKey): the ${decoded.scheme} scheme cannot sign`])
  }
}
