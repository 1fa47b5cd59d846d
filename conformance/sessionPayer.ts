/**
 * The payer of the session checks: opens one payment channel on a seller's session offer with a
 * small deposit, through the package's own session buyer (`createSessionFetch` of
 * `tollgate/client`, on a channel package the suite pins), pays a call by voucher, presents
 * vouchers of its own choosing (one seen before, a lower one, one on a closed channel), and closes
 * what it opened. Every request goes through the suite's probe and is kept as evidence.
 *
 * @module
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { fromHex, normalizeSuiAddress, toHex } from '@mysten/sui/utils'
import { Mpp, Session } from 'tollgate'
import {
  type ChannelBook,
  type ChannelEntry,
  createChannelBook,
  createSessionFetch,
  type SessionFetch,
} from 'tollgate/client'
import { readLocalLedger } from 'tollgate/testing'
import type { CheckContext } from './check.js'
import { type Observation, observe, readSession, type SessionRequest } from './observe.js'
import type { PaidState } from './payer.js'
import type { Exchange } from './report.js'

/** How the session checks open a channel. */
export type SessionOptions = {
  /**
   * The channel package and registry the payer trusts. A seller's offer naming others is not paid
   * (the payer signs calls only into a package it pinned). Default: the local ledger's, when
   * `ledgerUrl` is one.
   */
  channels?: { package: string; registry: string } | undefined
  /** Most the channel may hold, base units: the deposit is four calls' price, within it. */
  maxDeposit: bigint
  /** The ledger's URL, asked for its channel package when `channels` is not given. */
  ledgerUrl?: string | undefined
}

/** The channel the session checks opened, and what they learned of it. */
export type SessionState = {
  sessions: SessionFetch
  book: ChannelBook
  /** The folder of the suite's own channel book (removed once the channel is closed). */
  folder: string
  /** The requests sent so far, redacted (each check takes the ones it sent). */
  log: Exchange[]
  /** The `Authorization` of the last request the buyer sent, as sent. */
  lastAuthorization?: string | undefined
  price: bigint
  channel?: ChannelEntry | undefined
  /** The call the voucher round trip served: its credential and voucher amount. */
  served?: { authorization: string; amount: bigint } | undefined
  /** Set once the channel is closed (cooperatively, or asked to close on the ledger). */
  closed?: string | undefined
}

/** A `fetch` over the suite's probe: requests are recorded in `state.log`, credentials in `lastAuthorization`. */
function probeFetch(
  context: CheckContext,
  state: Pick<SessionState, 'log' | 'lastAuthorization'>,
): typeof fetch {
  return async (input, init = {}) => {
    const headers: Record<string, string> = {}
    new Headers(init.headers).forEach((value, name) => {
      headers[name] = value
    })
    state.lastAuthorization = headers.authorization
    const observation = await observe(String(input), {
      ...context.probeOptions,
      method: init.method ?? 'GET',
      headers,
      body: typeof init.body === 'string' ? init.body : undefined,
    })
    state.log.push(observation.exchange)
    const response = observation.response
    if (response === undefined) throw observation.error
    const empty = response.status === 204 || response.status === 205 || response.status === 304
    return new Response(empty ? null : response.body, {
      status: response.status,
      headers: response.headers,
    })
  }
}

/** The pinned channel package, or why there is none. */
async function pinnedChannels(
  options: SessionOptions | undefined,
): Promise<{ package: string; registry: string } | string> {
  if (options?.channels !== undefined) return options.channels
  if (options?.ledgerUrl !== undefined) {
    const found = await readLocalLedger(options.ledgerUrl)
    if (found.status === 'local' && found.ledger.channelRegistry !== undefined) {
      return { package: found.ledger.modulesPackage, registry: found.ledger.channelRegistry }
    }
  }
  return 'no channel package is pinned for this ledger (pass sessionChannels: the package and registry you trust)'
}

/**
 * Opens a channel on the seller's session offer and pays one call by voucher. Returns the state
 * (recorded on the context before anything is signed, so that a later check closes what was
 * opened) and the answer to the call; a string says why nothing was paid.
 */
export async function openAndPay(
  context: CheckContext,
  paid: PaidState,
  request: SessionRequest,
): Promise<{ state: SessionState; response: Response } | string> {
  const client = context.client
  if (client === undefined) return 'paid checks need a ledger client'
  const pinned = await pinnedChannels(context.sessionOptions)
  if (typeof pinned === 'string') return pinned
  const details = request.methodDetails
  if (
    normalizeSuiAddress(details.package) !== normalizeSuiAddress(pinned.package) ||
    normalizeSuiAddress(details.registry) !== normalizeSuiAddress(pinned.registry)
  ) {
    return `the offer names channel package ${details.package} and registry ${details.registry}, not the pinned ${pinned.package} and ${pinned.registry}`
  }
  const folder = await mkdtemp(join(tmpdir(), 'tollgate-conformance-'))
  const book = createChannelBook(join(folder, 'sessions.json'))
  const price = BigInt(request.amount)
  const log: Exchange[] = []
  const recorder: Pick<SessionState, 'log' | 'lastAuthorization'> = { log }
  const sessions = createSessionFetch({
    signer: paid.payer,
    client,
    pinned: [{ network: details.network, package: pinned.package, registry: pinned.registry }],
    maxDeposit: context.sessionOptions?.maxDeposit ?? 1_000_000n,
    deposit: (unit) => unit * 4n,
    book,
    fetch: probeFetch(context, recorder),
  })
  // The recorder becomes the state: the fetch above writes into it.
  const state: SessionState = Object.assign(recorder, { sessions, book, folder, log, price })
  context.session = state
  try {
    const response = await sessions.fetch(context.url, {
      method: context.method,
      headers: { 'content-type': 'application/json' },
      body: context.body,
    })
    return { state, response }
  } finally {
    // Found even when the call failed after the open: the last session check closes it.
    state.channel = (await book.list())[0]
  }
}

/** The redacted exchanges sent since `mark` (a length of `state.log`). */
export function exchangesSince(state: SessionState, mark: number): Exchange[] {
  return state.log.slice(mark)
}

/** A fresh 402's session challenge (undefined when the seller no longer offers one). */
async function freshSessionChallenge(
  context: CheckContext,
): Promise<{ challenge?: Mpp.Challenge; exchange: Exchange }> {
  const observation = await observe(context.url, {
    ...context.probeOptions,
    method: context.method,
    headers: { 'content-type': 'application/json' },
    body: context.body,
  })
  const reading =
    observation.response?.status === 402 ? readSession(observation.response) : undefined
  return {
    exchange: observation.exchange,
    ...(reading?.status === 'ok' ? { challenge: reading.challenge } : {}),
  }
}

/** Sends the probe's request with `authorization`. */
export function present(context: CheckContext, authorization: string): Promise<Observation> {
  return observe(context.url, {
    ...context.probeOptions,
    method: context.method,
    headers: { 'content-type': 'application/json', authorization },
    body: context.body,
  })
}

/**
 * The served call's voucher (or a new one for `amount`, signed by the channel's session key) under
 * a fresh session challenge, as an `Authorization` value; undefined when no session is offered any
 * more. `exchange` is the unpaid request that fetched the challenge.
 */
export async function voucherCredential(
  context: CheckContext,
  state: SessionState & { channel: ChannelEntry; served: { authorization: string } },
  amount?: bigint,
): Promise<{ authorization?: string; exchange: Exchange }> {
  const fresh = await freshSessionChallenge(context)
  if (fresh.challenge === undefined) return { exchange: fresh.exchange }
  const served = Mpp.parseCredential(state.served.authorization).payload
  let voucher = { cumulativeAmount: served.cumulativeAmount, signature: served.signature }
  if (amount !== undefined) {
    const key = Ed25519Keypair.fromSecretKey(fromHex(state.channel.sessionKey))
    const signed = await Session.signVoucher(
      { sign: (bytes) => key.sign(bytes) },
      state.channel.channelId,
      amount,
    )
    voucher = { cumulativeAmount: amount.toString(), signature: `0x${toHex(signed.signature)}` }
  }
  const authorization = Mpp.serializeCredential({
    challenge: fresh.challenge,
    payload: {
      action: 'voucher',
      channelId: served.channelId,
      descriptor: served.descriptor,
      ...voucher,
    },
  })
  return { authorization, exchange: fresh.exchange }
}

/**
 * Closes the channel the checks opened: cooperatively at the seller (what was spent is captured,
 * the rest comes back to the payer), else by asking the ledger to close it (the rest can be
 * withdrawn after the grace period). Says what happened; removes the suite's channel book.
 */
export async function closeChannel(state: SessionState): Promise<string> {
  const channel = state.channel
  if (state.closed !== undefined) return state.closed
  if (channel === undefined) {
    await rm(state.folder, { recursive: true, force: true })
    return 'no channel was opened'
  }
  try {
    const closed = await state.sessions.close(channel.channelId)
    state.closed = `closed cooperatively: ${closed.spent} base units spent, ${closed.refunded} back to the payer`
  } catch (cause) {
    try {
      const asked = await state.sessions.withdraw(channel.channelId)
      state.closed =
        asked.status === 'withdrawn'
          ? `the seller did not close it (${(cause as Error).message}); ${asked.refunded} base units withdrawn to the payer`
          : `the seller did not close it (${(cause as Error).message}); a close was asked on the ledger: the payer withdraws the rest once the grace period ends (channel ${channel.channelId})`
    } catch (again) {
      state.closed = `channel ${channel.channelId} is still open: ${(again as Error).message}`
    }
  }
  await rm(state.folder, { recursive: true, force: true })
  return state.closed
}
