/**
 * The payer of the `paid` checks: fetches a fresh challenge, pays one of its offers from the
 * funded test wallet (rightly, or wrongly on purpose), presents the payment to the seller, and
 * finds the payment on the ledger.
 *
 * @module
 */
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { normalizeStructTag, normalizeSuiAddress } from '@mysten/sui/utils'
import { type Ledger, type Mpp, PaymentError, X402, X402V2 } from 'tollgate'
import {
  mppAuthorization,
  signTestPayment,
  type TestPaymentOptions,
  x402PaymentHeader,
} from 'tollgate/testing'
import type { CheckContext } from './check.js'
import {
  type LenientRequirement,
  type Observation,
  observe,
  readMpp,
  readX402,
  readX402V2,
} from './observe.js'
import { chargeOfSafe } from './offers.js'
import type { Exchange } from './report.js'

/** What the paid checks need besides the read-only context. */
export type PaidState = {
  payer: Ed25519Keypair
  ledger: Ledger
  /** Longest wait for a challenge to expire; beyond it the expiry check is skipped. */
  maxExpiryWaitMs: number
  /** Filled as the checks go. */
  x402Header?: string
  /** The served x402 version 2 payment: its header and the transfer it carries. */
  x402V2?: { header: string; transaction: string; signature: string }
  mppAuthorization?: string
  /** A challenge fetched at the start of the paid phase, used once it has expired. */
  expiring?: { offer: ProbeOffer; expiresAtMs: number; exchange: Exchange } | undefined
}

/** One payable challenge. */
export type ProbeOffer =
  | { dialect: 'x402'; requirement: LenientRequirement; amount: bigint }
  | { dialect: 'mpp'; challenge: Mpp.Challenge; amount: bigint }

/** An x402 version 2 offer: the `PAYMENT-REQUIRED` and its entry for our network. */
export type V2Offer = {
  required: X402V2.PaymentRequiredV2
  accepted: X402V2.PaymentRequirementV2
  amount: bigint
}

/** A fresh 402 and the payable challenges in it (`primary`: x402 when offered, else MPP). */
export type Fresh = {
  x402?: ProbeOffer
  /** The x402 version 2 offer, when the 402 carries `PAYMENT-REQUIRED`. */
  v2?: V2Offer
  mpp?: ProbeOffer
  primary?: ProbeOffer
  exchange: Exchange
  issuedAtMs: number
}

/** Gets a fresh 402 and the payable challenges in it. */
export async function freshChallenge(context: CheckContext): Promise<Fresh> {
  const issuedAtMs = Date.now()
  const observation = await observe(context.url, {
    ...context.probeOptions,
    method: context.method,
    headers: { 'content-type': 'application/json' },
    body: context.body,
  })
  const out: Fresh = { exchange: observation.exchange, issuedAtMs }
  const response = observation.response
  if (response === undefined || response.status !== 402) return out
  const x402 = readX402(response)
  if (x402.status === 'ok') {
    const requirement = x402.accepts.find((a) => a.network === context.network)
    if (
      requirement !== undefined &&
      X402.baseUnitsSchema.safeParse(requirement.maxAmountRequired).success
    ) {
      out.x402 = { dialect: 'x402', requirement, amount: BigInt(requirement.maxAmountRequired) }
    }
  }
  const v2 = readX402V2(response)
  if (v2.status === 'ok') {
    const accepted = v2.required.accepts.find((a) => a.network === context.network)
    if (accepted !== undefined) {
      out.v2 = { required: v2.required, accepted, amount: BigInt(accepted.amount) }
    }
  }
  const mpp = readMpp(response)
  if (mpp.status === 'ok') {
    const challenge = mpp.challenges.find(
      (c) => chargeOfSafe(c)?.methodDetails.network === context.network,
    )
    const charge = challenge === undefined ? undefined : chargeOfSafe(challenge)
    if (challenge !== undefined && charge !== undefined) {
      out.mpp = { dialect: 'mpp', challenge, amount: BigInt(charge.amount) }
    }
  }
  const primary = out.x402 ?? out.mpp
  if (primary !== undefined) out.primary = primary
  return out
}

/** Pays an offer (possibly wrongly) and presents the payment to the seller. */
export async function payAndPresent(
  context: CheckContext,
  state: PaidState,
  offer: ProbeOffer,
  overrides: TestPaymentOptions = {},
): Promise<{ observation: Observation; credential: string; digest?: string }> {
  const client = context.client
  // runConformance refuses paid mode without a ledger, so this is an options error of a caller that
  // builds a CheckContext by hand.
  if (client === undefined)
    throw new PaymentError('invalid_options', 'paid checks need a ledger client')
  const coinType = overrides.coinType ?? context.usdc
  const amount = overrides.amount ?? offer.amount
  const balance = await state.ledger.getBalance(state.payer.toSuiAddress(), coinType)
  if (balance.coinBalance < amount) {
    throw new PaymentError(
      'INSUFFICIENT_BALANCE',
      `the test wallet holds ${balance.coinBalance} base units of ${coinType} in coins, ${amount} are needed (fund it)`,
    )
  }
  let headers: Record<string, string>
  let credential: string
  let digest: string | undefined
  if (offer.dialect === 'x402') {
    const requirement = { ...offer.requirement, maxTimeoutSeconds: 60 } as X402.PaymentRequirement
    credential = await x402PaymentHeader(client, state.payer, requirement, overrides)
    headers = { 'x-payment': credential }
  } else {
    const paid = await mppAuthorization(client, state.payer, offer.challenge, overrides)
    credential = paid.authorization
    digest = paid.digest
    headers = { authorization: credential }
  }
  const observation = await observe(context.url, {
    ...context.probeOptions,
    method: context.method,
    headers: { 'content-type': 'application/json', ...headers },
    body: context.body,
  })
  return { observation, credential, ...(digest === undefined ? {} : { digest }) }
}

/** Pays an x402 version 2 offer and presents it as `PAYMENT-SIGNATURE`. */
export async function payV2AndPresent(
  context: CheckContext,
  state: PaidState,
  offer: V2Offer,
): Promise<{ observation: Observation; header: string; transaction: string; signature: string }> {
  const client = context.client
  if (client === undefined)
    throw new PaymentError('invalid_options', 'paid checks need a ledger client')
  const signed = await signTestPayment(client, state.payer, {
    to: offer.accepted.payTo,
    amount: offer.amount,
    coinType: offer.accepted.asset,
  })
  const header = X402V2.encodePaymentSignature({
    x402Version: 2,
    resource: offer.required.resource,
    accepted: offer.accepted,
    payload: { transaction: signed.transaction, signature: signed.signature },
  })
  const observation = await observe(context.url, {
    ...context.probeOptions,
    method: context.method,
    headers: { 'content-type': 'application/json', 'payment-signature': header },
    body: context.body,
  })
  return {
    observation,
    header,
    transaction: signed.transaction,
    signature: signed.signature,
  }
}

/** Whether the digest is on the ledger, succeeded, and moved at least `amount` USDC to `payTo`. */
export async function onLedger(
  context: CheckContext,
  state: PaidState,
  digest: string,
  payTo: string,
  amount: bigint,
): Promise<string | undefined> {
  const found = await state.ledger.waitFor(digest, { timeoutMs: 5_000 })
  if (found.status !== 'found') return `digest ${digest} is not on the ledger`
  if (!found.transaction.success) return `transaction ${digest} failed on the ledger`
  const to = normalizeSuiAddress(payTo)
  const usdc = normalizeStructTag(context.usdc)
  const received = found.transaction.balanceChanges
    .filter((c) => c.address === to && c.coinType === usdc)
    .reduce((sum, c) => sum + c.amount, 0n)
  if (received < amount)
    return `transaction ${digest} moved ${received} base units of USDC to ${to}, not ${amount}`
  return undefined
}

/** The address an offer asks to be paid. */
export function payToOf(offer: ProbeOffer): string {
  return offer.dialect === 'x402'
    ? offer.requirement.payTo
    : (chargeOfSafe(offer.challenge)?.recipient ?? '')
}
