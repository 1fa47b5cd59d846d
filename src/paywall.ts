/**
 * The paywall engine: the one place where a request meets a price. Framework-neutral (Web-standard
 * `Request`/`Response`); the Express, Koa and Hono adapters only translate to and from it.
 *
 * ```
 * handle(request, route)
 *   body invalid for the route ─▶ 400/413, nothing charged
 *   no credential ─▶ 402 (x402 body + WWW-Authenticate: Payment, one challenge id)
 *   X-PAYMENT ─▶ decode ─▶ challenge bound to these terms ─▶ settleX402
 *   Authorization: Payment ─▶ decode ─▶ challenge HMAC + expiry ─▶ settleMpp
 *   bad payment of any kind ─▶ 402 with the reason (never a 500), nothing served
 *   settled ─▶ { status: 'paid', headers, complete() }
 * complete({ status }) ─▶ served | refund_due (handler threw, 5xx, or a status the route marks failed)
 * ```
 *
 * @module
 */
import { type BodyValidator, defaultMaxBodyBytes, readBody } from './body.js'
import {
  buildChallenge,
  type ChallengePieces,
  type ChallengeSecret,
  prepareTerms,
  type RouteTerms,
  resourceUrl,
  verifyChallenge,
} from './challenge.js'
import { hasCode, isPaymentError, PaymentError } from './errors.js'
import { Recent } from './internal/recent.js'
import type { PreparedTerms } from './internal/terms.js'
import { type PriceInput, parseAmount } from './money.js'
import { encodeReceipt, mppHeaders, parseCredential, suiChargePayload } from './mpp.js'
import { type Classification, classifyRequest, type Offer } from './negotiate.js'
import { normalizeTerms, type PrecheckOptions } from './precheck.js'
import type { EngineRequest } from './requestView.js'
import { checkPaywallOptions } from './sellerOptions.js'
import {
  type SettleContext,
  type SettlementLedger,
  type SettlementResult,
  type SettlementTerms,
  settleMpp,
  settleX402,
} from './settle.js'
import type { PaymentDialect, PaymentStore } from './stores/types.js'
import { decodeXPayment, encodeXPaymentResponse, x402Headers } from './x402.js'

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
}

/** What is known about a payment that was accepted. */
export type PaymentInfo = {
  dialect: PaymentDialect
  /** The settlement digest (computed by the server). */
  digest: string
  payer: string
  /** Base units that arrived. */
  amount: bigint
  /** The resource URL the payment was for. */
  resource: string
  /** True when a settled-but-never-served payment is being served now (once). */
  resumed: boolean
}

/**
 * How a paid call ended, as told to {@link PaidDecision.complete}: the status the handler answered,
 * an error it threw, or `hungUp` — the buyer went away before the answer started (nothing was sent),
 * a failed call, refunded.
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
   * Answer with this response (400, 402, 413, 503); the handler does not run. `response` (built on
   * first access) and `plain` carry the same status, headers and bytes.
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
  /** Whether `outcome` counts as a failed call for this route. */
  isFailure(outcome: CallOutcome): boolean
  /** Records the outcome: `served`, or `refund_due` (and the refund worker is woken). Idempotent. */
  complete(outcome: CallOutcome): Promise<'served' | 'refund_due'>
}

/** Events for logs and metrics. Never carry secrets or full headers. */
export type PaywallEvent =
  | { type: 'challenged'; resource: string }
  | { type: 'invalid_body'; resource: string; field: string | null }
  | { type: 'rejected'; resource: string; dialect: PaymentDialect; code: string }
  | { type: 'pending'; resource: string; digest: string }
  | { type: 'settled'; resource: string; payment: PaymentInfo }
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

/** Options of {@link createPaywall}. */
export type PaywallOptions = {
  /** The seller's Sui address that receives payments. */
  payTo: string
  /** Network; default `sui:mainnet`. */
  network?: string | undefined
  /** Coin type; default the USDC of `network`. */
  asset?: string | undefined
  ledger: SettlementLedger
  store: PaymentStore
  /**
   * Challenge HMAC secrets, each ≥ 32 bytes; the first signs, all verify (rotation). Security: anyone
   * holding a secret can mint challenges; keep them out of logs and source control.
   */
  secrets: readonly ChallengeSecret[]
  /** MPP realm; default the host of the resource URL. */
  realm?: string | undefined
  /** Public base URL used for `resource` (recommended behind proxies). */
  publicBaseUrl?: string | undefined
  /**
   * Believe `X-Forwarded-Proto`/`-Host` for `resource`. Default false. Security: only behind a proxy
   * that overwrites them; otherwise clients choose the URL bound into their challenge.
   */
  trustProxy?: boolean | undefined
  /** Dialects offered: `both` (default), `x402` or `mpp`. */
  offer?: Offer | undefined
  /** Offline pre-check options (transaction forms, size). */
  precheck?: PrecheckOptions | undefined
  /** Default body size limit; default 1 MiB. */
  maxBodyBytes?: number | undefined
  /** Woken (not awaited) after a refund becomes due. */
  refunder?: { runOnce(): Promise<unknown> } | undefined
  /** Observes what happens (logs, metrics). Errors thrown here are ignored. */
  onEvent?: ((event: PaywallEvent) => void) | undefined
  /** Settlement step hook (tests; see `SettleContext.onStep`). */
  onSettleStep?: SettleContext['onStep']
  /** Clock in ms; default `Date.now`. */
  now?: (() => number) | undefined
}

/** The paywall engine. */
export type Paywall = {
  /**
   * Decides what to do with a request for a priced route. Never throws for bad input. Takes a Web
   * `Request`, or an adapter's cheaper view of its own request (`RequestView`).
   */
  handle(request: EngineRequest, route: PaidRoute): Promise<Decision>
  /**
   * The answer to a request that carries no payment, decided at once with no I/O: the 402 (or a 413
   * when the declared body is over the limit). `undefined` when the request needs {@link handle}:
   * it carries a payment, or its route validates the body first (an invalid body is a 400 before
   * any 402). Adapters call it first, so the common unpaid request costs no promise and no
   * `Request`; `handle` gives the same answers.
   */
  unpaid(request: EngineRequest, route: PaidRoute): PlainResponse | undefined
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

type PreparedRoute = {
  price: bigint
  base: Omit<RouteTerms, 'resource'>
  /** Prepared terms per resource URL, so that challenge precomputation is reused (bounded). */
  terms: Recent<string, PreparedTerms>
}

const defaultFailed = (status: number) => status >= 500

/**
 * Creates the engine.
 *
 * @example
 * ```ts
 * const paywall = createPaywall({ payTo, ledger, store, secrets: [process.env.CHALLENGE_SECRET!] })
 * const handler = paywall.protect({ price: '0.02' }, () => Response.json({ ok: true }))
 * ```
 */
export function createPaywall(options: PaywallOptions): Paywall {
  checkPaywallOptions(options)
  const routes = new WeakMap<PaidRoute, PreparedRoute>()
  const resources = new Recent<string, string>(1024, 1024)
  /** Unpaid 402s are the same bytes until the challenge's expiry bucket moves on. */
  const plain402s = new WeakMap<ChallengePieces, PlainResponse>()
  /** The last of them, checked first (most sellers' unpaid requests go to one route at a time). */
  let last402: { pieces?: ChallengePieces; plain?: PlainResponse } = {}
  /** The route prepared last, checked before the map for the same reason. */
  let lastRoute: { route?: PaidRoute; prepared?: PreparedRoute } = {}
  const now = options.now ?? Date.now
  const emit = (event: PaywallEvent) => {
    try {
      options.onEvent?.(event)
    } catch {
      // Observers must not break payments.
    }
  }

  function prepared(route: PaidRoute): PreparedRoute {
    if (route === lastRoute.route && lastRoute.prepared !== undefined) return lastRoute.prepared
    let p = routes.get(route)
    if (p === undefined) {
      const price = parseAmount(route.price)
      p = {
        price,
        terms: new Recent(1024),
        base: {
          price,
          payTo: options.payTo,
          ...(options.asset === undefined ? {} : { asset: options.asset }),
          ...(options.network === undefined ? {} : { network: options.network }),
          ...(route.description === undefined ? {} : { description: route.description }),
          ...(route.mimeType === undefined ? {} : { mimeType: route.mimeType }),
          ...(route.maxTimeoutSeconds === undefined
            ? {}
            : { maxTimeoutSeconds: route.maxTimeoutSeconds }),
          ...(route.outputSchema === undefined ? {} : { outputSchema: route.outputSchema }),
        },
      }
      prepareTerms({ ...p.base, resource: 'http://localhost/' }, { realm: options.realm })
      routes.set(route, p)
    }
    lastRoute = { route, prepared: p }
    return p
  }

  /**
   * Terms are prepared once per (route, resource) and cached, so that a 402 or a settlement reuses
   * the validation and the precomputed challenge parts.
   */
  function termsFor(route: PaidRoute, resource: string): PreparedTerms {
    const { terms, base } = prepared(route)
    return (
      terms.get(resource) ??
      terms.remember(resource, prepareTerms({ ...base, resource }, { realm: options.realm }))
    )
  }

  function bodyLimit(route: PaidRoute): number {
    return route.maxBodyBytes ?? options.maxBodyBytes ?? defaultMaxBodyBytes
  }

  function unpaid(request: EngineRequest, route: PaidRoute): PlainResponse | undefined {
    return answerUnpaid(request, route, classifyRequest(request))
  }

  /** The 402 (or 413) of an unpaid request on a route without a body validator; else undefined. */
  function answerUnpaid(
    request: EngineRequest,
    route: PaidRoute,
    presented: Classification,
  ): PlainResponse | undefined {
    if (route.body !== undefined || presented.dialect !== 'none') return undefined
    const limit = bodyLimit(route)
    if (Number(request.headers.get('content-length') ?? '0') > limit) return tooLarge(limit)
    const resource = resourceOf(request)
    if (options.onEvent !== undefined) emit({ type: 'challenged', resource })
    return challenge(termsFor(route, resource))
  }

  /**
   * The resource URL of a request, remembered per URL (and forwarded headers, when trusted): the
   * same few URLs repeat, and parsing one costs more than the rest of a 402.
   */
  function resourceOf(request: EngineRequest): string {
    const trustProxy = options.trustProxy === true && options.publicBaseUrl === undefined
    const key = trustProxy
      ? `${request.url}\n${request.headers.get('x-forwarded-proto')}\n${request.headers.get('x-forwarded-host')}`
      : request.url
    return (
      resources.get(key) ??
      resources.remember(
        key,
        resourceUrl(request, {
          publicBaseUrl: options.publicBaseUrl,
          trustProxy: options.trustProxy,
        }),
      )
    )
  }

  function challenge(
    terms: PreparedTerms,
    error?: PaymentError,
    extraHeaders?: Readonly<Record<string, string>>,
  ): PlainResponse {
    if (error !== undefined && error.status !== 402) {
      return {
        status: error.status,
        headers: {
          ...extraHeaders,
          'Content-Type': 'application/problem+json',
          'Cache-Control': 'no-store',
        },
        body: JSON.stringify(error.toProblem()),
      }
    }
    const pieces = buildChallenge(terms, {
      secrets: options.secrets,
      realm: options.realm,
      now: now(),
      offer: options.offer,
      error,
    })
    if (error === undefined && extraHeaders === undefined) {
      if (pieces === last402.pieces && last402.plain !== undefined) return last402.plain
      let plain = plain402s.get(pieces)
      if (plain === undefined) {
        plain = Object.freeze({ status: 402, headers: pieces.headers, body: pieces.bodyText })
        plain402s.set(pieces, plain)
      }
      last402 = { pieces, plain }
      return plain
    }
    return {
      status: 402,
      headers: extraHeaders === undefined ? pieces.headers : { ...pieces.headers, ...extraHeaders },
      body: pieces.bodyText,
    }
  }

  async function settle(
    presented: Exclude<Classification, { dialect: 'none' }>,
    p: PreparedTerms,
  ): Promise<SettlementResult> {
    const settlementTerms: SettlementTerms = {
      ...normalizeTerms({ payTo: p.payTo, asset: p.asset, amount: p.price }),
      network: p.network,
      resource: p.resource,
    }
    const context: SettleContext = {
      ledger: options.ledger,
      store: options.store,
      precheck: options.precheck,
      onStep: options.onSettleStep,
    }
    const offer = options.offer ?? 'both'
    if (presented.dialect === 'x402') {
      if (offer === 'mpp')
        return refused('unsupported_scheme', 'This route takes MPP payments only.')
      const payment = decodeXPayment(presented.header)
      if (payment.network !== p.network) {
        return refused('unsupported_network', `This route is paid on ${p.network}.`)
      }
      const verdict = verifyChallenge({
        id: payment.payload.challengeId,
        terms: p,
        secrets: options.secrets,
        now: now(),
      })
      if (verdict.status !== 'valid') return { status: 'rejected', error: verdict.error }
      return settleX402(payment.payload, settlementTerms, context)
    }
    if (offer === 'x402')
      return refused('method_unsupported', 'This route takes x402 payments only.')
    const credential = parseCredential(presented.header)
    const payload = suiChargePayload(credential)
    const verdict = verifyChallenge({
      id: credential.challenge.id,
      terms: p,
      secrets: options.secrets,
      now: now(),
      expires: credential.challenge.expires,
      realm: p.realm,
    })
    if (verdict.status !== 'valid') return { status: 'rejected', error: verdict.error }
    return settleMpp(
      {
        digest: payload.digest,
        signature: payload.signature,
        proof: {
          realm: p.realm,
          challengeId: credential.challenge.id,
          amount: p.amount,
          currency: p.asset,
          recipient: p.payTo,
        },
      },
      settlementTerms,
      context,
    )
  }

  async function handle(request: EngineRequest, route: PaidRoute): Promise<Decision> {
    const presented = classifyRequest(request)
    const early = answerUnpaid(request, route, presented)
    if (early !== undefined) return respond(early)
    const resource = resourceOf(request)
    const terms = termsFor(route, resource)
    const read = await readBody(request, route.body, bodyLimit(route))
    if (read.status === 'too_large') return respond(tooLarge(read.limit))
    if (read.status === 'invalid') {
      emit({ type: 'invalid_body', resource, field: read.field })
      return respond(
        problem(400, 'Bad Request', read.message, 'invalid_request_body', { field: read.field }),
      )
    }
    if (presented.dialect === 'none') {
      emit({ type: 'challenged', resource })
      return respond(challenge(terms))
    }
    let result: SettlementResult
    try {
      result = await settle(presented, terms)
    } catch (error) {
      if (!isPaymentError(error)) throw error
      if (error.code === 'store_error') emit({ type: 'store_failed', resource, error })
      result = { status: 'rejected', error }
    }
    if (result.status === 'rejected') {
      emit({ type: 'rejected', resource, dialect: presented.dialect, code: result.error.code })
      return respond(challenge(terms, result.error))
    }
    if (result.status === 'pending') {
      emit({ type: 'pending', resource, digest: result.digest })
      return respond(challenge(terms, result.error, { 'Retry-After': '2' }))
    }
    const network = prepareTerms(terms, { realm: options.realm }).network
    const payment: PaymentInfo = {
      dialect: result.dialect,
      digest: result.digest,
      payer: result.payer,
      amount: result.amount,
      resource,
      resumed: result.resumed,
    }
    emit({ type: 'settled', resource, payment })
    return paid(payment, route, read.body, network, result.lease)
  }

  /**
   * Keeps the serve lease of a paid call while it runs: renewed every third of the store's lease, so
   * that a call longer than the lease is never handed to a second presenter of the same payment. A
   * crashed process stops renewing, and its settled payment is served once after the lease. Returns
   * the function that stops renewing (when the outcome is recorded).
   */
  function keepLease(payment: PaymentInfo, lease: Date | undefined): () => void {
    const store = options.store
    if (lease === undefined) return () => {}
    const every = Math.max(1, Math.floor(store.serveLeaseMs / 3))
    let held = lease
    let stopped = false
    let timer: ReturnType<typeof setTimeout> | undefined
    const schedule = () => {
      timer = setTimeout(renew, every)
      ;(timer as { unref?: () => void }).unref?.()
    }
    const renew = async () => {
      try {
        const renewal = await store.renewServeLease(payment.digest, held)
        if (renewal.status === 'lost') {
          // After `stop` the outcome is being recorded here; before it, someone else took over.
          if (!stopped) emit({ type: 'lease_lost', payment })
          return
        }
        held = renewal.leaseUntil
      } catch {
        // The store could not be reached: try again at the next tick, while the lease lasts.
      }
      if (!stopped) schedule()
    }
    schedule()
    return () => {
      stopped = true
      clearTimeout(timer)
    }
  }

  function paid(
    payment: PaymentInfo,
    route: PaidRoute,
    body: unknown,
    network: string,
    lease: Date | undefined,
  ): PaidDecision {
    const success: Record<string, string> =
      payment.dialect === 'x402'
        ? {
            [x402Headers.paymentResponse]: encodeXPaymentResponse({
              success: true,
              transaction: payment.digest,
              network,
              payer: payment.payer,
            }),
          }
        : {
            [mppHeaders.paymentReceipt]: encodeReceipt({
              status: 'success',
              method: 'sui',
              timestamp: new Date(now()).toISOString(),
              reference: payment.digest,
            }),
          }
    const none: Record<string, string> = {}
    const headersFor = (status: number) =>
      payment.dialect === 'mpp' && (status < 200 || status > 299) ? none : success
    const failed = route.failedStatuses
    const isFailure = (outcome: CallOutcome) =>
      !('status' in outcome) ||
      (typeof failed === 'function'
        ? failed(outcome.status)
        : failed !== undefined
          ? failed.includes(outcome.status) || defaultFailed(outcome.status)
          : defaultFailed(outcome.status))
    let completion: Promise<'served' | 'refund_due'> | undefined
    const stopLease = keepLease(payment, lease)
    return {
      status: 'paid',
      payment,
      body,
      headersFor,
      isFailure,
      complete(outcome) {
        completion ??= (async () => {
          stopLease()
          if (!isFailure(outcome)) {
            const served = await options.store.served(payment.digest)
            emit(
              served.status === 'applied'
                ? { type: 'served', payment }
                : { type: 'lease_lost', payment },
            )
            return 'served' as const
          }
          const reason =
            'status' in outcome
              ? `the handler answered ${outcome.status}`
              : 'error' in outcome
                ? 'the handler failed'
                : 'the buyer hung up before the answer started'
          const owed = await options.store.oweRefund(payment.digest, reason)
          emit(
            owed.status === 'applied'
              ? { type: 'refund_due', payment, reason }
              : { type: 'lease_lost', payment },
          )
          void options.refunder?.runOnce().catch(() => {})
          return 'refund_due' as const
        })().catch((error: unknown) => {
          if (hasCode(error, 'store_error'))
            emit({ type: 'store_failed', resource: payment.resource, error })
          throw error
        })
        return completion
      },
    }
  }

  function protect(
    route: PaidRoute,
    handler: (request: Request, paid: PaidDecision) => Response | Promise<Response>,
  ): (request: Request) => Promise<Response> {
    return async (request) => {
      const decision = await handle(request, route)
      if (decision.status === 'respond') return decision.response
      const stopWatching = watchHangUp(request.signal, decision)
      if (stopWatching === undefined) return hungUpResponse()
      let response: Response
      try {
        response = await handler(request, decision)
        stopWatching()
      } catch (error) {
        stopWatching()
        await decision.complete({ error })
        return new Response(JSON.stringify(failedCallProblem()), {
          status: 500,
          headers: { 'Content-Type': 'application/problem+json' },
        })
      }
      return finishResponse(response, decision)
    }
  }

  return { handle, unpaid, protect, options }
}

/**
 * Puts the success headers on a handler's response and records the outcome when its body is done:
 * immediately for a bodiless or failed response, at the end of the stream otherwise (an error while
 * streaming is a failed call, refunded; a buyer who hangs up mid-stream was served). Bytes pass
 * through as they come, unbuffered.
 */
export function finishResponse(response: Response, decision: PaidDecision): Response {
  const outcome = { status: response.status }
  const headers = new Headers(response.headers)
  const init = { status: response.status, statusText: response.statusText, headers }
  if (decision.isFailure(outcome) || response.body === null) {
    void decision.complete(outcome).catch(() => {})
    if (!decision.isFailure(outcome)) setAll(headers, decision.headersFor(response.status))
    return new Response(response.body, init)
  }
  setAll(headers, decision.headersFor(response.status))
  const reader = response.body.getReader()
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read()
        if (done) {
          controller.close()
          void decision.complete(outcome).catch(() => {})
        } else {
          controller.enqueue(value)
        }
      } catch (error) {
        void decision.complete({ error }).catch(() => {})
        controller.error(error)
      }
    },
    cancel(reason) {
      void decision.complete(outcome).catch(() => {})
      return reader.cancel(reason)
    },
  })
  return new Response(body, init)
}

/**
 * Watches a paid request's abort signal while its handler runs (Web-standard runtimes, where the
 * signal is how a server says the buyer went away): an abort before the answer starts records the
 * call as failed (`{ hungUp: true }`, refunded). Call the returned function once the handler has
 * answered (from then on the answer has started: a hang-up mid-stream was served). Returns
 * `undefined` when the buyer is already gone: the refund is recorded and the handler should not run.
 *
 * @example
 * ```ts
 * const stop = watchHangUp(request.signal, decision)
 * if (stop === undefined) return hungUpResponse()
 * const response = await handler(request)
 * stop()
 * ```
 */
export function watchHangUp(
  signal: AbortSignal | undefined,
  decision: PaidDecision,
): (() => void) | undefined {
  const hungUp = () => {
    void decision.complete({ hungUp: true }).catch(() => {})
  }
  if (signal === undefined) return () => {}
  if (signal.aborted) {
    hungUp()
    return undefined
  }
  signal.addEventListener('abort', hungUp, { once: true })
  return () => signal.removeEventListener('abort', hungUp)
}

/**
 * The answer to a paid request whose buyer is already gone (nobody reads it; 499 is the status
 * servers log for "client closed request").
 */
export function hungUpResponse(): Response {
  return new Response(null, { status: 499 })
}

function setAll(headers: Headers, values: Readonly<Record<string, string>>): void {
  for (const [name, value] of Object.entries(values)) headers.set(name, value)
}

function respond(plain: PlainResponse): Decision {
  let response: Response | undefined
  return {
    status: 'respond',
    plain,
    get response() {
      response ??= new Response(plain.body, { status: plain.status, headers: plain.headers })
      return response
    },
  }
}

function refused(
  code: 'unsupported_scheme' | 'unsupported_network' | 'method_unsupported',
  message: string,
): SettlementResult {
  return { status: 'rejected', error: new PaymentError(code, message) }
}

function tooLarge(limit: number): PlainResponse {
  return problem(
    413,
    'Payload Too Large',
    `The request body is over ${limit} bytes.`,
    'request_body_too_large',
  )
}

function problem(
  status: number,
  title: string,
  detail: string,
  code: string,
  extra: Record<string, unknown> = {},
): PlainResponse {
  return {
    status,
    headers: { 'Content-Type': 'application/problem+json', 'Cache-Control': 'no-store' },
    body: JSON.stringify({ type: 'about:blank', title, status, detail, code, ...extra }),
  }
}

function failedCallProblem() {
  return {
    type: 'about:blank',
    title: 'Internal Server Error',
    status: 500,
    detail: 'The paid call failed; the payment will be refunded.',
    code: 'call_failed',
  }
}
