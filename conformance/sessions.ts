/**
 * The session checks (docs/conformance.md, "Session checks"; the wire is docs/protocol.md §7): run
 * only for a route whose 402 offers an MPP session (a `Payment` challenge with `intent="session"`).
 * The challenge is judged read-only; in `paid` mode the suite opens a channel with a small deposit,
 * pays a call by voucher, presents a voucher seen before and a lower one (both must be refused),
 * closes the channel cooperatively, and presents a voucher on the closed channel (410). The channel
 * is closed at the end whatever the checks found: the deposit, less what was spent, comes back.
 *
 * @module
 */
import { Mpp, Session } from 'tollgate'
import {
  type CheckContext,
  type CheckDefinition,
  error,
  fail,
  pass,
  skip,
  type Verdict,
} from './check.js'
import type { SessionRequest } from './observe.js'
import { sameAddress, sameCoin } from './offers.js'
import { paidCheck, refused } from './paid.js'
import type { PaidState } from './payer.js'
import type { Exchange } from './report.js'
import {
  closeChannel,
  exchangesSince,
  openAndPay,
  present,
  type SessionState,
  voucherCredential,
} from './sessionPayer.js'

/** Whether the unpaid 402 offers a session (well-formed or not): the session checks apply. */
const offersSession = (context: CheckContext) =>
  context.first?.observation.response?.status === 402 && context.first.session.status !== 'absent'

/** The session challenge's request, or the verdict of a check that has none to work with. */
function offered(context: CheckContext): { request: SessionRequest } | { verdict: Verdict } {
  const reading = context.first?.session
  if (reading?.status !== 'ok' || judgeChallenge(context).status !== 'pass') {
    return { verdict: skip('no session challenge to pay (see session.challenge)') }
  }
  return { request: reading.request }
}

/** The verdict on the session challenge: parses, pays the registered wallet in USDC. */
function judgeChallenge(context: CheckContext): Verdict {
  const reading = context.first?.session
  if (reading === undefined || reading.status === 'absent') return skip('no session offered')
  if (reading.status === 'invalid') {
    return fail(`the session challenge is malformed: ${reading.reason}`)
  }
  const { request } = reading
  if (context.wallet !== null && !sameAddress(request.recipient, context.wallet)) {
    return fail(
      `the session pays ${request.recipient}, not the registered wallet ${context.wallet}`,
    )
  }
  if (!sameCoin(request.currency, context.usdc)) {
    return fail(`the session is priced in ${request.currency}, not USDC (${context.usdc})`)
  }
  const details = request.methodDetails
  return pass(
    `${request.amount} base units per ${request.unitType} on ${details.network}, channel package ${details.package}, grace period ${details.gracePeriodMs} ms`,
  )
}

/** The channel the round trip opened and the call it served, or why a check cannot use them. */
type Served = SessionState & {
  channel: NonNullable<SessionState['channel']>
  served: NonNullable<SessionState['served']>
}
function servedSession(context: CheckContext): Served | Verdict {
  const state = context.session
  if (state?.channel === undefined || state.served === undefined) {
    return skip('no call was served by voucher (see session.voucher-served)')
  }
  return state as Served
}

/** A paid check of a seller offering sessions, with the session challenge's request. */
function sessionCheck(
  definition: Omit<CheckDefinition, 'mode' | 'run' | 'appliesTo'>,
  run: (context: CheckContext, paid: PaidState, request: SessionRequest) => Promise<Verdict>,
): CheckDefinition {
  const check = paidCheck(definition, async (context, paid) => {
    const offer = offered(context)
    return 'verdict' in offer ? offer.verdict : run(context, paid, offer.request)
  })
  return { ...check, appliesTo: offersSession }
}

/** The session challenge: parses, and its request carries the terms a buyer needs. */
export const sessionChallengeCheck: CheckDefinition = {
  id: 'session.challenge',
  gate: 'protocol',
  title: 'the session challenge is well-formed and pays the registered wallet in USDC',
  hint: 'Send a second WWW-Authenticate: Payment challenge with method="sui", intent="session", request=<base64url JCS {amount, unitType, currency (USDC), recipient (the registered wallet), methodDetails:{network, package, registry, gracePeriodMs ≥ 900000}}> (Methods.createSessionMethod does).',
  mode: 'read-only',
  appliesTo: offersSession,
  run: async (context) => judgeChallenge(context),
}

/** Opens a channel and pays one call by voucher: served with a session receipt for the channel. */
async function voucherServed(
  context: CheckContext,
  paid: PaidState,
  request: SessionRequest,
): Promise<Verdict> {
  const opened = await openAndPay(context, paid, request)
  if (typeof opened === 'string') return skip(opened)
  const { state, response } = opened
  const evidence = exchangesSince(state, 0)
  if (state.channel === undefined) return error('no channel was opened', { evidence })
  const channelId = state.channel.channelId
  const details = { channelId, deposit: state.channel.deposit }
  if (response.status < 200 || response.status > 299) {
    return fail(`a call paid by voucher was answered ${response.status}`, { evidence, details })
  }
  const header = response.headers.get('payment-receipt')
  if (header === null) return fail('served without a Payment-Receipt header', { evidence, details })
  let receipt: Mpp.Receipt
  try {
    receipt = Mpp.decodeReceipt(header)
  } catch (cause) {
    return fail(`Payment-Receipt does not decode: ${(cause as Error).message}`, {
      evidence,
      details,
    })
  }
  if (receipt.intent !== 'session') {
    return fail(`the receipt's intent is ${String(receipt.intent)}, not session`, {
      evidence,
      details,
    })
  }
  const checked = Session.sessionReceiptSchema.safeParse(receipt)
  if (!checked.success) {
    const issue = checked.error.issues[0]
    return fail(`the session receipt is malformed: ${issue?.path.join('.')}: ${issue?.message}`, {
      evidence,
      details,
    })
  }
  if (checked.data.channelId !== channelId) {
    return fail(
      `the receipt names channel ${checked.data.channelId}, the voucher paid on ${channelId}`,
      { evidence, details },
    )
  }
  const authorization = state.lastAuthorization
  if (authorization === undefined) return error('the paid request was not recorded', { evidence })
  const amount = BigInt(String(Mpp.parseCredential(authorization).payload.cumulativeAmount))
  state.served = { authorization, amount }
  return pass(
    `served by a voucher for ${amount} on channel ${channelId} (deposit ${state.channel.deposit}); the receipt says session, ${checked.data.spent} spent`,
    { evidence, details },
  )
}

/** The served voucher again: as it was sent, then under a fresh challenge. Neither is served. */
async function voucherReplayed(context: CheckContext): Promise<Verdict> {
  const state = servedSession(context)
  if ('status' in state) return state
  const again = refused(await present(context, state.served.authorization), 'the same credential')
  if (again.status !== 'pass') return again
  const fresh = await voucherCredential(context, state)
  if (fresh.authorization === undefined) return again
  const anew = refused(
    await present(context, fresh.authorization),
    'the same voucher under a fresh challenge',
  )
  return {
    ...anew,
    message: `${again.message}; ${anew.message}`,
    evidence: [...(again.evidence ?? []), fresh.exchange, ...(anew.evidence ?? [])],
  }
}

/** A voucher below the one accepted, never presented before: refused, not served. */
async function voucherLower(context: CheckContext): Promise<Verdict> {
  const state = servedSession(context)
  if ('status' in state) return state
  if (state.served.amount < 2n) return skip('the accepted voucher is too small to go below')
  const lower = state.served.amount - 1n
  const fresh = await voucherCredential(context, state, lower)
  if (fresh.authorization === undefined) {
    return error('the seller no longer offers a session', { evidence: [fresh.exchange] })
  }
  const verdict = refused(
    await present(context, fresh.authorization),
    `a voucher for ${lower}, below the accepted ${state.served.amount},`,
  )
  return { ...verdict, evidence: [fresh.exchange, ...(verdict.evidence ?? [])] }
}

/**
 * Closes the channel cooperatively, then presents a new voucher on it: 410. Closes the channel in
 * any case (this is the last session check), and says how the deposit came back.
 */
async function closedChannel(context: CheckContext): Promise<Verdict> {
  const state = context.session
  if (state === undefined) return skip('no channel was opened')
  if (state.channel === undefined) return skip(await closeChannel(state))
  const mark = state.log.length
  const closing = await closeChannel(state)
  const closeEvidence = exchangesSince(state, mark)
  const details = { channelId: state.channel.channelId, close: closing }
  if (!closing.startsWith('closed cooperatively')) {
    return fail(`the cooperative close failed: ${closing}`, {
      evidence: closeEvidence,
      details,
      hint: 'Answer a close action (a bare POST with a close voucher) with 204 and a Payment-Receipt: close the channel on the ledger, capturing what was spent.',
    })
  }
  const served = servedSession(context)
  if ('status' in served) {
    return skip(`no call was served to judge after the close; the channel was ${closing}`, {
      evidence: closeEvidence,
      details,
    })
  }
  const amount = served.served.amount + served.price
  const fresh = await voucherCredential(context, served, amount)
  if (fresh.authorization === undefined) {
    return error('the seller no longer offers a session', {
      evidence: [...closeEvidence, fresh.exchange],
    })
  }
  const observation = await present(context, fresh.authorization)
  const evidence: Exchange[] = [...closeEvidence, fresh.exchange, observation.exchange]
  const status = observation.response?.status
  if (status === undefined) return error(`no answer: ${observation.exchange.error}`, { evidence })
  if (status === 410) {
    return pass(`a voucher on the closed channel was answered 410; the channel was ${closing}`, {
      evidence,
      details,
    })
  }
  return fail(
    `a voucher on the closed channel was answered ${status}${status < 300 ? ' and served' : ''}, not 410`,
    { evidence, details },
  )
}

/** The paid session checks, in report order (the last one closes the channel). */
export const sessionPaidChecks: readonly CheckDefinition[] = [
  sessionCheck(
    {
      id: 'session.voucher-served',
      gate: 'protocol',
      title: 'a call paid by voucher on a new channel is served with a session receipt',
      hint: 'Read the channel from the ledger on open, check the voucher signature by its session key, hold the price, serve, and answer with Payment-Receipt {intent:"session", channelId, acceptedCumulative, spent}.',
    },
    (context, paid, request) => voucherServed(context, paid, request),
  ),
  sessionCheck(
    {
      id: 'session.voucher-replay',
      gate: 'protocol',
      title: 'the same voucher presented again gets 402',
      hint: 'Record every voucher amount accepted on a channel, atomically with the highest; a voucher presented again pays nothing (replay).',
    },
    (context) => voucherReplayed(context),
  ),
  sessionCheck(
    {
      id: 'session.voucher-lower',
      gate: 'protocol',
      title: 'a voucher lower than the accepted one gets 402',
      hint: 'Pay a call only out of the headroom: highest voucher − spent − held must cover the price; a lower voucher does not raise it (insufficient-balance).',
    },
    (context) => voucherLower(context),
  ),
  sessionCheck(
    {
      id: 'session.closed-410',
      gate: 'protocol',
      title: 'after a cooperative close, a voucher on the channel gets 410',
      hint: 'Mark a closed channel closed in the channel store and answer any voucher on it with 410 (channel-finalized).',
    },
    (context) => closedChannel(context),
  ),
]
