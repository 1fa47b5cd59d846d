/**
 * The engine's types: a priced route, a payment, the engine's decision and its events, the engine's
 * options and the engine itself. Every engine module imports its types from here, and this module
 * imports no engine module but `requestView` (a leaf), so no engine file imports back from a
 * module that imports it.
 *
 * @module
 */
import type { BodyValidator } from '../body.js'
import type { ChallengeSecret } from '../challenge.js'
import type { PaymentError } from '../errors.js'
import type { PaymentMethod } from '../methods/types.js'
import type { PriceInput } from '../money.js'
import type { Offer } from '../negotiate.js'
import type { PrecheckOptions } from '../precheck.js'
import type { SettleContext, SettlementLedger } from '../settle.js'
import type { PaymentDialect, PaymentStore } from '../stores/types.js'
import type { EngineRequest } from './requestView.js'

/** A priced route. */
export type PaidRoute = {
  /** Price: `"0.02"`, `"$0.02"` or base units as a bigint. */
  price: PriceInput
  /** Human description published in the challenge. */
  description?: string | undefined
  /** MIME type of the paid response; default `application/json`. */
  mimeType?: string | undefined
  /** Seconds a challenge stays valid; default 60. */
  maxTimeoutSeconds?: number | undefined
  /** Request body validator (Standard Schema or function). Checked before any payment. */
  body?: BodyValidator | undefined
  /** Body size limit in bytes; default the paywall's `maxBodyBytes`. */
  maxBodyBytes?: number | undefined
  /** JSON Schema of the paid response, published as `outputSchema`. */
  outputSchema?: Record<string, unknown> | undefined
  /**
   * Which handler statuses count as a failed call (refunded). Default: 500 and above. A 4xx after
   * payment is served: the seller decided it (list it here to refund it instead).
   */
  failedStatuses?: readonly number[] | ((status: number) => boolean) | undefined
  /**
   * When the paid work starts, which decides what a buyer who hangs up before the answer starts
   * gets: before the work starts the payment is refunded; once it has started it is served (the
   * seller's cost is spent whether or not anyone reads the answer).
   *
   * - `'handler'` (default): the work starts when the handler is called. A buyer who hangs up
   *   while the payment settles is refunded and the handler never runs; one who hangs up while it
   *   runs was served.
   * - `'manual'`: the work starts when the handler calls `commit()` (on {@link PaidDecision}, or
   *   the `PaidRequestInfo` a framework handler reads). Until then a hang-up is refunded; `commit()`
   *   then returns `false` and the handler must not do the work. For cheap, idempotent routes that
   *   check things first, or for a handler whose work is one write it can make depend on
   *   `commit()` (call it just before the point of no return, e.g. inside the transaction).
   *
   * Security: with `'manual'`, work done before `commit()` is given away to a buyer who hangs up;
   * work done after `commit()` returned `false` is given away too. Call it before anything that
   * costs money or acts outside the process.
   */
  commit?: 'handler' | 'manual' | undefined
  /**
   * The payment methods this route takes, in the order its 402 lists them; default the paywall's.
   * A credential of another known method is refused with the method's own code.
   */
  methods?: readonly PaymentMethod[] | undefined
}

/** What is known about a payment that was accepted. */
export type PaymentInfo = {
  dialect: PaymentDialect
  /** The name of the payment method that paid (`x402v1`, `x402v2`, `mppCharge`, or one of yours). */
  method: string
  /** The settlement digest (computed by the server). */
  digest: string
  payer: string
  /** Base units that arrived. */
  amount: bigint
  /** The resource URL the payment was for. */
  resource: string
  /** True when a settled-but-never-served payment is being served now (once). */
  resumed: boolean
  /**
   * `2` when an x402 payment came in version 2 (`PAYMENT-SIGNATURE`; answered with
   * `PAYMENT-RESPONSE`); absent for version 1 and MPP.
   */
  x402Version?: 2 | undefined
  /**
   * The session channel that paid, when a session paid (`mppSession`): a route priced per unit
   * meters its answer against it (`SessionMethod.stream`).
   */
  channelId?: string | undefined
}

/**
 * How a paid call ended, as told to {@link PaidDecision.complete}: the status the handler answered,
 * an error it threw, or `hungUp` — the buyer went away before the answer started (nothing was sent):
 * refunded when the work had not started ({@link PaidDecision.committed} false), served otherwise.
 */
export type CallOutcome = { status: number } | { error: unknown } | { hungUp: true }

/**
 * An engine answer as plain data (what Node adapters write without building a `Response`). Header
 * names are as the engine writes them; `body` is the exact text sent.
 */
export type PlainResponse = {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/** The engine's answer for one request. */
export type Decision =
  /**
   * Answer with this response (400, 402, 413, 503); the handler does not run. `response` (a new
   * `Response` each time it is read) and `plain` carry the same status, headers and bytes. The
   * same decision object may be handed out again (a 402 stays the same until its expiry moves on).
   */
  | { status: 'respond'; readonly response: Response; readonly plain: PlainResponse }
  /** Paid: run the handler, set `headers` on its response, then call `complete` exactly once. */
  | PaidDecision

/** A paid request. */
export type PaidDecision = {
  status: 'paid'
  payment: PaymentInfo
  /** The parsed, validated body when the route has a validator; otherwise undefined (read it yourself). */
  body: unknown
  /**
   * Success headers for a response with this status: `X-PAYMENT-RESPONSE` (x402, on every served
   * response: the buyer paid and should know the digest) or `Payment-Receipt` (MPP, on 2xx only, as
   * the MPP rules say). Set them before the first byte is sent.
   */
  headersFor(status: number): Readonly<Record<string, string>>
  /**
   * Whether `outcome` counts as a failed call for this route (a hang-up does until the work has
   * started: see {@link PaidDecision.committed}).
   */
  isFailure(outcome: CallOutcome): boolean
  /**
   * Whether the paid work has started: from then on a buyer who hangs up before the answer starts
   * was served, not refunded. Set by {@link PaidDecision.start} (route default) or
   * {@link PaidDecision.commit}.
   */
  readonly committed: boolean
  /**
   * Marks the point where the paid work starts (route option `commit: 'manual'`; harmless
   * otherwise). Returns `true` when the work may go ahead — from now on a hang-up is served — and
   * `false` when it is too late: an outcome was already recorded (the buyer hung up and is being
   * refunded), so the handler must not do the work. Synchronous, so that nothing can happen between
   * the check and the work that follows it.
   *
   * @example
   * ```ts
   * if (!paid.commit()) return new Response(null, { status: 499 }) // the buyer left: refunded
   * await sendTheEmail()
   * ```
   */
  commit(): boolean
  /**
   * Called by a mount just before it calls the seller's handler (`attachPaidResponse`,
   * `watchHangUp` and `protect()` do it): commits, unless the route's `commit` is `'manual'`.
   *
   * With `untilHandled`, the mount will call {@link PaidDecision.handled} once the handler is done:
   * a buyer who hangs up after the work started is then recorded served only when the handler is
   * done, its serve lease kept meanwhile — so that a process that dies before that (its work
   * perhaps never sent) leaves the payment to the lease sweeper, which refunds it, as it does for a
   * buyer who stayed. Without it (a mount that cannot see its handler finish), such a hang-up is
   * recorded served at once.
   */
  start(options?: { readonly untilHandled?: boolean | undefined }): void
  /**
   * Tells the decision its handler is done (it answered or threw); see
   * {@link PaidDecision.start}'s `untilHandled`. Harmless otherwise, and when called again.
   */
  handled(): void
  /** Records the outcome: `served`, or `refund_due` (and the refund worker is woken). Idempotent. */
  complete(outcome: CallOutcome): Promise<'served' | 'refund_due'>
  /**
   * Waits for the payment's last write, when the method let the handler start before it was done
   * (only when the mount said it holds the answer: {@link HandleOptions.holdsAnswer}). Resolves to
   * `undefined` once the payment is durable — send the handler's answer — or to the refusal to
   * send instead (a 402 or 503) when that write refused the payment after all: the handler's answer
   * must then be dropped, and the call is recorded as not paid (nothing is charged or refunded).
   * Resolves at once in every other case. Call it after the handler answered, before the answer's
   * first byte.
   */
  ready(): Promise<Response | undefined>
}

/** Events for logs and metrics. Never carry secrets or full headers. */
export type PaywallEvent =
  | { type: 'challenged'; resource: string }
  | { type: 'invalid_body'; resource: string; field: string | null }
  | { type: 'rejected'; resource: string; dialect: PaymentDialect; code: string }
  | { type: 'pending'; resource: string; digest: string }
  | { type: 'settled'; resource: string; payment: PaymentInfo }
  /** A management action (a session's top-up, voucher or close) answered without the handler. */
  | { type: 'answered'; resource: string; method: string; status: number }
  | { type: 'served'; payment: PaymentInfo }
  | { type: 'refund_due'; payment: PaymentInfo; reason: string }
  /**
   * The serve lease of a call still running was taken over: this process did not renew it for a
   * whole lease (it was cut off from the store, or stalled), and the same payment may have been
   * served elsewhere. The call's outcome is still recorded if the record allows it (when it does
   * not, this is reported again as the call completes).
   */
  | { type: 'lease_lost'; payment: PaymentInfo }
  /**
   * The payment store failed (`error.code` `store_error`; `error.status` 503 when it could not be
   * reached or was busy, 500 otherwise; the driver's error is `error.cause`): the buyer was answered
   * with that status, or the outcome of a paid call could not be recorded.
   */
  | { type: 'store_failed'; resource: string; error: PaymentError }

/**
 * Options of {@link createPaywall}. The seller layer's `SellerOptions` (every adapter's
 * `paywall(options)`) are these, with the ledger as a URL or a `Ledger`, one secret or a list, and
 * the seller's own additions: each option both layers share is declared here only.
 */
export type PaywallOptions = {
  /** The seller's Sui address that receives payments. */
  payTo: string
  /** Network. Default `sui:mainnet`. */
  network?: string | undefined
  /** Coin type. Default the USDC of `network`. */
  asset?: string | undefined
  /** The ledger settlements are submitted to and read from (a `Ledger` made with `createLedger`). */
  ledger: SettlementLedger
  /**
   * Where payments are recorded (replay protection, refunds). Required. Tests: `createMemoryStore()`
   * from `tollgate`; production: `createSqliteStore()` from `tollgate/stores/sqlite` (one machine)
   * or the Redis/PostgreSQL stores (several processes). A memory store forgets payments on restart.
   */
  store: PaymentStore
  /**
   * Challenge HMAC secrets, each ≥ 32 bytes; the first signs, all verify (rotation). Security: anyone
   * holding a secret can mint challenges; keep them out of logs and source control.
   */
  secrets: readonly ChallengeSecret[]
  /** MPP realm. Default the host name of the resource URL (without the port, as mppx expects). */
  realm?: string | undefined
  /**
   * Public base URL used for the `resource` buyers pay for (recommended in production, and behind
   * proxies).
   */
  publicBaseUrl?: string | undefined
  /**
   * Believe `X-Forwarded-Proto`/`-Host` for `resource`. Default `false`. Security: only behind a
   * proxy that overwrites them; otherwise a client chooses the URL bound into its challenge.
   */
  trustProxy?: boolean | undefined
  /**
   * Dialects offered: `both` (default), `x402` (x402 versions 1 and 2) or `mpp` (MPP `charge`). A
   * shorthand for `methods`, ignored when they are given.
   */
  offer?: Offer | undefined
  /**
   * The payment methods offered, in the order a 402 lists them (routes may choose their own);
   * default those of `offer`. Add your own method here (see `PaymentMethod`).
   */
  methods?: readonly PaymentMethod[] | undefined
  /** Offline pre-check options (transaction forms, size). */
  precheck?: PrecheckOptions | undefined
  /** Default body size limit in bytes. Default 1 MiB. */
  maxBodyBytes?: number | undefined
  /** Woken (not awaited) after a refund becomes due. */
  refunder?: { runOnce(): Promise<unknown> } | undefined
  /** Observes what happens (logs, metrics). Errors thrown here are ignored. */
  onEvent?: ((event: PaywallEvent) => void) | undefined
  /** Settlement step hook (tests; see `SettleContext.onStep`). */
  onSettleStep?: SettleContext['onStep']
  /** Clock in ms (tests). Default `Date.now`. */
  now?: (() => number) | undefined
}

/** How a mount handles the decision of {@link Paywall.handle}. */
export type HandleOptions = {
  /**
   * The mount holds the handler's answer until {@link PaidDecision.ready} has resolved, and answers
   * what it resolves to instead when it is a refusal. A payment method may then let the handler
   * start while the payment's last write is still under way (a session call priced per request:
   * its voucher and hold), instead of before it. Default false: every decision is final when
   * `handle` returns it.
   */
  readonly holdsAnswer?: boolean | undefined
}

/** The paywall engine. */
export type Paywall = {
  /**
   * Decides what to do with a request for a priced route. Never throws for bad input. Takes a Web
   * `Request`, or an adapter's cheaper view of its own request (`RequestView`).
   *
   * A request that carries no payment, to a route without a body validator, is decided at once
   * with no I/O: the decision (its 402, or a 413 when the declared body is over the limit) is
   * returned as it is, not as a promise, so that the common unpaid request costs no promise. Every
   * other request is decided asynchronously (`await` works on both).
   */
  handle(
    request: EngineRequest,
    route: PaidRoute,
    options?: HandleOptions,
  ): Decision | Promise<Decision>
  /**
   * Wraps a Web-standard handler: `(request) => Response`, paid. The success header is set on the
   * handler's response, and a streamed body is passed through as it comes; the outcome is recorded
   * when the body finishes (an error mid-stream is a failed call, refunded).
   */
  protect(
    route: PaidRoute,
    handler: (request: Request, paid: PaidDecision) => Response | Promise<Response>,
  ): (request: Request) => Promise<Response>
  /** The options, as resolved. */
  readonly options: Readonly<PaywallOptions>
}
