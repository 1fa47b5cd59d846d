/**
 * The gateway's configuration: environment variables and an optional JSON file, validated by one zod
 * schema. Every setting has an embedded default, so `tollgate gateway` runs with none at all (SQLite
 * in a data folder, the local ledger emulator, the local stub upstreams). A bad setting stops the
 * start with an error naming it (by its environment variable and its file key); secret values are
 * never echoed.
 *
 * @module
 */
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { hasCode, PaymentError } from 'tollgate'
import { z } from 'zod'
import { modelListSchema } from './inference/models.js'

/** Environment variable of each setting (the JSON file uses the camelCase key). */
export const settingVariables = {
  port: 'PORT',
  host: 'HOST',
  publicBaseUrl: 'PUBLIC_BASE_URL',
  mppRealm: 'MPP_REALM',
  payTo: 'PAY_TO',
  operatorKey: 'OPERATOR_KEY',
  challengeSecrets: 'CHALLENGE_SECRETS',
  ledgerUrl: 'LEDGER_URL',
  network: 'NETWORK',
  asset: 'ASSET',
  emulatorLatencyMs: 'EMULATOR_LATENCY_MS',
  emulatorState: 'EMULATOR_STATE',
  emulatorPort: 'EMULATOR_PORT',
  store: 'STORE',
  dataDir: 'DATA_DIR',
  sqliteSynchronous: 'SQLITE_SYNCHRONOUS',
  databaseUrl: 'DATABASE_URL',
  redisUrl: 'REDIS_URL',
  storePrefix: 'STORE_PREFIX',
  upstreams: 'UPSTREAMS',
  inferenceModels: 'INFERENCE_MODELS',
  rateLimitPerMinute: 'RATE_LIMIT_PER_MINUTE',
  attestationNoncePerMinute: 'ATTESTATION_NONCE_PER_MINUTE',
  openMaxTokens: 'OPEN_MAX_TOKENS',
  creditTopUps: 'CREDIT_TOP_UPS',
  databaseSchema: 'DATABASE_SCHEMA',
  maxBodyBytes: 'MAX_BODY_BYTES',
  blobDir: 'BLOB_DIR',
  blobRetentionHours: 'BLOB_RETENTION_HOURS',
  upstreamTimeoutMs: 'UPSTREAM_TIMEOUT_MS',
  ledgerTimeoutMs: 'LEDGER_TIMEOUT_MS',
  shutdownTimeoutMs: 'SHUTDOWN_TIMEOUT_MS',
  refundIntervalMs: 'REFUND_INTERVAL_MS',
  claimLeaseMs: 'CLAIM_LEASE_MS',
  serveLeaseMs: 'SERVE_LEASE_MS',
  leaseSweepIntervalMs: 'LEASE_SWEEP_INTERVAL_MS',
  leaseSweepGraceMs: 'LEASE_SWEEP_GRACE_MS',
  trustProxy: 'TRUST_PROXY',
  escrowPackage: 'ESCROW_PACKAGE',
  escrowConfig: 'ESCROW_CONFIG',
  sessions: 'SESSIONS',
  channelPackage: 'CHANNEL_PACKAGE',
  channelRegistry: 'CHANNEL_REGISTRY',
  sessionSettleAmount: 'SESSION_SETTLE_AMOUNT',
  sessionSettleIntervalMs: 'SESSION_SETTLE_INTERVAL_MS',
  sessionSweepIntervalMs: 'SESSION_SWEEP_INTERVAL_MS',
  sessionUnitWindow: 'SESSION_UNIT_WINDOW',
  reviewMinValue: 'REVIEW_MIN_VALUE',
  corsOrigins: 'CORS_ORIGINS',
  agentRegistryPackage: 'AGENT_REGISTRY_PACKAGE',
  listingAllowPrivateNetwork: 'LISTING_ALLOW_PRIVATE_NETWORK',
  agentPreparePerMinute: 'AGENT_PREPARE_PER_MINUTE',
  maxOutstandingNonces: 'MAX_OUTSTANDING_NONCES',
  reprobeIntervalMs: 'REPROBE_INTERVAL_MS',
  reprobeJitterMs: 'REPROBE_JITTER_MS',
  reprobeConcurrency: 'REPROBE_CONCURRENCY',
  reprobeCheckMs: 'REPROBE_CHECK_MS',
  logLevel: 'LOG_LEVEL',
  confidentialModelPrefix: 'CONFIDENTIAL_MODEL_PREFIX',
  enclaveFault: 'ENCLAVE_FAULT',
  receiptAnchorPackage: 'RECEIPT_ANCHOR_PACKAGE',
} as const

/** Settings whose values are secrets: never printed, never logged. */
export const secretSettings = [
  'operatorKey',
  'challengeSecrets',
  'databaseUrl',
  'redisUrl',
] as const

/** Environment variable prefix of an upstream base URL override: `UPSTREAM_URL_OPENAI=…`. */
export const upstreamUrlPrefix = 'UPSTREAM_URL_'

/** Provider credential variables: any `*_API_KEY` or `*_KEY` named by the catalog (e.g. `FAL_KEY`). */
const credentialName = /^[A-Z][A-Z0-9_]*_(API_)?KEY$/

const integer = (min: number, max: number) => z.coerce.number().int().min(min).max(max)
const boolFromText = z.union([
  z.boolean(),
  z
    .enum(['1', 'true', 'yes', 'on', '0', 'false', 'no', 'off'])
    .transform((v) => ['1', 'true', 'yes', 'on'].includes(v)),
])
const httpUrl = z.url({ protocol: /^https?$/ }).max(2048)

/** The configuration schema (the single source of truth for settings and defaults). */
export const gatewayConfigSchema = z
  .object({
    /** Port to listen on. Default 4020 (`0` = any free port). */
    port: integer(0, 65_535).default(4020),
    /** Interface to listen on. Default `127.0.0.1` (use `0.0.0.0` behind a proxy or in a container). */
    host: z.string().min(1).max(255).default('127.0.0.1'),
    /** Public base URL buyers reach (bound into every challenge). Default `http://<host>:<port>`. */
    publicBaseUrl: httpUrl.optional(),
    /**
     * The MPP `realm` of every challenge (bound into its id and the buyer's proof). Default: the
     * host name of the public base URL, without the port (what mppx expects).
     */
    mppRealm: z
      .string()
      .regex(/^[A-Za-z0-9.:[\]-]{1,253}$/, 'must be a host name')
      .optional(),
    /** Recipient address of every payment. Default: the operator key's address. */
    payTo: z
      .string()
      .regex(/^0x[0-9a-fA-F]{1,64}$/, 'must be a 0x-prefixed Sui address')
      .optional(),
    /** The operator's secret key (`suiprivkey1…`) that pays refunds. Default on the emulator: a fresh funded key. */
    operatorKey: z
      .string()
      .regex(/^suiprivkey1[0-9a-z]+$/, 'must be a bech32 Sui private key (suiprivkey1…)')
      .optional(),
    /** Challenge HMAC secrets, comma-separated in the environment, each ≥ 32 bytes; the first signs. */
    challengeSecrets: z
      .union([z.string(), z.array(z.string())])
      .transform((v) =>
        (typeof v === 'string' ? v.split(',') : v).map((s) => s.trim()).filter((s) => s !== ''),
      )
      .pipe(z.array(z.string().min(32, 'each secret must be at least 32 bytes')).max(8))
      .optional(),
    /** Full-node gRPC(-web) URL. Unset: the embedded ledger emulator on its own loopback port. */
    ledgerUrl: httpUrl.optional(),
    /** Network id. Default `sui:mainnet`. */
    network: z
      .string()
      .regex(/^sui:[a-z0-9-]{1,32}$/, 'must look like sui:mainnet')
      .default('sui:mainnet'),
    /** USDC coin type. Default the native USDC of the network. */
    asset: z.string().min(3).max(256).optional(),
    /** Settlement latency of the embedded emulator, in ms. Default 400 (like the real chain). */
    emulatorLatencyMs: integer(0, 60_000).default(400),
    /** Snapshot file of the embedded emulator (balances survive restarts). Default: in memory. */
    emulatorState: z.string().min(1).optional(),
    /**
     * Port of the embedded ledger on 127.0.0.1. A `tollgate ledger` already listening there is
     * joined (one local ledger for the gateway and the wallet); when something else holds the port,
     * another is picked and `/healthz` says so. Default: 9123 for `tollgate gateway` (the port of
     * `tollgate ledger`), 0 (any free port) for `startGateway()`.
     */
    emulatorPort: integer(0, 65_535).optional(),
    /** Payment store: `auto` (PostgreSQL if `DATABASE_URL`, else Redis if `REDIS_URL`, else SQLite). */
    store: z.enum(['auto', 'sqlite', 'postgres', 'redis', 'memory']).default('auto'),
    /** Data folder (SQLite file, blobs). Default `.data/gateway`. */
    dataDir: z.string().min(1).default('.data/gateway'),
    /**
     * When the SQLite store's commits reach the disk: `normal` (survives a killed process; a power
     * loss can lose the last commits, never a refund owed or being paid) or `full` (every commit).
     */
    sqliteSynchronous: z.enum(['normal', 'full']).default('normal'),
    databaseUrl: z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
      .optional(),
    redisUrl: z
      .string()
      .regex(/^rediss?:\/\//, 'must be a redis:// URL')
      .optional(),
    /** Table name (PostgreSQL, SQLite) or key prefix (Redis) of the payment records. */
    storePrefix: z
      .string()
      .regex(/^[a-z_][a-z0-9_]{0,40}$/, 'must be [a-z_][a-z0-9_]*')
      .default('tollgate_payments'),
    /**
     * `stub`: every provider without an explicit URL goes to the local stub upstreams (the default on
     * the emulator); `real`: the providers' public APIs with the configured keys (default otherwise).
     */
    upstreams: z.enum(['auto', 'stub', 'real']).default('auto'),
    /**
     * Models of the private inference API (`/v1/…` and the keyless `/open/…` route): a JSON array of
     * `{ id, price, contextWindow, privacy, keyless, upstream: { kind, baseUrl, credential, model } }`
     * (docs/inference.md). Default: with stub upstreams, one open model served by a local
     * deterministic model server; otherwise none.
     */
    inferenceModels: modelListSchema.optional(),
    /** Requests per minute per API key (shared through Redis when `REDIS_URL` is set). Default 120. */
    rateLimitPerMinute: integer(1, 1_000_000).default(120),
    /**
     * Fresh-nonce attestations (`GET /v1/aci/attestation?nonce=…`, each costs the enclave a report)
     * per minute per client IP address (shared through Redis when `REDIS_URL` is set). Default 10.
     */
    attestationNoncePerMinute: integer(1, 1_000_000).default(10),
    /** `max_tokens` cap of the keyless `/open/…` chat route (sent when the buyer gives none). Default 4096. */
    openMaxTokens: integer(1, 1_000_000).default(4096),
    /** Credit packs sold on `POST /v1/credit/<usdc>`: USDC amounts, comma-separated. Default 1,5,20. */
    creditTopUps: z
      .union([z.string(), z.array(z.string())])
      .transform((v) =>
        (typeof v === 'string' ? v.split(',') : v).map((s) => s.trim()).filter((s) => s !== ''),
      )
      .pipe(
        z
          .array(
            z
              .string()
              .regex(/^(?!0+(\.0+)?$)\d{1,4}(\.\d{1,6})?$/, 'each must be a USDC amount like 5'),
          )
          .max(16),
      )
      .default(['1', '5', '20']),
    /** PostgreSQL schema of the relational tables (API keys, credit, usage). Default `public`. */
    databaseSchema: z
      .string()
      .regex(/^[a-z_][a-z0-9_]{0,62}$/, 'must be [a-z_][a-z0-9_]*')
      .default('public'),
    /** Provider keys by the catalog's credential name (`OPENAI_API_KEY`, `FAL_KEY`, …). */
    providerKeys: z
      .record(z.string().regex(credentialName), z.string().min(1).max(4096))
      .default({}),
    /** Upstream base URL overrides by provider segment (`openai` → `https://…/v1`). */
    upstreamUrls: z.record(z.string().regex(/^[a-z0-9-]+$/), httpUrl).default({}),
    /** Default body size limit of a paid endpoint, bytes. Default 1 MiB (transcription allows more). */
    maxBodyBytes: integer(1024, 256 * 1024 * 1024).default(1024 * 1024),
    /** Blob folder. Default `<dataDir>/blobs`. */
    blobDir: z.string().min(1).optional(),
    /** How long generated media stays available, hours. Default 24. */
    blobRetentionHours: z.coerce
      .number()
      .positive()
      .max(24 * 365)
      .default(24),
    /** Per-attempt upstream timeout override, ms. Default: each family's own. */
    upstreamTimeoutMs: integer(100, 15 * 60_000).optional(),
    /** Per-call ledger timeout, ms. Default 15 000. */
    ledgerTimeoutMs: integer(100, 120_000).default(15_000),
    /** How long shutdown waits for in-flight paid calls, ms. Default 30 000. */
    shutdownTimeoutMs: integer(0, 600_000).default(30_000),
    /** How often the refund worker retries owed refunds, ms. Default 5 000. */
    refundIntervalMs: integer(100, 3_600_000).default(5_000),
    /**
     * The claim lease of a payment being settled, ms: a payment whose process died between claiming
     * it and recording its settlement is claimed afresh (its bytes submitted again, or looked up;
     * settled and served once) by its buyer presenting it again after this, or, `leaseSweepGraceMs`
     * after it, looked up on the ledger by the lease sweeper (executed: refunded; never executed:
     * released). Keep it well above `ledgerTimeoutMs`. Default 300 000.
     */
    claimLeaseMs: integer(1_000, 3_600_000).default(300_000),
    /**
     * The serve lease of a paid call, ms: renewed every third of it while the call runs; a process
     * that dies stops renewing, and its settled payments are served to whoever presents them again
     * after it, or refunded by the lease sweeper. Default 30 000.
     */
    serveLeaseMs: integer(1_000, 3_600_000).default(30_000),
    /** How often the lease sweeper looks for settled payments whose lease lapsed, ms. Default 10 000. */
    leaseSweepIntervalMs: integer(100, 3_600_000).default(10_000),
    /**
     * How long after a lapsed serve lease a payment is left for its buyer to present again (served
     * once) before the sweeper refunds it, ms. Default 10 000 (a buyer told to retry waits ≤ 10 s).
     */
    leaseSweepGraceMs: integer(0, 3_600_000).default(10_000),
    /**
     * Believe `X-Forwarded-Proto`/`-Host`, and take the last `X-Forwarded-For` entry as the client IP
     * of per-IP limits. Default false; only behind a proxy that overwrites or appends them.
     */
    trustProxy: boolFromText.default(false),
    /**
     * Smallest purchase, in USDC, whose review counts in a seller's rating (each counted review
     * weighs by its purchase's value). Default 0.10. Security: lower, and sock-puppet buyers rate
     * a seller for the gas of a dust purchase.
     */
    reviewMinValue: z
      .string()
      .regex(/^[0-9]{1,9}(\.[0-9]{1,6})?$/, 'must be a USDC amount such as 0.10')
      .default('0.10'),
    /** Package of the `escrow` module (jobs at `/v1/jobs`). Default on the emulator: its package. */
    escrowPackage: z
      .string()
      .regex(/^0x[0-9a-fA-F]{1,64}$/, 'must be a 0x-prefixed package address')
      .optional(),
    /** The shared `EscrowConfig` object. Required with `ESCROW_PACKAGE`; default on the emulator. */
    escrowConfig: z
      .string()
      .regex(/^0x[0-9a-fA-F]{1,64}$/, 'must be a 0x-prefixed object id')
      .optional(),
    /**
     * Offer MPP sessions (docs/protocol.md §7) beside one-off payments: per call on the catalog's
     * paid routes, per streamed token on the keyless inference route. Default true; offered only
     * where a channel package is known (below, or the local ledger's) and the operator key is the
     * payee's.
     */
    sessions: boolFromText.default(true),
    /** Package of the `channel` module. Default on the local ledger: its package. */
    channelPackage: z
      .string()
      .regex(/^0x[0-9a-fA-F]{1,64}$/, 'must be a 0x-prefixed package address')
      .optional(),
    /** The shared channel `Registry` object. Required with `CHANNEL_PACKAGE`. */
    channelRegistry: z
      .string()
      .regex(/^0x[0-9a-fA-F]{1,64}$/, 'must be a 0x-prefixed object id')
      .optional(),
    /** Settle a channel when this much (base units) is spent and unsettled. Default 1 USDC. */
    sessionSettleAmount: integer(1, Number.MAX_SAFE_INTEGER).default(1_000_000),
    /** Settle a channel with anything unsettled after this long, ms. Default an hour. */
    sessionSettleIntervalMs: integer(1_000, 86_400_000).default(3_600_000),
    /**
     * How often the settler looks at the open channels (the schedule; a buyer's close request is
     * settled within the grace period), ms. Default 60 000.
     */
    sessionSweepIntervalMs: integer(100, 3_600_000).default(60_000),
    /**
     * How many tokens of a keyless answer paid per token one hold of the channel books pays for
     * (the session method's `unitWindow`). Default 16. `1` makes each token after the first durably
     * spent before it leaves, one write per token; a larger window writes less, and a gateway
     * that dies mid-answer loses at most that many tokens' price (never the buyer's money).
     */
    sessionUnitWindow: integer(1, 10_000).default(16),
    /**
     * Origins whose pages may call the gateway from a browser (CORS): `*` (default: any page; the
     * gateway takes no cookies, a payment is the only credential), a comma-separated list of
     * origins (`https://app.example.com`), or `none` to send no CORS headers at all.
     */
    corsOrigins: z
      .union([z.string(), z.array(z.string())])
      .transform((v) =>
        (typeof v === 'string' ? v.split(',') : v).map((s) => s.trim()).filter((s) => s !== ''),
      )
      .pipe(
        z
          .array(
            z.union([
              z.literal('*'),
              z.literal('none'),
              z
                .string()
                .max(256)
                .regex(
                  /^https?:\/\/[^/\s]+$/,
                  'each origin must be * , none, or scheme://host[:port] with no path',
                ),
            ]),
          )
          .min(1)
          .max(64),
      )
      .default(['*']),
    /**
     * Package of `agent_registry` (listing gate a). Default on the emulator: its package; else the
     * conformance suite's default.
     */
    agentRegistryPackage: z
      .string()
      .regex(/^0x[0-9a-fA-F]{1,64}$/, 'must be a 0x-prefixed package address')
      .optional(),
    /**
     * Let listing probes reach loopback and private addresses (link-local and cloud metadata
     * addresses stay refused). Default false, on the embedded emulator too: only an operator who
     * sets it gets it, and a gateway listening beyond loopback with it on warns at start-up.
     * Security: SSRF; never on a public gateway.
     */
    listingAllowPrivateNetwork: boolFromText.default(false),
    /**
     * Nonces a client IP address may ask for per minute on `POST /v1/agent/endpoint/prepare`
     * (shared through Redis when `REDIS_URL` is set; the address is the last `X-Forwarded-For`
     * entry with `TRUST_PROXY`). Past it, 429 `rate_limited` with `Retry-After`. Default 30.
     */
    agentPreparePerMinute: integer(1, 1_000_000).default(30),
    /**
     * Marketplace nonces outstanding (issued, unused, unexpired) at most, all clients together;
     * past it `prepare` answers 429 until some are used or expire. Expired nonces are deleted.
     * Default 10 000.
     */
    maxOutstandingNonces: integer(1, 10_000_000).default(10_000),
    /** Reserved id prefix of confidential models (served only by an attested enclave). */
    confidentialModelPrefix: z
      .string()
      .regex(/^[a-z][a-z0-9-]{0,30}[/:]$/, 'must be like confidential/')
      .default('confidential/'),
    /**
     * A misbehaviour of the embedded default's simulated enclave, to watch the gateway refuse:
     * `bad-report-signature` (a bad quote), `wrong-nonce`, `stale-report`,
     * `measurement-not-allowed`, `bad-gpu-token`, `unattested-receipt-key`, `tampered-receipt`, `changed-response-bytes`, `model-alias`,
     * `enclave-down`. Default none.
     */
    enclaveFault: z
      .enum([
        'bad-report-signature',
        'wrong-nonce',
        'stale-report',
        'measurement-not-allowed',
        'bad-gpu-token',
        'unattested-receipt-key',
        'tampered-receipt',
        'changed-response-bytes',
        'model-alias',
        'enclave-down',
      ])
      .optional(),
    /** Package of `receipt_anchor` (confidential receipts anchored). Default on the emulator: its package. */
    receiptAnchorPackage: z
      .string()
      .regex(/^0x[0-9a-fA-F]{1,64}$/, 'must be a 0x-prefixed package address')
      .optional(),
    /** Time between two re-probes of one listing, ms (docs/marketplace.md, "Re-probes"). Default one day. */
    reprobeIntervalMs: integer(1_000, 30 * 86_400_000).default(86_400_000),
    /** Random delay added to each listing's next re-probe, up to this many ms. Default 10 minutes. */
    reprobeJitterMs: integer(0, 86_400_000).default(600_000),
    /** Re-probes in flight at once. Default 8. */
    reprobeConcurrency: integer(1, 256).default(8),
    /** How often the gateway looks for due re-probes, ms. Default 60 000. */
    reprobeCheckMs: integer(100, 3_600_000).default(60_000),
    /** pino level. Default `info`. */
    logLevel: z
      .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
      .default('info'),
  })
  .strict()

/** The validated configuration. */
export type GatewayConfig = z.output<typeof gatewayConfigSchema>
/** Configuration as written (file, or an object in code); every key optional. */
export type GatewayConfigInput = z.input<typeof gatewayConfigSchema>

/**
 * A configuration that does not validate: a {@link PaymentError} with code `invalid_config` whose
 * `details.problems` holds one `PORT (port): must be …` per bad setting; the message names every
 * bad setting, never its value. Recognise it with {@link configProblems}.
 *
 * @example
 * ```ts
 * throw configError(['PORT (port): must be a whole number from 0 to 65535'])
 * ```
 */
export function configError(problems: readonly string[]): PaymentError {
  return new PaymentError(
    'invalid_config',
    `Invalid gateway configuration:\n  ${problems.join('\n  ')}`,
    { details: { problems: [...problems] } },
  )
}

/**
 * The bad settings of a gateway configuration error (see {@link configError}); `undefined` for any
 * other error, an `invalid_config` of the core without a list of settings included.
 *
 * @example
 * ```ts
 * const problems = configProblems(error)
 * if (problems !== undefined) console.error(problems.join('; '))
 * ```
 */
export function configProblems(error: unknown): readonly string[] | undefined {
  if (!hasCode(error, 'invalid_config')) return undefined
  const problems = error.details.problems
  return Array.isArray(problems) && problems.every((problem) => typeof problem === 'string')
    ? (problems as string[])
    : undefined
}

/** Options of {@link loadConfig}. */
export type LoadConfigOptions = {
  /** Environment. Default `process.env`. */
  env?: Readonly<Record<string, string | undefined>> | undefined
  /** A JSON file of settings (camelCase keys); environment variables override it. Default `TOLLGATE_GATEWAY_CONFIG`. */
  file?: string | undefined
  /** Settings that override both (e.g. `--port`). */
  overrides?: GatewayConfigInput | undefined
}

/**
 * Reads and validates the configuration. Throws {@link configError} (`invalid_config`) naming each
 * bad setting.
 *
 * @example
 * ```ts
 * const config = loadConfig({ overrides: { port: 8080 } })
 * ```
 */
export function loadConfig(options: LoadConfigOptions = {}): GatewayConfig {
  const env = options.env ?? process.env
  const filePath = options.file ?? nonEmpty(env.TOLLGATE_GATEWAY_CONFIG)
  let fromFile: Record<string, unknown> = {}
  if (filePath !== undefined) fromFile = readConfigFile(filePath)
  const fromEnv: Record<string, unknown> = {}
  for (const [key, variable] of Object.entries(settingVariables)) {
    const value = nonEmpty(env[variable])
    if (value !== undefined) fromEnv[key] = value
  }
  const providerKeys: Record<string, string> = {}
  const upstreamUrls: Record<string, string> = {}
  for (const [name, raw] of Object.entries(env)) {
    const value = nonEmpty(raw)
    if (value === undefined) continue
    if (name.startsWith(upstreamUrlPrefix)) {
      upstreamUrls[name.slice(upstreamUrlPrefix.length).toLowerCase().replaceAll('_', '-')] = value
    } else if (credentialName.test(name) && name !== 'OPERATOR_KEY') {
      providerKeys[name] = value
    }
  }
  const merged: Record<string, unknown> = {
    ...fromFile,
    ...fromEnv,
    providerKeys: { ...asRecord(fromFile.providerKeys), ...providerKeys },
    upstreamUrls: { ...asRecord(fromFile.upstreamUrls), ...upstreamUrls },
    ...(options.overrides ?? {}),
  }
  return parseConfig(merged)
}

/** Validates a configuration object (camelCase keys). Throws {@link configError} (`invalid_config`). */
export function parseConfig(input: unknown): GatewayConfig {
  const result = gatewayConfigSchema.safeParse(input)
  if (result.success) return result.data
  const problems = result.error.issues.map((issue) => {
    const key = issue.path.map(String).join('.')
    const top = String(issue.path[0] ?? '')
    const variable =
      top === 'providerKeys'
        ? String(issue.path[1] ?? 'provider key')
        : top === 'upstreamUrls'
          ? `${upstreamUrlPrefix}${String(issue.path[1] ?? '').toUpperCase()}`
          : (settingVariables as Record<string, string>)[top]
    const name = variable === undefined ? key || '(config)' : `${variable} (${key})`
    const message =
      issue.code === 'unrecognized_keys'
        ? `unknown setting(s) ${issue.keys.join(', ')}`
        : issue.message
    return `${name}: ${message}`
  })
  throw configError(problems)
}

function readConfigFile(path: string): Record<string, unknown> {
  let text: string
  try {
    text = readFileSync(resolve(path), 'utf8')
  } catch {
    throw configError([`TOLLGATE_GATEWAY_CONFIG: cannot read the file ${path}`])
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw configError([`TOLLGATE_GATEWAY_CONFIG: ${path} is not valid JSON`])
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw configError([`TOLLGATE_GATEWAY_CONFIG: ${path} must hold a JSON object`])
  }
  return value as Record<string, unknown>
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value
}

function asRecord(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {}
}

/**
 * The configuration with secrets replaced by `[set]` (for `tollgate gateway` to print, and logs).
 */
export function describeConfig(config: GatewayConfig): Record<string, unknown> {
  const shown: Record<string, unknown> = { ...config }
  for (const key of secretSettings) if (shown[key] !== undefined) shown[key] = '[set]'
  shown.providerKeys = Object.keys(config.providerKeys)
  return shown
}
