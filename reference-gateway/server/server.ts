/**
 * Starts and stops the gateway: resolves the configuration into a ledger (a full node, or the embedded
 * emulator on its own loopback port with a funded operator key), a payment store (SQLite in the data
 * folder; PostgreSQL or Redis when their URLs are set), upstreams (the providers' APIs, or the local
 * stub upstreams), blob storage, logs and metrics; builds the app and listens. `stop()` shuts down
 * gracefully: it stops accepting, lets in-flight paid calls finish (served or refunded), pays due
 * refunds once more, and closes everything it opened.
 *
 * Each part has its module: the ledger and operator key (`ledger.ts`), the catalog and its
 * upstreams (`upstreams.ts`), the inference API (`inference.ts`), escrowed jobs (`jobs.ts`),
 * listening (`listen.ts`) and the graceful shutdown (`shutdown.ts`);
 * this module puts them together, in order.
 *
 * @module
 */
import type { Server } from 'node:http'
import { join } from 'node:path'
import { SuiGrpcClient } from '@mysten/sui/grpc'
import pino from 'pino'
import type { SellerEvent } from 'tollgate'
import { Challenge, parseAmount } from 'tollgate'
import { createNodeFetch, type HostResolver } from 'tollgate/node'
import type {
  ModelUpstream,
  SimulatedEnclave,
  StartedLedger,
  StubUpstreams,
} from 'tollgate/testing'
import pkg from '../../package.json' with { type: 'json' }
import {
  createGatewayApp,
  type GatewayApp,
  type GatewayAppOptions,
  type GatewayLogger,
  type LedgerInfo,
} from '../app/app.js'
import { createLocalBlobStore } from '../blobs/local.js'
import { type Catalog, paidEntries, priceOf } from '../catalog/catalog.js'
import { configError, type GatewayConfig } from '../config.js'
import { loadConsoleAssets } from '../console/assets.js'
import type { AnchorWorker } from '../inference/anchors.js'
import type { InferenceApi } from '../inference/api.js'
import type { KeyStore } from '../inference/keys.js'
import { createActivityStore, recordGatewaySale } from '../marketplace/activity.js'
import { createReviewStore, gatewayPurchases } from '../marketplace/reviews.js'
import { startMarketplaceReprobes } from '../marketplace/schedule.js'
import { createMutationSigner } from '../marketplace/signing.js'
import { createMarketplaceStore } from '../marketplace/store.js'
import { createMetrics, type GatewayMetrics } from '../metrics.js'
import { checkStoreReachable, checkWritableFolder, errorFields, secretValues } from '../startup.js'
import { gatewayStoreLocation, openStoreAt, type StoreKind } from '../storeLocation.js'
import { openInferenceParts, startInferenceApi } from './inference.js'
import { escrowJobs } from './jobs.js'
import { openGatewayLedger } from './ledger.js'
import { listenGateway } from './listen.js'
import { type GatewaySessions, keylessTokenPrice, openGatewaySessions } from './sessions.js'
import { type Cleanups, createCleanups, gracefulStop } from './shutdown.js'
import { resolveUpstreams } from './upstreams.js'

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
  /**
   * Replaces what prices the paid routes, for benchmarks and tests only (`GatewayAppOptions.pay`:
   * given the paywall, the `pay` the routes use instead of its own). Default: the paywall's.
   * Security: never set it in production.
   */
  pay?: GatewayAppOptions['pay']
}

export type { StoreKind } from '../storeLocation.js'

/** A running gateway. */
export type RunningGateway = {
  /** `http://host:port` it listens on. */
  url: string
  /** The HTTP server (its connections, e.g. the bytes read from each). */
  server: Server
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
  /** The sessions it offers (docs/protocol.md §7), when it does. */
  sessions: GatewaySessions | undefined
  /** Stops gracefully (see the module doc). Idempotent. */
  stop(): Promise<void>
}

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
  const cleanups = createCleanups(logger)
  try {
    return await start(options, config, logger, cleanups)
  } catch (error) {
    await cleanups.run()
    throw error
  }
}

async function start(
  options: StartGatewayOptions,
  config: GatewayConfig,
  logger: GatewayLogger,
  cleanups: Cleanups,
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

  const { ledger, ledgerUrl, ledgerInfo, emulator, local, operator, payTo, secrets } =
    await openGatewayLedger(config, asset, logger, cleanups)

  // Payment store: opened, then asked once, so a store it cannot reach stops the start.
  const store = await openStoreAt(storeLocation, {
    synchronous: config.sqliteSynchronous,
    serveLeaseMs: config.serveLeaseMs,
    claimLeaseMs: config.claimLeaseMs,
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
    config.upstreams === 'auto' ? (local === undefined ? 'real' : 'stub') : config.upstreams
  const inference = await openInferenceParts(config, upstreamMode, logger, cleanups)
  const { models, database, keys } = inference
  const marketplace = createMarketplaceStore(database.db)
  const { catalog, providerKeys, stubs } = await resolveUpstreams({
    config,
    catalog: options.catalog,
    upstreamMode,
    models,
    logger,
    cleanups,
  })

  // Listen first, so the public URL is known when the app is built.
  const listening = await listenGateway(config, cleanups)
  const { server, url, port, publicBaseUrl } = listening

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

  const reviews = createReviewStore(database.db, { minValue: parseAmount(config.reviewMinValue) })
  const jobs = await escrowJobs({
    config,
    ledger,
    ledgerUrl,
    local,
    asset,
    publicBaseUrl,
    secrets,
    reviews,
  })

  // The marketplace's record of sales: a paid call's payment, or a session's settlement.
  const activity = createActivityStore(database.db)
  const sessions = await openGatewaySessions({
    config,
    ledger: { local, operator, payTo, ledgerUrl },
    location: storeLocation,
    tokenPrice: keylessTokenPrice(models),
    cleanups,
    onSettled: (settlement) =>
      void recordGatewaySale(activity, { payTo, asset }, { ...settlement, resource: null }).catch(
        (error: unknown) =>
          logger.warn({
            event: 'activity_record_failed',
            error: errorFields(error, secretValues(config)),
          }),
      ),
  })
  if (sessions.status === 'off') logger.info({ event: 'sessions_off', reason: sessions.reason })

  const metrics = createMetrics()
  const upstreamFetch = options.fetch ?? createNodeFetch({ maxBufferedBytes: 64 * 1024 * 1024 })
  // The keyless route's flat price of one call, shown with the models it offers.
  const keyless = paidEntries(catalog).find((entry) => entry.service.servedBy === 'inference')
  const { api: inferenceApi, anchors } = startInferenceApi({
    config,
    parts: inference,
    keylessPrice: keyless === undefined ? undefined : priceOf(keyless.endpoint),
    keylessTokenPrice: sessions.status === 'on' ? sessions.tokenPrice : undefined,
    ledger,
    operator,
    anchorPackage: config.receiptAnchorPackage ?? local?.modulesPackage,
    providerKeys,
    fetch: upstreamFetch,
    metrics,
    logger,
    publicBaseUrl,
    cleanups,
  })
  const listingGates = {
    client: new SuiGrpcClient({
      network: (config.network.split(':')[1] ?? 'mainnet') as 'mainnet',
      baseUrl: ledgerUrl,
    }),
    registryPackage: config.agentRegistryPackage ?? local?.modulesPackage,
    network: config.network,
    usdc: asset,
    // Off unless the operator says so, the local stack included (SSRF).
    allowPrivateNetwork: config.listingAllowPrivateNetwork,
  }
  const warning = privateProbesWarning(config)
  if (warning !== undefined) logger.warn({ event: 'listing_private_network', message: warning })
  const consoleAssets = loadConsoleAssets()
  if (consoleAssets.status === 'missing') {
    logger.warn({ event: 'console_not_built', message: consoleAssets.hint })
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
      realm: config.mppRealm,
      trustProxy: config.trustProxy,
      refundSigner: operator,
      refundIntervalMs: config.refundIntervalMs,
      leaseSweep: {
        intervalMs: config.leaseSweepIntervalMs,
        graceMs: config.leaseSweepGraceMs,
        // A top-up whose process died after crediting and before recording the payment served was
        // delivered: served, never refunded as well (the credit and the payment live in two stores).
        delivered: (record) => keys.creditedBy(`payment:${record.digest}`),
      },
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
    ...(sessions.status === 'on' ? { sessions } : {}),
    marketplace: {
      store: marketplace,
      signer: createMutationSigner({
        store: marketplace,
        maxOutstandingNonces: config.maxOutstandingNonces,
      }),
      prepareLimit: { limiter: inference.prepareLimiter, trustProxy: config.trustProxy },
      gates: listingGates,
      reprobeIntervalMs: config.reprobeIntervalMs,
      reviews: { store: reviews, purchases: gatewayPurchases(store, payTo) },
      activity: { store: activity, ledger },
    },
    inference: { api: inferenceApi, keys, topUps: config.creditTopUps },
    console: {
      db: database.db,
      keys,
      publicBaseUrl,
      network: config.network,
      asset,
      payTo,
      topUps: config.creditTopUps,
      ledger,
      testMoney: ledgerInfo.emulated,
      prepareLimit: { limiter: inference.prepareLimiter, trustProxy: config.trustProxy },
      signIns: { maxOutstandingNonces: config.maxOutstandingNonces, client: listingGates.client },
      assets: consoleAssets,
    },
    pay: options.pay,
  })
  cleanups.push(() => gateway.paywall.close())
  listening.serve((request, env) => gateway.app.fetch(request, env as never))
  const reprobes = startMarketplaceReprobes(config, marketplace, listingGates, logger)
  cleanups.push(() => reprobes.stop())

  const stop = gracefulStop({
    server,
    httpInFlight: listening.httpInFlight,
    gateway,
    refunds: operator !== undefined,
    logger,
    cleanups,
    shutdownTimeoutMs: config.shutdownTimeoutMs,
  })

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
    server,
    publicBaseUrl,
    port,
    payTo,
    operator: operator?.toSuiAddress(),
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
      modelStub: inference.modelStub,
      enclave: inference.enclave,
      anchors,
    },
    sessions: sessions.status === 'on' ? sessions : undefined,
    stop,
  }
}

/**
 * The start-up warning when listing probes may reach private addresses and the gateway listens
 * beyond loopback (e.g. `HOST=0.0.0.0` in a container): anyone who can reach it and register an
 * agent can make it send requests into the network it runs in. `undefined` otherwise.
 *
 * @example
 * ```ts
 * privateProbesWarning({ listingAllowPrivateNetwork: true, host: '0.0.0.0' }) // 'LISTING_ALLOW_…'
 * ```
 */
export function privateProbesWarning(
  config: Pick<GatewayConfig, 'listingAllowPrivateNetwork' | 'host'>,
): string | undefined {
  if (!config.listingAllowPrivateNetwork || isLoopbackHost(config.host)) return undefined
  return `LISTING_ALLOW_PRIVATE_NETWORK is on and the gateway listens on ${config.host}, beyond loopback: any registered agent can make listing probes reach loopback and private addresses of this network (SSRF). Turn it off unless every client is trusted.`
}

function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase()
  return bare === 'localhost' || bare === '::1' || /^127(\.\d{1,3}){3}$/.test(bare)
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
