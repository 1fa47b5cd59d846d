/**
 * MPP `session` with method `sui` as a payment method (docs/protocol.md §7): the 402 carries a
 * second `Payment` challenge with `intent="session"` (price per unit); the buyer opens a payment
 * channel on the ledger once, then pays each call with a voucher — a cumulative amount signed by
 * the channel's session key — in `Authorization: Payment`. The seller keeps the channel's books in a
 * {@link ChannelStore}: a call's voucher must carry an amount not used before (a repeated voucher
 * pays nothing; the buyer signs a new amount for each call, and calls may arrive in any order), is
 * durable before the call's answer leaves, and the call's price is **held** out of the headroom in
 * the same write, then committed into `spent` when the call is served or released when it fails or
 * its buyer left before the work started. The write is done before the handler runs, or, on a mount
 * that holds the answer until it is (`MethodSettleInput.holdsAnswer`: `protect()`, Hono), while the
 * handler runs (docs/protocol.md, "When a call priced per request becomes durable"). Management actions — a top-up, a cooperative close, a voucher
 * on a bare request (`HEAD`, or a `POST` with neither body nor query) — are answered 204 with a
 * receipt, without the handler.
 *
 * The seller settles and closes with its own key (the payee's, or the channel's operator's),
 * through {@link createSessionMethod}'s `client`: a close captures what was spent, never more.
 * Answers metered per unit are sent on by its `stream` (`sessionStream.ts`).
 *
 * @module
 */
import type { ClientWithCoreApi } from '@mysten/sui/client'
import type { Signer } from '@mysten/sui/cryptography'
import { normalizeSuiAddress } from '@mysten/sui/utils'
import type { PreparedTerms } from '../challenge.js'
import { isPaymentError, PaymentError } from '../errors.js'
import { findScheme } from '../internal/authParams.js'
import {
  type Credential,
  encodeRequest,
  formatChallenge,
  mppHeaders,
  parseCredential,
  paymentScheme,
} from '../mpp.js'
import type { ChannelStore } from '../session/channelStore.js'
import type { ChannelSettlement } from '../session/settler.js'
import { createVoucherWaits } from '../session/voucherWaits.js'
import { sessionPayloadSchema } from '../session/wire.js'
import type { SettlementResult } from '../settle.js'
import { createCallBooks, refuse } from './sessionBooks.js'
import { createSellerChannels } from './sessionChannels.js'
import { type CloseContext, closeChannel } from './sessionClose.js'
import {
  createSessionStream,
  type MeteredPayment,
  type SessionStreamOptions,
} from './sessionStream.js'
import type { MethodSettleInput, PaymentMethod } from './types.js'

/** Options of {@link createSessionMethod}. */
export type SessionMethodOptions = {
  /** The ledger's client: channels are read, and closed, through it. */
  readonly client: ClientWithCoreApi
  /** The payee's key (or the channels' operator's): signs the close. Never logged. */
  readonly signer: Signer
  /** The package holding the `channel` module. */
  readonly package: string
  /** The shared `Registry` channel ids are derived under. */
  readonly registry: string
  /** Where the channels' books are kept (every process of the seller must share it). */
  readonly store: ChannelStore
  /** The network named in the challenge (`mainnet`, `testnet`, a local name). Default: the route's. */
  readonly network?: string | undefined
  /** The shortest grace period a channel may have, ms. Default (and at least) 900 000. */
  readonly gracePeriodMs?: number | undefined
  /** A deposit suggested to buyers, base units. */
  readonly suggestedDeposit?: bigint | undefined
  /** The smallest raise of a voucher taken, base units. Default: any raise. */
  readonly minVoucherDelta?: bigint | undefined
  /** How long a call's hold outlives a process that died while serving it, ms. Default 60 000. */
  readonly holdLeaseMs?: number | undefined
  /**
   * What one unit is. `request` (default): each call pays one unit, held before its answer leaves.
   * `token`: the handler meters its answer with {@link SessionMethod.stream},
   * one unit per event; a call only presents (or raises) the channel's voucher.
   */
  readonly unitType?: 'request' | 'token' | undefined
  /** Price of one unit, base units. Default the route's price. */
  readonly unitPrice?: bigint | undefined
  /** How long a metered stream waits for a higher voucher before it ends, ms. Default 60 000. */
  readonly voucherWaitMs?: number | undefined
  /**
   * How many units of a metered answer one hold pays for (`meterBatches`' `window`; default 16):
   * its units leave once their window's hold is durable, and `spent` follows as the window is
   * settled. A process that dies mid-window loses at most that many units (never the buyer's
   * money). `1` spends every unit after the first durably before it leaves: one write per unit.
   */
  readonly unitWindow?: number | undefined
  /** Clock in ms. Default `Date.now`. */
  readonly now?: (() => number) | undefined
  /**
   * Told of each cooperative close that paid the payee (trigger `close`), as the settler's
   * `onSettled` is of its settlements: where a seller records its sales.
   */
  readonly onSettled?: ((settlement: ChannelSettlement) => void) | undefined
}

/** The session payment method, with the metering of answers priced per unit. */
export type SessionMethod = PaymentMethod & {
  /** What one unit is (`request`, or the unit a handler meters). */
  readonly unitType: 'request' | 'token'
  /** How many units of a metered answer one hold pays for ({@link SessionMethodOptions.unitWindow}). */
  readonly unitWindow: number
  /**
   * Meters an event stream (an upstream's `text/event-stream` body) against the channel that paid
   * `payment`, one unit per event (`[DONE]`, comments and named events pass free): each event's
   * price is committed into the channel's `spent` just before the event is sent; when the vouchers
   * run out, a `payment-need-voucher` event asks for more and the stream waits (bounded); the
   * stream ends with a `payment-receipt` event. An event never sent is never charged.
   * @throws {@link PaymentError} `invalid_options` when `payment` was not paid by this method.
   */
  stream(
    payment: MeteredPayment,
    body: ReadableStream<Uint8Array>,
    options?: SessionStreamOptions,
  ): ReadableStream<Uint8Array>
}

const minGrace = 900_000

/**
 * How many units of a metered answer one hold pays for by default (see `meterBatches`' `window`):
 * the first window is held with the call's voucher. The buyer's client signs 64 units ahead by
 * default.
 */
const defaultUnitWindow = 16

/** The details of a session refusal a 402 carries as members. */
const sessionMembers = ['channelId', 'requiredCumulative', 'acceptedCumulative', 'deposit'] as const

/**
 * The last credential parsed, kept for the `settle` that follows its `classify` (the same string):
 * a session call's credential is about 2 KB of base64url JSON, parsed once.
 */
let lastParsed: { readonly value: string; readonly credential: Credential } | undefined

/** Parses a credential, reusing the parse of the same string just before. */
function parseOnce(value: string): Credential {
  if (lastParsed?.value === value) return lastParsed.credential
  const credential = parseCredential(value)
  lastParsed = { value, credential }
  return credential
}

/** Whether a credential is a session's (its echoed challenge's intent), without throwing. */
function isSessionCredential(value: string): boolean {
  try {
    return parseOnce(value).challenge.intent === 'session'
  } catch {
    return false
  }
}

/**
 * The MPP `session` payment method of a seller; see the module's description. Offer it beside the
 * others on the routes that take sessions (`methods: [...Methods.builtInMethods, session]`): a
 * route's price is then the price of one call.
 *
 * @example
 * ```ts
 * const session = createSessionMethod({ client, signer, package: pkg, registry, store })
 * const paywall = createPaywall({ ...options, methods: [...Methods.builtInMethods, session] })
 * ```
 */
export function createSessionMethod(options: SessionMethodOptions): SessionMethod {
  const { client, signer, store } = options
  const packageId = normalizeSuiAddress(options.package)
  const registry = normalizeSuiAddress(options.registry)
  const graceMs = options.gracePeriodMs ?? minGrace
  if (!Number.isInteger(graceMs) || graceMs < minGrace) {
    throw new PaymentError('invalid_config', 'A session grace period is at least 900000 ms.')
  }
  const holdLeaseMs = options.holdLeaseMs ?? 60_000
  const now = options.now ?? Date.now
  const seller = normalizeSuiAddress(signer.toSuiAddress())
  const requests = new WeakMap<PreparedTerms, string>()
  const unitType = options.unitType ?? 'request'
  const metered = unitType !== 'request'
  const priceOf = (terms: PreparedTerms) => options.unitPrice ?? terms.price
  if (options.unitPrice !== undefined && options.unitPrice <= 0n) {
    throw new PaymentError('invalid_config', 'A session unit price is above zero.')
  }
  const meterWindow = options.unitWindow ?? defaultUnitWindow
  if (!Number.isInteger(meterWindow) || meterWindow < 1 || meterWindow > 10_000) {
    throw new PaymentError('invalid_config', 'A session unitWindow is a whole number, 1 to 10000.')
  }

  /** Streams waiting for a voucher on a channel, woken when this process takes one. */
  const waits = createVoucherWaits()
  const wake = waits.wake
  const channels = createSellerChannels({
    client,
    store,
    packageId,
    registry,
    graceMs,
    seller,
    minVoucherDelta: options.minVoucherDelta,
    wake,
  })
  const { receipt, answered, holdCall, heldLater, meteredCall, meteredOf } = createCallBooks(
    store,
    now,
  )
  const closing: CloseContext = {
    client,
    signer,
    store,
    packageId,
    seller,
    channels,
    receipt,
    answered,
    onSettled: options.onSettled,
  }

  /** The session challenge's `request` for a route's terms (per unit: the route's price). */
  function requestOf(terms: PreparedTerms): string {
    let request = requests.get(terms)
    if (request === undefined) {
      request = encodeRequest({
        amount: priceOf(terms).toString(),
        unitType,
        ...(options.suggestedDeposit === undefined
          ? {}
          : { suggestedDeposit: options.suggestedDeposit.toString() }),
        currency: terms.asset,
        recipient: terms.payTo,
        methodDetails: {
          network: options.network ?? terms.network.replace(/^sui:/, ''),
          package: packageId,
          registry,
          gracePeriodMs: graceMs,
          ...(options.minVoucherDelta === undefined
            ? {}
            : { minVoucherDelta: options.minVoucherDelta.toString() }),
        },
      })
      requests.set(terms, request)
    }
    return request
  }

  async function settle(credential: string, input: MethodSettleInput): Promise<SettlementResult> {
    const { terms, checkChallenge, context, bare } = input
    let parsed: Credential
    try {
      parsed = parseOnce(credential)
    } catch (error) {
      if (isPaymentError(error)) return refuse(error)
      throw error
    }
    const { id, expires } = parsed.challenge
    const verdict = checkChallenge(id, expires, { intent: 'session', request: requestOf(terms) })
    if (verdict.status !== 'valid') return refuse(verdict.error)
    const payload = sessionPayloadSchema.safeParse(parsed.payload)
    if (!payload.success) {
      return refuse(new PaymentError('invalid_payload', 'The session payload is not valid.'))
    }
    const p = payload.data
    const wrong = channels.checkDescriptor(p, terms)
    if (wrong !== undefined) return refuse(wrong)

    if ('type' in p && p.type === 'transaction') {
      // The buyer's own signed transaction (an open or a top-up), executed by the seller; in any
      // case the channel is read back from the ledger: the books follow what the ledger holds.
      {
        const outcome = await context.ledger.execute(
          Buffer.from(p.transaction, 'base64'),
          p.transactionSignatures,
        )
        if (outcome.status !== 'executed' || !outcome.transaction.success) {
          return refuse(
            new PaymentError('transaction_failed', "The channel's transaction did not execute."),
          )
        }
      }
    }
    const channel = await channels.channelOf(p)
    if (isPaymentError(channel)) return refuse(channel)

    switch (p.action) {
      case 'topUp': {
        const state = await channels.readOpened(p)
        if (isPaymentError(state)) return refuse(state)
        const seen = await store.observe(channel.channelId, { deposit: state.deposited })
        if (seen !== undefined) channels.remember(seen)
        wake(channel.channelId)
        return answered(receipt(id, seen ?? channel))
      }
      case 'close':
        return closeChannel(closing, channel, p, id)
      case 'open':
      case 'voucher': {
        // A call (not a bare raise, nor a metered answer, charged as it is sent) holds its price
        // in the same step of the store as its voucher. A metered call holds its first unit's
        // price there when the headroom covers it: its answer's first unit is paid from it.
        const price = priceOf(terms)
        const hold = bare
          ? undefined
          : { amount: price, holdId: crypto.randomUUID(), leaseUntil: now() + holdLeaseMs }
        if (metered && hold !== undefined) {
          const window = { ...hold, amount: price * BigInt(meterWindow) }
          const early = await channels.earlyVoucher(channel, p, window, { for: 'unit' })
          if (isPaymentError(early)) return refuse(early)
          if (early !== undefined) return meteredCall(channel, price, early.record)
        }
        if (hold !== undefined && !metered && input.holdsAnswer) {
          // The caller holds the answer until the voucher and hold are durable: the handler starts
          // while they are written.
          const early = await channels.earlyVoucher(channel, p, hold)
          if (isPaymentError(early)) return refuse(early)
          if (early !== undefined) return heldLater(channel, price, id, hold.holdId, early.recorded)
        }
        const taken = await channels.takeVoucher(
          channel,
          p.cumulativeAmount,
          p.signature,
          metered ? undefined : hold,
        )
        if (isPaymentError(taken)) return refuse(taken)
        if (bare) return answered(receipt(id, taken.channel))
        if (metered) return meteredCall(taken.channel, price)
        return holdCall(taken.channel, price, id, taken)
      }
    }
  }

  const stream = createSessionStream({
    store,
    waits,
    meteredOf,
    unitWindow: meterWindow,
    holdLeaseMs,
    voucherWaitMs: options.voucherWaitMs,
    now,
  })

  return {
    name: 'mppSession',
    dialect: 'mpp',
    unitType,
    unitWindow: meterWindow,
    stream,
    buyerSubmits: true,
    server: {
      label: 'MPP session',
      how: 'Authorization: Payment (MPP session)',
      unsupportedCode: 'method_unsupported',
      answersBare: true,
      classify(headers) {
        const authorization = headers.get('authorization')
        if (authorization === null) return undefined
        const value = findScheme(authorization, paymentScheme)
        return value !== undefined && isSessionCredential(value) ? value : undefined
      },
      challenge(parts, input) {
        const request = requestOf(input.terms)
        const mine = formatChallenge({
          id: input.idFor({ intent: 'session', request }),
          realm: input.terms.realm,
          method: 'sui',
          intent: 'session',
          request,
          ...(input.terms.description === '' ? {} : { description: input.terms.description }),
          expires: input.expires,
          opaque: input.terms.opaque,
        })
        const given = parts.headers[mppHeaders.wwwAuthenticate]
        return {
          ...parts,
          headers: {
            ...parts.headers,
            [mppHeaders.wwwAuthenticate]: given === undefined ? mine : `${given}, ${mine}`,
          },
        }
      },
      explain(parts, error) {
        // What a buyer needs to answer a session refusal: the amounts, as mppx's problem members.
        const members: Record<string, unknown> = {}
        for (const name of sessionMembers) {
          const value = error.details[name]
          if (typeof value === 'string') members[name] = value
        }
        return Object.keys(members).length === 0
          ? parts
          : { ...parts, body: { ...parts.body, ...members } }
      },
      settle,
      successHeaders() {
        // Every paid session call carries its books' headers (see `holdCall`).
        return () => ({})
      },
    },
    client: {
      label: 'mpp session',
      rank: 1,
      read: () => ({ offers: [], unreadable: [] }),
      escrowTerms: () => undefined,
      async pay() {
        return {
          status: 'failed',
          error: new PaymentError('DIALECT_UNSUPPORTED', 'Sessions are paid by a session client.'),
          moneyMayHaveMoved: false,
        }
      },
      receipt: () => undefined,
    },
  }
}
