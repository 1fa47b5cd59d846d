/**
 * `createPayingFetch()`: a `fetch` that pays HTTP 402s in USDC on Sui, in either dialect, within
 * limits the wallet owner set. Drop it in wherever a `fetch` goes (the `openai` SDK's `fetch`
 * option included).
 *
 * ```
 * request ─▶ transient 429/5xx? retry with backoff + jitter (Retry-After honoured), bounded
 *         ─▶ 402 ─▶ read both dialects ─▶ select (exact, our network, USDC, no escrow, a dialect we can use)
 *                ─▶ maxPrice ─▶ onChallenge ─▶ wallet limits (recorded before signing)
 *                ─▶ x402: sign (not submit) ─▶ PAYMENT-SIGNATURE (v2) or X-PAYMENT (v1)
 *                   │ MPP: submit, wait, sign proof ─▶ Authorization: Payment
 *                ─▶ the same paid request (re-sent with the SAME payment only if it got no answer
 *                   or a transient one)
 *                ─▶ 402 settlement_pending + Retry-After: wait, present the SAME payment again,
 *                   within pendingWaitMs
 *                ─▶ any other 402: PAYMENT_REJECTED, never a second payment
 * ```
 *
 * This module makes the paying fetch and pays the 402s; the payment it attaches to each paid
 * response is paidResponses.ts, and its errors (which are refusals, a ledger that did not answer)
 * are fetchErrors.ts.
 *
 * @module
 */
import type { Signer } from '@mysten/sui/cryptography'
import { withRetries } from '../backoff.js'
import { PaymentError } from '../errors.js'
import { nodeFetch } from '../internal/nodeFetch.js'
import { createLedger, type Ledger } from '../ledger/index.js'
import { builtInMethods } from '../methods/index.js'
import type { MethodOffer, PaymentMethod } from '../methods/types.js'
import { formatAmount, type PriceInput, parseAmount } from '../money.js'
import type { Dialect } from '../negotiate.js'
import { withLedgerUrl } from './fetchErrors.js'
import { createWalletLimits, type WalletLimits, type WalletLimitsOptions } from './limits.js'
import { decodeReceiptOf, type Payment, recordPayment } from './paidResponses.js'
import { makePayment } from './pay.js'
import { readBounded, reasonOf, refusalOf, template } from './request.js'
import { type RetryOptions, retryAfterMs, transientStatuses } from './retry.js'
import { readMethodOffers, selectOffer, usdcTypeOf } from './select.js'

export { isRefusal } from './fetchErrors.js'
export { type Payment, paymentOf } from './paidResponses.js'

/** What `onChallenge` sees: the 402's offers and the one about to be paid. */
export type ChallengeEvent = {
  url: string
  method: string
  /** Every offer read (with the built-in methods, each is a `PaymentOffer`: narrow on `method`). */
  offers: readonly MethodOffer[]
  selected: MethodOffer
}

/** A logger (pino-compatible shape). Never given keys, signatures or full payment headers. */
export type ClientLogger = {
  debug?(fields: Record<string, unknown>, message: string): void
  info?(fields: Record<string, unknown>, message: string): void
  warn?(fields: Record<string, unknown>, message: string): void
}

/** Options of {@link createPayingFetch}. */
export type PayingFetchOptions = {
  /**
   * Any `@mysten/sui` signer (e.g. `Ed25519Keypair`). Security: it signs payments up to the limits
   * below; it is never logged.
   */
  signer: Signer
  /**
   * Whether the signer can submit transactions itself. Default true. A zkLogin-style signer that
   * cannot is `false`: it pays only in the x402 dialect (the seller submits) and refuses MPP-only
   * sellers with `DIALECT_UNSUPPORTED`.
   */
  canSubmit?: boolean | undefined
  /** The ledger: a gRPC URL or a {@link Ledger}. Default the public full node of `network`. */
  ledger?: string | Ledger | undefined
  /** Network; default `sui:mainnet`. Only offers on it, in its native USDC, are paid. */
  network?: string | undefined
  /**
   * Most one call may cost, in USDC (`"0.10"`) or base units (bigint); compared with the offer's
   * amount in base units of the same asset (USDC). A higher price is refused with
   * `PRICE_ABOVE_MAX` before anything is signed. Default: no per-call cap beyond the wallet limits.
   */
  maxPrice?: PriceInput | undefined
  /**
   * Wallet limits (default 25 USDC per transaction, 100 per rolling 24 h, recorded in
   * `spending.json` under the config folder), or a {@link WalletLimits}. `false` turns them off:
   * security, only do that with a signer that holds little.
   */
  limits?: WalletLimitsOptions | WalletLimits | false | undefined
  /**
   * Dialect to use when a 402 offers both; default `x402` (nothing moves until the seller settles).
   * Within x402, version 2 (`PAYMENT-SIGNATURE`) is used when the 402 offers it, else version 1.
   */
  prefer?: Dialect | undefined
  /**
   * The payment methods this client pays with; default the built-in ones (x402 versions 1 and 2,
   * MPP `charge`). Add your own method here (see `PaymentMethod`).
   */
  methods?: readonly PaymentMethod[] | undefined
  /** Retries of transient answers BEFORE any payment; default 2 retries, 250 ms base, 10 s cap. */
  retry?: RetryOptions | undefined
  /**
   * How long in ms to keep presenting the SAME payment while the seller answers the paid request
   * 402 `settlement_pending` with a `Retry-After` (another request or process may still hold the
   * payment; a seller's default recovery window is 50 s). Default 60 000; `0` turns it off. Each
   * wait is the seller's `Retry-After` (at least 1 s); nothing is signed or paid again. Past it, the
   * fetch throws `PAYMENT_REJECTED` with `details.code` `settlement_pending` and `details.digest`:
   * the payment is not lost, present it again later.
   */
  pendingWaitMs?: number | undefined
  /** Called with the offers before paying; throw to refuse. */
  onChallenge?: ((event: ChallengeEvent) => void | Promise<void>) | undefined
  /** Called after the paid request was answered (not a 402). Errors thrown here are ignored. */
  onPaid?: ((payment: Payment, response: Response) => void | Promise<void>) | undefined
  logger?: ClientLogger | undefined
  /** The underlying fetch; default `globalThis.fetch`. */
  fetch?: ((request: Request) => Promise<Response>) | undefined
  /** Sleep used between retries (tests); default `setTimeout`. */
  sleep?: ((ms: number) => Promise<void>) | undefined
  /** Random source for jitter (tests); default `Math.random`. */
  random?: (() => number) | undefined
}

/** The paying fetch: the `fetch` signature, plus what it was made with. */
export type PayingFetch = ((
  input: string | URL | Request,
  init?: RequestInit,
) => Promise<Response>) & {
  /** The wallet limits in force (undefined when turned off). */
  readonly limits: WalletLimits | undefined
  /** The payer's address. */
  readonly address: string
}

const defaultNodes: Readonly<Record<string, string>> = {
  'sui:mainnet': 'https://fullnode.mainnet.sui.io:443',
  'sui:testnet': 'https://fullnode.testnet.sui.io:443',
}

/**
 * Statuses on which the paid request is re-sent with the SAME payment: the seller did not answer
 * it (a gateway in front of it did, or it asked for time). A 500 is the seller's answer to a paid
 * call (refunded by the seller), so it is returned, not retried.
 */
const paidRetryStatuses: ReadonlySet<number> = new Set([429, 502, 503, 504])

/** Shortest wait before presenting a payment the seller is still settling (a `Retry-After: 0`). */
const minPendingWaitMs = 1000

/**
 * Creates a paying fetch.
 *
 * @throws {PaymentError} from the returned function, instead of a 402 response: `PRICE_ABOVE_MAX`,
 *   `LIMIT_PER_TX`, `LIMIT_PER_DAY`, `ESCROW_REQUIRED`, `DIALECT_UNSUPPORTED`,
 *   `INSUFFICIENT_BALANCE`, `NO_PAYABLE_REQUIREMENT`, `PAYMENT_REJECTED` (the seller answered the
 *   paid request with 402 again — or still `settlement_pending` after `pendingWaitMs`;
 *   `details.code`/`details.reason` say why, `details.digest` names the payment), `PAYMENT_REFUNDED` (the
 *   paid call failed and the seller refunded the payment, or owes it back: `details.refund` is
 *   `refunded` or `owed`, `details.refundDigest` the refund transaction when known), and for MPP payments
 *   the ledger's `settlement_failed`, `transaction_failed`, `settlement_pending`.
 * @example
 * ```ts
 * const pay = createPayingFetch({ signer: keypair, maxPrice: '0.10' })
 * const res = await pay('https://api.example.com/v1/search', { method: 'POST', body: JSON.stringify({ q: 'sui' }) })
 * ```
 */
export function createPayingFetch(options: PayingFetchOptions): PayingFetch {
  const network = options.network ?? 'sui:mainnet'
  const knownUsdc = usdcTypeOf(network)
  if (knownUsdc === undefined) {
    throw new PaymentError('invalid_config', `No USDC is known on network ${network}.`)
  }
  const usdc: string = knownUsdc
  const maxPrice = options.maxPrice === undefined ? undefined : parseAmount(options.maxPrice)
  const limits =
    options.limits === false
      ? undefined
      : options.limits !== undefined && 'reserve' in options.limits
        ? options.limits
        : createWalletLimits(options.limits ?? {})
  const ledgerOption = options.ledger ?? defaultNodes[network]
  let ledger: Ledger | undefined = typeof ledgerOption === 'object' ? ledgerOption : undefined
  const getLedger = () => {
    ledger ??= createLedger({ url: ledgerOption as string, fetch: nodeFetch })
    return ledger
  }
  const baseFetch = options.fetch ?? ((request: Request) => globalThis.fetch(request))
  const sleep =
    options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)))
  const log = options.logger ?? {}
  const canSubmit = options.canSubmit ?? true
  const methods = options.methods ?? builtInMethods
  const methodNamed = (name: string) => methods.find((m) => m.name === name) as PaymentMethod
  const pendingWaitMs = options.pendingWaitMs ?? 60_000
  if (!Number.isFinite(pendingWaitMs) || pendingWaitMs < 0) {
    throw new PaymentError(
      'invalid_config',
      `pendingWaitMs must be a number of milliseconds ≥ 0 (got ${pendingWaitMs}).`,
    )
  }
  const payer = options.signer.toSuiAddress()

  /**
   * Sends, retrying transient answers; `retryOnError` re-sends when no answer came at all. The
   * statuses of answers that were retried are pushed on `retried`.
   */
  async function send(
    make: () => Request,
    url: string,
    retryOnError: boolean,
    retried: number[] = [],
  ): Promise<Response> {
    const statuses = retryOnError ? paidRetryStatuses : transientStatuses
    type Sent = { response: Response } | { error: unknown }
    const { value } = await withRetries<Sent>(
      async () => {
        let response: Response
        try {
          response = await baseFetch(make())
        } catch (error) {
          if (!retryOnError || (error as Error)?.name === 'AbortError') throw error
          return { retry: true, value: { error } }
        }
        if (!statuses.has(response.status)) return { retry: false, value: { response } }
        const asked = retryAfterMs(response.headers.get('retry-after'))
        return { retry: true, value: { response }, retryAfterMs: asked }
      },
      {
        ...options.retry,
        attempts: Math.max(0, options.retry?.retries ?? 2) + 1,
        random: options.random,
        sleep,
        onRetry: async ({ attempt, waitMs, value: sent }) => {
          if ('error' in sent) {
            log.warn?.({ url, attempt, waitMs }, 'no answer; re-sending the same paid request')
            return
          }
          retried.push(sent.response.status)
          log.warn?.(
            { url, status: sent.response.status, attempt, waitMs },
            'transient answer; retrying',
          )
          await sent.response.body?.cancel()
        },
      },
    )
    if ('error' in value) throw value.error
    return value.response
  }

  /**
   * Sends the paid request (see {@link send}); while the seller answers 402 `settlement_pending`
   * with a `Retry-After`, waits that long and presents the SAME payment again, within
   * `pendingWaitMs`. A 402 that ends it comes back with its body read as `refusal`.
   */
  async function present(
    make: () => Request,
    request: { url: string; signal: AbortSignal },
    digest: string,
    retried: number[],
  ): Promise<{ response: Response; refusal: string | undefined }> {
    const { url } = request
    type Presented = { response: Response; refusal: string | undefined }
    const { value } = await withRetries<Presented>(
      async () => {
        const response = await send(make, url, true, retried)
        if (response.status !== 402) {
          return { retry: false, value: { response, refusal: undefined } }
        }
        const refusal = await readBounded(response)
        const asked = retryAfterMs(response.headers.get('retry-after'))
        const pending = asked !== undefined && reasonOf(refusal).code === 'settlement_pending'
        return pending
          ? {
              retry: true,
              value: { response, refusal },
              retryAfterMs: Math.max(minPendingWaitMs, asked),
            }
          : { retry: false, value: { response, refusal } }
      },
      {
        attempts: Math.floor(pendingWaitMs / minPendingWaitMs) + 1,
        budgetMs: pendingWaitMs,
        maxDelayMs: pendingWaitMs,
        signal: request.signal,
        sleep: options.sleep,
        onRetry: ({ attempt, waitMs }) => {
          log.warn?.(
            { url, digest, attempt, waitMs },
            'the seller is still settling this payment; presenting the same payment again',
          )
        },
      },
    )
    return value
  }

  async function payingFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
    const request = await template(input, init)
    const first = await send(() => request.make(), request.url, false)
    if (first.status !== 402) return first

    const bodyText = await readBounded(first)
    const { offers } = readMethodOffers({ bodyText, headers: first.headers }, methods)
    const selection = selectOffer(offers, { network, canSubmit, prefer: options.prefer, methods })
    if (selection.status === 'refused') throw selection.error
    const offer = selection.offer
    log.debug?.(
      {
        url: request.url,
        dialect: offer.dialect,
        amount: offer.amount.toString(),
        payTo: offer.payTo,
      },
      '402: payment offer selected',
    )
    if (maxPrice !== undefined && offer.amount > maxPrice) {
      throw new PaymentError(
        'PRICE_ABOVE_MAX',
        `The seller asks ${formatAmount(offer.amount)} USDC; the most this client pays per call is ${formatAmount(maxPrice)}.`,
        { details: { amount: offer.amount.toString(), maxPrice: maxPrice.toString() } },
      )
    }
    await options.onChallenge?.({
      url: request.url,
      method: request.method,
      offers,
      selected: offer,
    })
    const reservation = await limits?.reserve({ amount: offer.amount, resource: request.url })

    const attempt = await makePayment(offer, {
      signer: options.signer,
      ledger: getLedger(),
      usdc,
      methods,
    })
    if (attempt.status === 'failed') {
      if (!attempt.moneyMayHaveMoved) await reservation?.release()
      throw withLedgerUrl(attempt.error, ledgerOption)
    }
    const retried: number[] = []
    let presented: Awaited<ReturnType<typeof present>>
    try {
      await reservation?.settle(attempt.digest)
      log.info?.(
        {
          url: request.url,
          dialect: offer.dialect,
          amount: offer.amount.toString(),
          digest: attempt.digest,
        },
        'paid; sending the paid request',
      )
      presented = await present(
        () => request.make(attempt.headers),
        request,
        attempt.digest,
        retried,
      )
    } finally {
      // The seller has answered: the wallet's next coin-form payment may be built.
      attempt.done?.()
    }
    const { response: paid, refusal } = presented
    if (refusal !== undefined) {
      throw refusalOf(refusal, {
        digest: attempt.digest,
        dialect: offer.dialect,
        failed: retried.at(-1),
      })
    }
    const payment: Payment = {
      dialect: offer.dialect,
      method: offer.method,
      amount: offer.amount,
      asset: usdc,
      payTo: offer.payTo,
      payer,
      network,
      url: request.url,
      digest: attempt.digest,
      form: attempt.form,
      receipt: decodeReceiptOf(paid, methodNamed(offer.method)),
    }
    recordPayment(paid, payment)
    try {
      await options.onPaid?.(payment, paid)
    } catch {
      // An observer must not turn a paid answer into an error.
    }
    return paid
  }

  return Object.assign(payingFetch, { limits, address: payer })
}
