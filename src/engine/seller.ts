/**
 * The one options object every framework adapter takes (`tollgate/express`, `tollgate/koa`,
 * `tollgate/hono`), turned into the engine, the compiled route table and the refund worker. The
 * adapters only translate requests and responses; everything they share is here.
 *
 * @module
 */
import type { Signer } from '@mysten/sui/cryptography'
import { defaultMaxBodyBytes } from '../body.js'
import type { ChallengeSecret } from '../challenge.js'
import { Recent } from '../internal/recent.js'
import {
  createLeaseSweeper,
  type LeaseSweepEvent,
  type LeaseSweeper,
  type LeaseSweeperOptions,
} from '../leaseSweeper.js'
import { createLedger } from '../ledger/index.js'
import type { Ledger } from '../ledger/types.js'
import type { PriceInput } from '../money.js'
import type { Offer } from '../negotiate.js'
import type { PrecheckOptions } from '../precheck.js'
import { createRefunder, type RefundEvent, type Refunder } from '../refunds.js'
import { type CompiledRoutes, compileRoutes, matchRoute, type RouteTable } from '../routes.js'
import type { PaymentStore } from '../stores/types.js'
import { checkPaywallOptions, checkRoutePrice } from './options.js'
import {
  createPaywall,
  type PaidDecision,
  type PaidRoute,
  type PaymentInfo,
  type Paywall,
  type PaywallEvent,
  type PaywallOptions,
} from './paywall.js'
import { logSellerEvent } from './sellerLog.js'

/** Per-route options of `pay(price, routeOptions)`: everything of a {@link PaidRoute} but the price. */
export type PayRouteOptions = Omit<PaidRoute, 'price'>

/** A pino-compatible logger (only these three methods are used). */
export type SellerLogger = {
  info(object: Record<string, unknown>, message?: string): void
  warn(object: Record<string, unknown>, message?: string): void
  error(object: Record<string, unknown>, message?: string): void
}

/** Everything the seller side reports, for logs and metrics. */
export type SellerEvent = PaywallEvent | RefundEvent | LeaseSweepEvent

/** The options of every adapter's `paywall(options)`. */
export type SellerOptions = {
  /**
   * Priced routes: `'POST /v1/things/:id'` → `'0.02'` or a {@link PaidRoute}. Matched on the
   * normalised path (see `normalizePath`); other requests pass through untouched. Optional when
   * every priced route uses the per-route `pay()` form.
   */
  routes?: RouteTable | undefined
  /** Match route paths case-sensitively. Default `false` (a superset of every framework's rule). */
  caseSensitive?: boolean | undefined
  /** The seller's Sui address that receives payments. */
  payTo: string
  /** Network. Default `sui:mainnet`. */
  network?: string | undefined
  /** Coin type. Default the USDC of `network`. */
  asset?: string | undefined
  /**
   * The ledger: a full-node gRPC URL (`https://fullnode.mainnet.sui.io:443`, or the emulator's from
   * `tollgate/testing`), or a `Ledger` made with `createLedger`.
   */
  ledger: string | Ledger
  /**
   * Where payments are recorded (replay protection, refunds). Required. Tests: `createMemoryStore()`
   * from `tollgate`; production: `createSqliteStore()` from `tollgate/stores/sqlite` (one machine)
   * or the Redis/PostgreSQL stores (several processes). A memory store forgets payments on restart.
   */
  store: PaymentStore
  /**
   * Challenge HMAC secret(s), each ≥ 32 bytes; the first signs, all verify (rotation). Security:
   * anyone holding one can mint challenges; keep them out of logs and source control.
   */
  secrets: ChallengeSecret | readonly ChallengeSecret[]
  /** MPP realm. Default the host name of the resource URL (without the port, as mppx expects). */
  realm?: string | undefined
  /** Public base URL used for the `resource` buyers pay for (recommended in production). */
  publicBaseUrl?: string | undefined
  /**
   * Believe `X-Forwarded-Proto`/`-Host` for `resource`. Default `false`. Security: only behind a
   * proxy that overwrites them; otherwise a client chooses the URL bound into its challenge.
   */
  trustProxy?: boolean | undefined
  /** Dialects offered: `both` (default), `x402` or `mpp`. */
  offer?: Offer | undefined
  /**
   * The operator key that pays refunds of failed paid calls (usually the `payTo` key). Without it,
   * refunds stay owed and are listed by `refunder.owed()` / `tollgate refunds`. Security: it holds
   * the seller's funds; it is only used to sign and never logged.
   */
  refundSigner?: Signer | undefined
  /** How often the refund worker retries owed refunds, in ms. Default 5 000 (with a signer). */
  refundIntervalMs?: number | undefined
  /**
   * The lease sweeper (see `createLeaseSweeper`): a paid call whose process died after settling and
   * before answering is owed back once its serve lease lapsed and `graceMs` (default 10 000) passed
   * without its buyer presenting it again; it runs every `intervalMs` (default 10 000). With the
   * store's default 30 s lease, such a payment is owed back within 50 s. `false` turns it off
   * (another process sharing the store runs it). Safe to run in every process sharing a store.
   * `delivered` tells it a payment whose work is known done (see `LeaseSweeperOptions.delivered`):
   * marked served, not refunded.
   */
  leaseSweep?:
    | {
        intervalMs?: number | undefined
        graceMs?: number | undefined
        delivered?: LeaseSweeperOptions['delivered']
      }
    | false
    | undefined
  /** Default body size limit in bytes. Default 1 MiB. */
  maxBodyBytes?: number | undefined
  /** Offline pre-check options (transaction forms, size). */
  precheck?: PrecheckOptions | undefined
  /** Observes every payment and refund event. Errors thrown here are ignored. */
  onEvent?: ((event: SellerEvent) => void) | undefined
  /** A pino-compatible logger: payment events are logged (no secrets, no headers). */
  logger?: SellerLogger | undefined
  /** Clock in ms (tests). Default `Date.now`. */
  now?: (() => number) | undefined
}

/** What a handler of a paid request can read (Express `res.locals.tollgate`, Koa `ctx.state.tollgate`, Hono `c.get('tollgate')`). */
export type PaidRequestInfo = {
  /** The settled payment. */
  payment: PaymentInfo
  /** The validated body when the route has a body schema; otherwise `undefined` (read it yourself). */
  body: unknown
  /**
   * Marks the point where the paid work starts, on a route with `commit: 'manual'` (elsewhere the
   * work started when the handler was called, and this returns `true`). Returns `true` when the
   * work may go ahead — a buyer who hangs up from now on was served — and `false` when the buyer
   * already hung up: the payment is being refunded, so do not do the work.
   *
   * @example
   * ```ts
   * if (!res.locals.tollgate.commit()) return // the buyer left before the work started: refunded
   * await mailer.send(message)
   * ```
   */
  commit(): boolean
}

/** The configured seller side, shared by the adapters. */
export type SellerPaywall = {
  /** The engine. */
  engine: Paywall
  /** The compiled route table. */
  routes: CompiledRoutes
  /** The refund worker (pays refunds when `refundSigner` is set; lists them otherwise). */
  refunder: Refunder
  /** The lease sweeper (running unless `leaseSweep: false`). */
  sweeper: LeaseSweeper
  /** The priced route for a request, or `undefined` (unpriced: pass it through untouched). */
  match(method: string, rawUrl: string): PaidRoute | undefined
  /** A route for the per-route `pay(price, routeOptions)` form. */
  route(price: PriceInput, routeOptions?: PayRouteOptions): PaidRoute
  /** The body size limit of a route. */
  maxBodyBytes(route: PaidRoute): number
  /** Stops the refund worker's and the lease sweeper's timers (waits for runs in progress). */
  close(): Promise<void>
}

/** What the runtime an adapter runs on provides (the Node adapters pass Node's transport). */
export type SellerRuntime = {
  /**
   * The `fetch` of a ledger given as a URL. Default `globalThis.fetch`; the Express and Koa
   * adapters pass the keep-alive Node transport.
   */
  ledgerFetch?: typeof fetch | undefined
}

/**
 * Builds the seller side from the adapters' one options object. Adapters call this; sellers use
 * `paywall(options)` from `tollgate/express`, `tollgate/koa` or `tollgate/hono`.
 *
 * @param options - the seller's options.
 * @param runtime - what the adapter's runtime provides; default nothing (Web-standard globals).
 * @throws {PaymentError} at once, before anything starts, for options no payment could pass:
 *   `invalid_config` (missing or malformed `payTo`, `network`, `asset`, `ledger`, `store`; see
 *   `details.option`), `invalid_secret` (no secret, or one under 32 bytes), `invalid_amount` (a
 *   route price that is not a positive amount; `details.route` names it).
 *
 * @example
 * const seller = createSellerPaywall({ routes: { 'POST /v1/answer': '0.02' }, payTo, ledger, store, secrets })
 * const route = seller.match('POST', '/v1/answer') // → { price: '0.02' }
 */
export function createSellerPaywall(
  options: SellerOptions,
  runtime: SellerRuntime = {},
): SellerPaywall {
  // A paywall that cannot take a payment refuses to exist (not a 500 on every priced request).
  checkPaywallOptions(options)
  const routes = compileRoutes(options.routes ?? {}, { caseSensitive: options.caseSensitive })
  for (const compiled of routes.routes) checkRoutePrice(compiled.route, compiled.key)
  const ledger =
    typeof options.ledger === 'string'
      ? createLedger({ url: options.ledger, fetch: runtime.ledgerFetch })
      : options.ledger
  const logger = options.logger
  const observe = (event: SellerEvent) => {
    try {
      options.onEvent?.(event)
    } catch {
      // Observers must not break payments.
    }
    if (logger !== undefined) logSellerEvent(logger, event)
  }
  const refunder = createRefunder({
    store: options.store,
    ledger,
    signer: options.refundSigner,
    onEvent: observe,
  })
  const sweep = options.leaseSweep
  const sweeper = createLeaseSweeper({
    store: options.store,
    refunder: options.refundSigner === undefined ? undefined : refunder,
    graceMs: sweep === false ? undefined : sweep?.graceMs,
    delivered: sweep === false ? undefined : sweep?.delivered,
    onEvent: observe,
    now: options.now,
  })
  if (sweep !== false) sweeper.start(sweep?.intervalMs)
  if (options.refundSigner !== undefined) refunder.start(options.refundIntervalMs)
  const secrets: readonly ChallengeSecret[] =
    typeof options.secrets === 'string' || options.secrets instanceof Uint8Array
      ? [options.secrets]
      : (options.secrets as readonly ChallengeSecret[])
  const engineOptions: PaywallOptions = {
    payTo: options.payTo,
    ledger,
    store: options.store,
    secrets,
    network: options.network,
    asset: options.asset,
    realm: options.realm,
    publicBaseUrl: options.publicBaseUrl,
    trustProxy: options.trustProxy,
    offer: options.offer,
    precheck: options.precheck,
    maxBodyBytes: options.maxBodyBytes,
    refunder: options.refundSigner === undefined ? undefined : refunder,
    onEvent: observe,
    now: options.now,
  }
  const engine = createPaywall(engineOptions)
  const defaultLimit = options.maxBodyBytes ?? defaultMaxBodyBytes
  /**
   * Recent answers by method, then URL (no key is built per request: the URL string is the key).
   * Methods come from clients: at most 32 spellings are remembered, 4 096 URLs of up to 256
   * characters each.
   */
  const matches = new Recent<string, Recent<string, PaidRoute | null>>(32)
  return {
    engine,
    routes,
    refunder,
    sweeper,
    match(method, rawUrl) {
      const byUrl = matches.get(method) ?? matches.remember(method, new Recent(4096, 256))
      // `null` is a remembered "unpriced": only `undefined` means not seen.
      let found = byUrl.get(rawUrl)
      if (found === undefined)
        found = byUrl.remember(rawUrl, matchRoute(routes, method, rawUrl) ?? null)
      return found ?? undefined
    },
    route(price, routeOptions = {}) {
      const route = { ...routeOptions, price }
      checkRoutePrice(route)
      return route
    },
    maxBodyBytes: (route) => route.maxBodyBytes ?? defaultLimit,
    close: async () => {
      await Promise.all([refunder.stop(), sweeper.stop()])
    },
  }
}

/** Adds the outcome to a paid decision's headers only when the call is not a failure. */
export function successHeaders(
  decision: PaidDecision,
  status: number,
): Readonly<Record<string, string>> {
  return decision.isFailure({ status }) ? {} : decision.headersFor(status)
}
