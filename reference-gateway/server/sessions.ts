/**
 * The gateway's MPP sessions (docs/protocol.md §7): the channel package and registry (`CHANNEL_PACKAGE`,
 * `CHANNEL_REGISTRY`; on the local ledger its own), the channel books beside the payment store (the
 * same SQLite file, PostgreSQL database or Redis, so every process of the gateway shares them), the
 * two session methods — per call on the catalog's paid routes, per streamed token on the keyless
 * inference route — and the settler that settles what was spent on a schedule and when a buyer asks
 * to close. Sessions need the payee's key: the operator key when `PAY_TO` is its address.
 *
 * @module
 */
import { SuiGrpcClient } from '@mysten/sui/grpc'
import { Methods, Session } from 'tollgate'
import { configError, type GatewayConfig } from '../config.js'
import { type ModelConfig, prepareModels } from '../inference/models.js'
import { outputTokenPrice } from '../inference/pricing.js'
import type { StoreLocation } from '../storeLocation.js'
import type { GatewayLedger } from './ledger.js'
import type { Cleanups } from './shutdown.js'

/** The gateway's sessions, when it offers them. */
export type GatewaySessions = {
  readonly status: 'on'
  /** Per call, at the route's price: the catalog's paid routes. */
  readonly perCall: Methods.SessionMethod
  /** Per streamed token, at `tokenPrice`: the keyless inference route. */
  readonly perToken: Methods.SessionMethod
  /** The price of one streamed token of the keyless route, base units. */
  readonly tokenPrice: bigint
  readonly store: Session.ChannelStore
  readonly settler: Session.SessionSettler
  /** The package and registry offered. */
  readonly package: string
  readonly registry: string
}

/** Why the gateway offers no sessions (logged once at start). */
export type NoSessions = { readonly status: 'off'; readonly reason: string }

/**
 * Opens the gateway's sessions, or says why there are none. A `CHANNEL_PACKAGE` without its
 * `CHANNEL_REGISTRY` (or the other way round) stops the start.
 *
 * @example
 * ```ts
 * const sessions = await openGatewaySessions({ config, ledger, location, tokenPrice, cleanups })
 * if (sessions.status === 'off') logger.info({ event: 'sessions_off', reason: sessions.reason })
 * ```
 */
export async function openGatewaySessions(input: {
  config: GatewayConfig
  ledger: Pick<GatewayLedger, 'local' | 'operator' | 'payTo' | 'ledgerUrl'>
  location: Exclude<StoreLocation, { kind: 'missing' }>
  tokenPrice: bigint
  cleanups: Cleanups
  /** Told of each settlement and cooperative close that paid the gateway (its sales). */
  onSettled?: ((settlement: Session.ChannelSettlement) => void) | undefined
}): Promise<GatewaySessions | NoSessions> {
  const { config, ledger, location, cleanups } = input
  if ((config.channelPackage === undefined) !== (config.channelRegistry === undefined)) {
    throw configError([
      'CHANNEL_PACKAGE (channelPackage) and CHANNEL_REGISTRY (channelRegistry): set both or neither',
    ])
  }
  if (!config.sessions) return { status: 'off', reason: 'SESSIONS=false' }
  const pkg = config.channelPackage ?? ledger.local?.modulesPackage
  const registry = config.channelRegistry ?? ledger.local?.channel?.registry
  if (pkg === undefined || registry === undefined) {
    return { status: 'off', reason: 'no CHANNEL_PACKAGE and CHANNEL_REGISTRY on this ledger' }
  }
  const signer = ledger.operator
  if (signer === undefined || signer.toSuiAddress() !== ledger.payTo) {
    return {
      status: 'off',
      reason: 'sessions need the payee’s key: OPERATOR_KEY must be the key of PAY_TO',
    }
  }
  const client = new SuiGrpcClient({
    network: (config.network.split(':')[1] ?? 'mainnet') as 'mainnet',
    baseUrl: ledger.ledgerUrl,
  })
  const store = await openChannelStore(location, cleanups)
  const common = {
    client,
    signer,
    package: pkg,
    registry,
    store,
    network: config.network.replace(/^sui:/, ''),
    onSettled: input.onSettled,
  }
  const perCall = Methods.createSessionMethod(common)
  const perToken = Methods.createSessionMethod({
    ...common,
    unitType: 'token',
    unitPrice: input.tokenPrice,
    unitWindow: config.sessionUnitWindow,
  })
  const settler = Session.createSessionSettler({
    client,
    signer,
    package: pkg,
    store,
    schedule: {
      amount: BigInt(config.sessionSettleAmount),
      intervalMs: config.sessionSettleIntervalMs,
    },
    onSettled: input.onSettled,
  })
  settler.start(config.sessionSweepIntervalMs)
  cleanups.push(() => settler.stop())
  return {
    status: 'on',
    perCall,
    perToken,
    tokenPrice: input.tokenPrice,
    store,
    settler,
    package: pkg,
    registry,
  }
}

/** The channel books beside the payment store: its SQLite file, PostgreSQL database or Redis. */
async function openChannelStore(
  location: Exclude<StoreLocation, { kind: 'missing' }>,
  cleanups: Cleanups,
): Promise<Session.ChannelStore> {
  switch (location.kind) {
    case 'memory':
      return Session.createMemoryChannelStore()
    case 'sqlite': {
      const { openSqliteDatabase } = await import('tollgate/stores/sqlite')
      const database = openSqliteDatabase(location.file)
      cleanups.push(() => database.close())
      return Session.createSqliteChannelStore({ database, ...tablesOf(location.table) })
    }
    case 'postgres': {
      const { default: pg } = await import('pg')
      // Pipelined: a channel's batch of writes goes to PostgreSQL in one round trip.
      const pool = new pg.Pool({ connectionString: location.url, max: 5, pipeline: true })
      cleanups.push(() => pool.end())
      return Session.createPostgresChannelStore({ pool, ...tablesOf(location.table) })
    }
    case 'redis': {
      const { Redis } = await import('ioredis')
      const { createRedisChannelStore } = await import('tollgate/stores/redis')
      const client = new Redis(location.url, { maxRetriesPerRequest: 1 })
      cleanups.push(() => client.quit())
      return createRedisChannelStore({ client, keyPrefix: location.keyPrefix })
    }
  }
}

/** The channel tables named after the payment table (`tollgate_payments_channels`, …). */
function tablesOf(table: string): Session.ChannelTables {
  return {
    channels: `${table}_channels`,
    holds: `${table}_channel_holds`,
    vouchers: `${table}_channel_vouchers`,
  }
}

/**
 * The price of one streamed token on the keyless route's session: the highest output-token price
 * of the models the route serves (rounded up to a base unit; one price for the route, as its 402
 * states one), 1 base unit when it serves none.
 */
export function keylessTokenPrice(configured: readonly ModelConfig[]): bigint {
  let price = 1n
  for (const model of prepareModels(configured)) {
    if (!model.keyless) continue
    const perToken = outputTokenPrice(model)
    if (perToken > price) price = perToken
  }
  return price
}
