/**
 * The one options object every framework adapter takes (`tollgate/express`, `tollgate/koa`,
 * `tollgate/hono`), turned into the engine, the compiled route table and the refund worker. The
 * adapters only translate requests and responses; everything they share is here.
 *
 * @module
 */
import { defaultMaxBodyBytes } from '../body.js'
import type { ChallengeSecret } from '../challenge.js'
import { ledgerClaimResolver } from '../claimResolver.js'
import { createRecent, type Recent } from '../internal/recent.js'
import { createLeaseSweeper } from '../leaseSweeper.js'
import { createLedger } from '../ledger/index.js'
import { createRefunder } from '../refunds.js'
import { compileRoutes, matchRoute } from '../routes.js'
import { checkPaywallOptions, checkRoutePrice } from './options.js'
import { createPaywall } from './paywall.js'
import { logSellerEvent } from './sellerLog.js'
import type {
  PaidRequestInfo,
  SellerEvent,
  SellerOptions,
  SellerPaywall,
  SellerRuntime,
} from './sellerTypes.js'
import type { PaidDecision, PaidRoute, PaywallOptions } from './types.js'

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
    // Payments left claimed or pending by a process that died: looked up on this seller's ledger.
    resolve: ledgerClaimResolver(ledger, options),
    onEvent: observe,
    now: options.now,
  })
  if (sweep !== false) sweeper.start(sweep?.intervalMs)
  if (options.refundSigner !== undefined) refunder.start(options.refundIntervalMs)
  const secrets: readonly ChallengeSecret[] =
    typeof options.secrets === 'string' || options.secrets instanceof Uint8Array
      ? [options.secrets]
      : (options.secrets as readonly ChallengeSecret[])
  // The engine's options are the seller's, less what only the seller layer reads.
  const {
    routes: _routes,
    caseSensitive: _caseSensitive,
    refundSigner: _refundSigner,
    refundIntervalMs: _refundIntervalMs,
    leaseSweep: _leaseSweep,
    logger: _logger,
    ...shared
  } = options
  const engineOptions: PaywallOptions = {
    ...shared,
    ledger,
    secrets,
    refunder: options.refundSigner === undefined ? undefined : refunder,
    onEvent: observe,
  }
  const engine = createPaywall(engineOptions)
  const defaultLimit = options.maxBodyBytes ?? defaultMaxBodyBytes
  /**
   * Recent answers by method, then URL (no key is built per request: the URL string is the key).
   * Methods come from clients: at most 32 spellings are remembered, 4 096 URLs of up to 256
   * characters each.
   */
  const matches = createRecent<string, Recent<string, PaidRoute | null>>({ max: 32 })
  return {
    engine,
    routes,
    refunder,
    sweeper,
    match(method, rawUrl) {
      const byUrl =
        matches.get(method) ??
        matches.remember(method, createRecent({ max: 4096, maxKeyLength: 256 }))
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

/**
 * What a paid handler reads of its decision ({@link PaidRequestInfo}), as every mount hands it:
 * `res.locals.tollgate` (Express), `ctx.state.tollgate` (Koa), `c.get('tollgate')` (Hono).
 *
 * @example
 * ```ts
 * c.set('tollgate', paidInfo(decision))
 * ```
 */
export function paidInfo(decision: PaidDecision): PaidRequestInfo {
  return {
    payment: decision.payment,
    body: decision.body,
    commit: decision.commit,
    durable: async () => (await decision.ready()) === undefined,
  }
}
