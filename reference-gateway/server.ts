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
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Secp256k1Keypair } from '@mysten/sui/keypairs/secp256k1'
import { Secp256r1Keypair } from '@mysten/sui/keypairs/secp256r1'
import pino from 'pino'
import pkg from '../package.json' with { type: 'json' }
import { createNodeFetch } from '../src/internal/nodeFetch.js'
import { usdcCoinTypes } from '../src/internal/terms.js'
import { createLedger } from '../src/ledger/index.js'
import type { SellerEvent } from '../src/seller.js'
import { createMemoryStore } from '../src/stores/memory.js'
import type { PaymentStore } from '../src/stores/types.js'
import type { StartedLedger } from '../src/testing/ledger/index.js'
import type { StubUpstreams } from '../src/testing/upstreams/index.js'
import { createGatewayApp, type GatewayApp, type GatewayLogger, type LedgerInfo } from './app.js'
import { createLocalBlobStore } from './blobs/local.js'
import { type Catalog, defaultMaxBodyBytes, paidEntries, withUpstreams } from './catalog/catalog.js'
import { defaultCatalog } from './catalog/default.js'
import { ConfigError, type GatewayConfig } from './config.js'
import { createMetrics, type GatewayMetrics } from './metrics.js'

/** Options of {@link startGateway}. */
export type StartGatewayOptions = {
  config: GatewayConfig
  /** Logger. Default pino to stdout at `config.logLevel`. */
  logger?: GatewayLogger | undefined
  /** The catalog before upstream resolution. Default `defaultCatalog({ inferenceUrl })`. */
  catalog?: Catalog | undefined
  /**
   * Fetch for upstream calls (tests). Default: keep-alive requests over Node's `http`/`https`
   * (`createNodeFetch`; answers streamed unless JSON or text, those read up to 64 MiB).
   */
  fetch?: typeof globalThis.fetch | undefined
  /** Observes payment and refund events (tests, the demo). */
  onEvent?: ((event: SellerEvent) => void) | undefined
}

/** Which payment store is in use. */
export type StoreKind = 'sqlite' | 'postgres' | 'redis' | 'memory'

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
        logger.warn({ event: 'shutdown_step_failed', error: errorName(error) })
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
  const asset = config.asset ?? usdcCoinTypes[config.network]
  if (asset === undefined) {
    throw new ConfigError([`ASSET (asset): required on ${config.network} (no known USDC type)`])
  }

  // Ledger: a configured full node, or the embedded emulator.
  let emulator: StartedLedger | undefined
  let ledgerUrl = config.ledgerUrl
  if (ledgerUrl === undefined) {
    const { startLedger } = await import('../src/testing/ledger/index.js')
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
    throw new ConfigError([
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
    network: (config.network.split(':')[1] ?? 'mainnet') as 'mainnet',
    usdcType: asset,
    timeoutMs: config.ledgerTimeoutMs,
    ...(operator === undefined ? {} : { operator }),
  })

  // Payment store.
  const storeKind: StoreKind =
    config.store !== 'auto'
      ? config.store
      : config.databaseUrl !== undefined
        ? 'postgres'
        : config.redisUrl !== undefined
          ? 'redis'
          : 'sqlite'
  const store = await openStore(storeKind, config, logger)
  cleanups.push(() => store.close())

  // Upstreams: the providers' APIs, or the local stubs.
  const upstreamMode =
    config.upstreams === 'auto' ? (emulator === undefined ? 'real' : 'stub') : config.upstreams
  const base =
    options.catalog ??
    defaultCatalog(config.inferenceUrl === undefined ? {} : { inferenceUrl: config.inferenceUrl })
  let stubs: StubUpstreams | undefined
  const providerKeys: Record<string, string> = { ...config.providerKeys }
  let baseUrls: Record<string, string> = { ...config.upstreamUrls }
  if (upstreamMode === 'stub') {
    const { startStubUpstreams } = await import('../src/testing/upstreams/index.js')
    stubs = await startStubUpstreams()
    cleanups.push(() => stubs?.stop())
    baseUrls = { ...stubs.baseUrls, ...config.upstreamUrls }
    for (const service of base.services) providerKeys[service.upstream.credential] ??= 'stub-key'
  } else {
    const missing = base.services
      .filter((s) => providerKeys[s.upstream.credential] === undefined)
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
    server.once('error', reject)
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

  const metrics = createMetrics()
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
    },
    readiness: {
      store: () => store.counts(),
      ledger: () => ledger.getBalance(payTo, asset),
    },
    upstreamTimeoutMs: config.upstreamTimeoutMs,
    allowInternalHosts: upstreamMode === 'stub',
    fetch: options.fetch ?? createNodeFetch({ maxBufferedBytes: 64 * 1024 * 1024 }),
  })
  cleanups.push(() => gateway.paywall.close())
  handler = (request, env) => gateway.app.fetch(request, env as never)

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

async function openStore(
  kind: StoreKind,
  config: GatewayConfig,
  logger: GatewayLogger,
): Promise<PaymentStore> {
  const onError = (error: Error) =>
    logger.error({ event: 'store_connection_error', error: error.name })
  switch (kind) {
    case 'memory':
      return createMemoryStore()
    case 'sqlite': {
      const { createSqliteStore } = await import('../src/stores/sqlite.js')
      return createSqliteStore({
        database: join(config.dataDir, 'payments.db'),
        table: config.storePrefix,
        synchronous: config.sqliteSynchronous,
      })
    }
    case 'postgres': {
      if (config.databaseUrl === undefined) {
        throw new ConfigError(['DATABASE_URL (databaseUrl): required when STORE=postgres'])
      }
      const { createPostgresStore } = await import('../src/stores/postgres.js')
      return createPostgresStore({
        connection: config.databaseUrl,
        table: config.storePrefix,
        onError,
      })
    }
    case 'redis': {
      if (config.redisUrl === undefined) {
        throw new ConfigError(['REDIS_URL (redisUrl): required when STORE=redis'])
      }
      const { createRedisStore } = await import('../src/stores/redis.js')
      return createRedisStore({
        connection: config.redisUrl,
        keyPrefix: `${config.storePrefix}:`,
        onError,
      })
    }
  }
}

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
    throw new ConfigError(['OPERATOR_KEY (operatorKey): not a valid Sui private key'])
  }
  switch (decoded.scheme) {
    case 'ED25519':
      return Ed25519Keypair.fromSecretKey(decoded.secretKey)
    case 'Secp256k1':
      return Secp256k1Keypair.fromSecretKey(decoded.secretKey)
    case 'Secp256r1':
      return Secp256r1Keypair.fromSecretKey(decoded.secretKey)
    default:
      throw new ConfigError([
        `OPERATOR_KEY (operatorKey): the ${decoded.scheme} scheme cannot sign`,
      ])
  }
}

function errorName(error: unknown): string {
  return error instanceof Error ? error.name : 'error'
}
