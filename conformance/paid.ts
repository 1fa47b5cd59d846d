/**
 * The `paid` checks: real payments from a funded test wallet against a test ledger — a correct
 * payment in each offered dialect is served with a valid receipt whose digest is on the ledger,
 * and every wrong payment (replayed, underpaid, wrong asset, wrong recipient, expired challenge) is
 * answered 402 and not served.
 *
 * @module
 */
import { normalizeStructTag, normalizeSuiAddress } from '@mysten/sui/utils'
import { Mpp, X402, X402V2 } from 'tollgate'
import type { TestPaymentOptions } from 'tollgate/testing'
import { z } from 'zod'
import {
  type CheckContext,
  type CheckDefinition,
  error,
  fail,
  pass,
  skip,
  type Verdict,
} from './check.js'
import { type Observation, observe } from './observe.js'
import {
  freshChallenge,
  onLedger,
  type PaidState,
  type ProbeOffer,
  payAndPresent,
  payToOf,
  payV2AndPresent,
} from './payer.js'

/** `pass` when a payment was answered 402 (with its code), `fail` when served or answered otherwise. */
export function refused(observation: Observation, what: string): Verdict {
  const evidence = [observation.exchange]
  const response = observation.response
  if (response === undefined) return error(`no answer: ${observation.exchange.error}`, { evidence })
  if (response.status === 402) {
    let code: unknown
    try {
      code = z.looseObject({ code: z.unknown() }).safeParse(JSON.parse(response.body)).data?.code
    } catch {
      code = undefined
    }
    return pass(`${what} was answered 402${typeof code === 'string' ? ` (${code})` : ''}`, {
      evidence,
    })
  }
  return fail(
    `${what} was answered ${response.status}${response.status < 300 ? ' and served' : ''}`,
    {
      evidence,
    },
  )
}

type Needs = { state: PaidState } | { verdict: Verdict }

function needs(context: CheckContext): Needs {
  if (context.first?.observation.response?.status !== 402) {
    return { verdict: skip('no well-formed 402 to pay (see gate b)') }
  }
  if (context.paid === undefined) {
    return { verdict: error('paid mode needs a test ledger (ledger) and a funded wallet (wallet)') }
  }
  return { state: context.paid }
}

/** Runs a paid check with its prerequisites; ledger or signing failures are errors, not failures. */
export function paidCheck(
  definition: Omit<CheckDefinition, 'mode' | 'run'>,
  run: (context: CheckContext, state: PaidState) => Promise<Verdict>,
): CheckDefinition {
  return {
    ...definition,
    mode: 'paid',
    async run(context) {
      const ready = needs(context)
      if ('verdict' in ready) return ready.verdict
      try {
        return await run(context, ready.state)
      } catch (cause) {
        return error(`could not pay: ${(cause as Error).message}`)
      }
    },
  }
}

async function served(
  context: CheckContext,
  state: PaidState,
  dialect: 'x402' | 'mpp',
): Promise<Verdict> {
  const fresh = await freshChallenge(context)
  const offer = fresh[dialect]
  if (offer === undefined)
    return skip(
      `no ${dialect === 'x402' ? 'x402' : 'MPP'} challenge for ${context.network} offered`,
    )
  const paid = await payAndPresent(context, state, offer)
  const evidence = [fresh.exchange, paid.observation.exchange]
  const response = paid.observation.response
  if (response === undefined)
    return error(`no answer: ${paid.observation.exchange.error}`, { evidence })
  if (response.status < 200 || response.status > 299) {
    return fail(`a correct payment was answered ${response.status}`, { evidence })
  }
  let digest: string
  if (dialect === 'x402') {
    state.x402Header = paid.credential
    const header = response.headers['x-payment-response']
    if (header === undefined)
      return fail('served without an X-PAYMENT-RESPONSE header', { evidence })
    try {
      const receipt = X402.decodeXPaymentResponse(header)
      if (!receipt.success) return fail('X-PAYMENT-RESPONSE says success: false', { evidence })
      if (receipt.network !== context.network) {
        return fail(`X-PAYMENT-RESPONSE names network ${receipt.network}`, { evidence })
      }
      digest = receipt.transaction
    } catch (cause) {
      return fail(`X-PAYMENT-RESPONSE does not decode: ${(cause as Error).message}`, { evidence })
    }
  } else {
    state.mppAuthorization = paid.credential
    const header = response.headers['payment-receipt']
    if (header === undefined) return fail('served without a Payment-Receipt header', { evidence })
    try {
      const receipt = Mpp.decodeReceipt(header)
      if (receipt.reference !== paid.digest) {
        return fail(
          `the receipt's reference ${receipt.reference} is not the paid digest ${paid.digest}`,
          { evidence },
        )
      }
      digest = receipt.reference
    } catch (cause) {
      return fail(`Payment-Receipt does not decode: ${(cause as Error).message}`, { evidence })
    }
  }
  const problem = await onLedger(context, state, digest, payToOf(offer), offer.amount)
  if (problem !== undefined) return fail(problem, { evidence, details: { digest } })
  return pass(`served; digest ${digest} is on the ledger and paid ${payToOf(offer)}`, {
    evidence,
    details: { digest },
  })
}

/** A correct x402 version 2 payment: served with a `PAYMENT-RESPONSE` whose digest paid. */
async function servedV2(context: CheckContext, state: PaidState): Promise<Verdict> {
  const fresh = await freshChallenge(context)
  const offer = fresh.v2
  if (offer === undefined) return skip(`no x402 version 2 entry for ${context.network} offered`)
  const paid = await payV2AndPresent(context, state, offer)
  const evidence = [fresh.exchange, paid.observation.exchange]
  const response = paid.observation.response
  if (response === undefined)
    return error(`no answer: ${paid.observation.exchange.error}`, { evidence })
  if (response.status < 200 || response.status > 299) {
    return fail(`a correct version 2 payment was answered ${response.status}`, { evidence })
  }
  state.x402V2 = { header: paid.header, transaction: paid.transaction, signature: paid.signature }
  const header = response.headers['payment-response']
  if (header === undefined) return fail('served without a PAYMENT-RESPONSE header', { evidence })
  let digest: string
  try {
    const receipt = X402V2.decodePaymentResponseV2(header)
    if (!receipt.success) return fail('PAYMENT-RESPONSE says success: false', { evidence })
    if (receipt.network !== context.network) {
      return fail(`PAYMENT-RESPONSE names network ${receipt.network}`, { evidence })
    }
    digest = receipt.transaction
  } catch (cause) {
    return fail(`PAYMENT-RESPONSE does not decode: ${(cause as Error).message}`, { evidence })
  }
  const problem = await onLedger(context, state, digest, offer.accepted.payTo, offer.amount)
  if (problem !== undefined) return fail(problem, { evidence, details: { digest } })
  return pass(`served; digest ${digest} is on the ledger and paid ${offer.accepted.payTo}`, {
    evidence,
    details: { digest },
  })
}

/** The served version 2 payment presented again, as version 2 and (when offered) as version 1. */
async function replayedV2(context: CheckContext, state: PaidState): Promise<Verdict> {
  const served = state.x402V2
  if (served === undefined) return skip('no served x402 version 2 payment to replay')
  const present = (headers: Record<string, string>) =>
    observe(context.url, {
      ...context.probeOptions,
      method: context.method,
      headers: { 'content-type': 'application/json', ...headers },
      body: context.body,
    })
  const again = refused(
    await present({ 'payment-signature': served.header }),
    'the replayed version 2 payment',
  )
  if (again.status !== 'pass') return again
  const fresh = await freshChallenge(context)
  const id = fresh.x402?.dialect === 'x402' ? fresh.x402.requirement.extra?.challengeId : undefined
  if (typeof id !== 'string') return again
  const asV1 = X402.encodeXPayment({
    network: context.network,
    payload: { challengeId: id, transaction: served.transaction, signature: served.signature },
  })
  const crossed = refused(
    await present({ 'x-payment': asV1 }),
    'the same transfer presented as version 1',
  )
  return {
    ...crossed,
    message: `${again.message}; ${crossed.message}`,
    evidence: [...(again.evidence ?? []), fresh.exchange, ...(crossed.evidence ?? [])],
  }
}

async function wrongPayment(
  context: CheckContext,
  state: PaidState,
  what: string,
  overrides: (offer: ProbeOffer) => Promise<TestPaymentOptions | Verdict>,
): Promise<Verdict> {
  const fresh = await freshChallenge(context)
  const offer = fresh.primary
  if (offer === undefined) return skip(`no payable challenge for ${context.network}`)
  const chosen = await overrides(offer)
  if ('status' in chosen) return chosen
  const paid = await payAndPresent(context, state, offer, chosen)
  const verdict = refused(paid.observation, what)
  return { ...verdict, evidence: [fresh.exchange, ...(verdict.evidence ?? [])] }
}

/**
 * Fetches the challenge the expiry check pays once it has expired, at the start of the paid phase
 * (so that the wait overlaps the other checks).
 */
export async function prepareExpiry(context: CheckContext, state: PaidState): Promise<void> {
  const fresh = await freshChallenge(context)
  const offer = fresh.primary
  if (offer === undefined) return
  let expiresAtMs: number | undefined
  const mppExpiry = (challenge: Mpp.Challenge | undefined) =>
    challenge?.expires === undefined ? undefined : Date.parse(challenge.expires)
  if (offer.dialect === 'mpp') {
    expiresAtMs = mppExpiry(offer.challenge)
  } else if (
    fresh.mpp?.dialect === 'mpp' &&
    fresh.mpp.challenge.id === offer.requirement.extra?.challengeId
  ) {
    // Both dialects share one challenge: MPP states its exact expiry.
    expiresAtMs = mppExpiry(fresh.mpp.challenge)
  }
  if (expiresAtMs === undefined && offer.dialect === 'x402') {
    const seconds = Number(offer.requirement.maxTimeoutSeconds)
    if (Number.isInteger(seconds) && seconds > 0)
      expiresAtMs = fresh.issuedAtMs + 2 * seconds * 1000
  }
  if (expiresAtMs === undefined) return
  // One second of margin for clocks that tick at different moments.
  state.expiring = { offer, expiresAtMs: expiresAtMs + 1_000, exchange: fresh.exchange }
}

/** The paid checks, in report order. */
export const paidChecks: readonly CheckDefinition[] = [
  paidCheck(
    {
      id: 'paid.x402-served',
      gate: 'protocol',
      title: 'a correct x402 payment is served with X-PAYMENT-RESPONSE',
      hint: 'Settle the X-PAYMENT transaction, check its effects, then serve with X-PAYMENT-RESPONSE: base64 {"success":true,"transaction":<digest>,"network":"sui:mainnet","payer":…}.',
    },
    (context, state) => served(context, state, 'x402'),
  ),
  paidCheck(
    {
      id: 'paid.x402-replay',
      gate: 'protocol',
      title: 'the same x402 payment replayed gets 402',
      hint: 'Record every settled digest in a shared store and refuse a digest the second time (replay).',
    },
    async (context, state) => {
      if (state.x402Header === undefined) return skip('no served x402 payment to replay')
      const observation = await observe(context.url, {
        ...context.probeOptions,
        method: context.method,
        headers: { 'content-type': 'application/json', 'x-payment': state.x402Header },
        body: context.body,
      })
      return refused(observation, 'the replayed payment')
    },
  ),
  paidCheck(
    {
      id: 'paid.x402v2-served',
      gate: 'protocol',
      title: 'a correct x402 version 2 payment is served with PAYMENT-RESPONSE (if offered)',
      hint: 'Settle the PAYMENT-SIGNATURE transaction (its accepted must be the route terms), check its effects, then serve with PAYMENT-RESPONSE: base64 {"success":true,"transaction":<digest>,"network":…,"payer":…}.',
    },
    (context, state) => servedV2(context, state),
  ),
  paidCheck(
    {
      id: 'paid.x402v2-replay',
      gate: 'protocol',
      title: 'the same x402 version 2 payment replayed, or presented as version 1, gets 402',
      hint: 'Claim each digest once in a shared store, whatever the version or dialect it came in.',
    },
    (context, state) => replayedV2(context, state),
  ),
  paidCheck(
    {
      id: 'paid.mpp-served',
      gate: 'protocol',
      title: 'a correct MPP credential (digest + proof) is served with Payment-Receipt',
      hint: 'Look the digest up on the ledger, check the proof signature by the sender, then serve with Payment-Receipt (reference = digest).',
    },
    (context, state) => served(context, state, 'mpp'),
  ),
  paidCheck(
    {
      id: 'paid.mpp-replay',
      gate: 'protocol',
      title: 'the same MPP credential replayed gets 402',
      hint: 'Claim each digest once in a shared store; a second presentation is a replay.',
    },
    async (context, state) => {
      if (state.mppAuthorization === undefined) return skip('no served MPP payment to replay')
      const observation = await observe(context.url, {
        ...context.probeOptions,
        method: context.method,
        headers: { 'content-type': 'application/json', authorization: state.mppAuthorization },
        body: context.body,
      })
      return refused(observation, 'the replayed credential')
    },
  ),
  paidCheck(
    {
      id: 'paid.underpayment',
      gate: 'protocol',
      title: 'an underpayment gets 402 and is not served',
      hint: 'Compare the USDC balance change to payTo with maxAmountRequired after settlement (bigint, base units).',
    },
    (context, state) =>
      wrongPayment(context, state, 'a payment one base unit short', async (offer) =>
        offer.amount <= 1n
          ? skip('the price is too small to underpay')
          : { amount: offer.amount - 1n },
      ),
  ),
  paidCheck(
    {
      id: 'paid.wrong-asset',
      gate: 'protocol',
      title: 'a payment in another coin gets 402 and is not served',
      hint: 'Accept only the USDC coin type (compare with normalizeStructTag); wUSDC and other coins are not USDC.',
    },
    (context, state) =>
      wrongPayment(context, state, 'a payment in another coin', async (offer) => {
        const coinType = await otherCoin(context, state, offer.amount)
        return coinType === undefined
          ? skip(
              'the wallet holds no coin other than USDC and SUI to pay with (fund it with wUSDC)',
            )
          : { coinType }
      }),
  ),
  paidCheck(
    {
      id: 'paid.wrong-recipient',
      gate: 'protocol',
      title: 'a payment to someone else gets 402 and is not served',
      hint: 'Check that the USDC balance change went to payTo, not merely that the transaction succeeded.',
    },
    (context, state) =>
      wrongPayment(context, state, 'a payment to another address', async () => ({
        to: normalizeSuiAddress(`0x${'c0ffee'.padStart(64, '0')}`),
      })),
  ),
  paidCheck(
    {
      id: 'paid.expired-challenge',
      gate: 'protocol',
      title: 'a payment for an expired challenge gets 402 and is not served',
      hint: 'Bind an expiry into each challenge id and refuse a payment presented after it (challenge_expired).',
    },
    async (context, state) => {
      const expiring = state.expiring
      if (expiring === undefined) return skip('no challenge with a known expiry was offered')
      const waitMs = expiring.expiresAtMs - Date.now()
      if (waitMs > state.maxExpiryWaitMs) {
        return skip(
          `the challenge expires in ${Math.ceil(waitMs / 1000)} s, beyond the ${state.maxExpiryWaitMs} ms wait allowed`,
        )
      }
      // Tell the person watching, every 10 s, instead of a minute of silence.
      for (let left = waitMs; left > 0; left = expiring.expiresAtMs - Date.now()) {
        context.progress?.(`waiting for the challenge to expire: ${Math.ceil(left / 1000)} s left`)
        await new Promise((resolve) => setTimeout(resolve, Math.min(left, 10_000)))
      }
      context.progress?.('the challenge has expired: paying it')
      const paid = await payAndPresent(context, state, expiring.offer)
      const verdict = refused(paid.observation, 'a payment for an expired challenge')
      return { ...verdict, evidence: [expiring.exchange, ...(verdict.evidence ?? [])] }
    },
  ),
]

async function otherCoin(
  context: CheckContext,
  state: PaidState,
  amount: bigint,
): Promise<string | undefined> {
  const client = context.client
  if (client === undefined) return undefined
  const { balances } = await client.core.listBalances({ owner: state.payer.toSuiAddress() })
  const usdc = normalizeStructTag(context.usdc)
  const sui = normalizeStructTag('0x2::sui::SUI')
  const found = balances.find((b) => {
    const type = normalizeStructTag(b.coinType)
    return type !== usdc && type !== sui && BigInt(b.coinBalance) >= amount
  })
  return found?.coinType
}
