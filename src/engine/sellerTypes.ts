/**
 * The seller layer's types: the options every framework adapter takes, what a paid handler reads,
 * and the configured seller side the adapters share. {@link SellerOptions} is the engine's
 * {@link PaywallOptions} plus what the seller layer adds, so each shared option is declared once.
 *
 * @module
 */
import type { Signer } from '@mysten/sui/cryptography'
import type { ChallengeSecret } from '../challenge.js'
import type { LeaseSweepEvent, LeaseSweeper, LeaseSweeperOptions } from '../leaseSweeper.js'
import type { Ledger } from '../ledger/types.js'
import type { PriceInput } from '../money.js'
import type { RefundEvent, Refunder } from '../refunds.js'
import type { CompiledRoutes, RouteTable } from '../routes.js'
import type { PaidRoute, PaymentInfo, Paywall, PaywallEvent, PaywallOptions } from './types.js'

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

/**
 * The options of every adapter's `paywall(options)`: the engine's {@link PaywallOptions}, with the
 * ledger given as a URL or a `Ledger`, one secret or a list, and what the seller layer adds — the
 * route table, the refund worker, the lease sweeper and a logger. The seller layer makes the
 * engine's `refunder` and takes no `onSettleStep`.
 */
export type SellerOptions = Omit<
  PaywallOptions,
  'ledger' | 'secrets' | 'refunder' | 'onEvent' | 'onSettleStep'
> & {
  /**
   * Priced routes: `'POST /v1/things/:id'` → `'0.02'` or a {@link PaidRoute}. Matched on the
   * normalised path (see `normalizePath`); other requests pass through untouched. Optional when
   * every priced route uses the per-route `pay()` form.
   */
  routes?: RouteTable | undefined
  /** Match route paths case-sensitively. Default `false` (a superset of every framework's rule). */
  caseSensitive?: boolean | undefined
  /**
   * The ledger: a full-node gRPC URL (`https://fullnode.mainnet.sui.io:443`, or the emulator's from
   * `tollgate/testing`), or a `Ledger` made with `createLedger`.
   */
  ledger: string | Ledger
  /**
   * Challenge HMAC secret(s), each ≥ 32 bytes; the first signs, all verify (rotation). Security:
   * anyone holding one can mint challenges; keep them out of logs and source control.
   */
  secrets: ChallengeSecret | readonly ChallengeSecret[]
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
   * marked served, not refunded. It also looks up on the ledger the payments a dead process left
   * `claimed` (claim lease lapsed, plus `graceMs`) or `pending` (for 60 s): one that executed is owed
   * back, a lapsed claim the ledger never saw is released (see `LeaseSweeperOptions.resolve`).
   */
  leaseSweep?:
    | {
        intervalMs?: number | undefined
        graceMs?: number | undefined
        delivered?: LeaseSweeperOptions['delivered']
      }
    | false
    | undefined
  /** Observes every payment and refund event. Errors thrown here are ignored. */
  onEvent?: ((event: SellerEvent) => void) | undefined
  /** A pino-compatible logger: payment events are logged (no secrets, no headers). */
  logger?: SellerLogger | undefined
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
  /**
   * Resolves `true` once the payment is durable, `false` if it was refused after the handler
   * started (the handler's answer is then replaced by the refusal: do not do the work). At once
   * `true`, except for a payment still being written when the handler started: a session call
   * priced per request on a mount that holds the answer (Hono; `HandleOptions.holdsAnswer`). A
   * handler whose work must never happen unpaid awaits it before the work.
   *
   * @example
   * ```ts
   * if (!paid.commit() || !(await paid.durable())) return c.body(null, 499) // not sent
   * await mailer.send(message)
   * ```
   */
  durable(): Promise<boolean>
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
