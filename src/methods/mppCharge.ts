/**
 * MPP `charge` with method `sui` as a payment method: the 402 carries `WWW-Authenticate: Payment`
 * (method `sui`, intent `charge`); the buyer submits the USDC transfer itself, waits for its effects,
 * signs a proof binding the digest to the challenge, and sends `Authorization: Payment`; the seller
 * checks the challenge and the proof, verifies the effects, and answers a 2xx with `Payment-Receipt`.
 *
 * @module
 */

import { PaymentError } from '../errors.js'
import { findScheme } from '../internal/authParams.js'
import {
  type Challenge,
  decodeReceipt,
  encodeReceipt,
  formatChallenge,
  mppHeaders,
  parseChallenges,
  parseCredential,
  paymentScheme,
  serializeCredential,
  suiChargePayload,
  suiChargeRequestSchema,
} from '../mpp.js'
import { signProof } from '../proof.js'
import { settleMpp } from '../settle.js'
import type { MethodOffer, PaymentMethod } from './types.js'
import { reasonOf } from './x402v1.js'

/** An MPP offer: one `Payment` challenge of `WWW-Authenticate`; paid with `Authorization: Payment`. */
export type MppChargeOffer = MethodOffer & {
  method: 'mppCharge'
  dialect: 'mpp'
  challenge: Challenge
  scheme: string
  network: string
  asset: string
  amount: bigint
  payTo: string
  challengeId: string
  escrow: boolean
}

function mppOffer(challenge: Challenge): MppChargeOffer | undefined {
  const common = {
    method: 'mppCharge',
    dialect: 'mpp',
    challenge,
    challengeId: challenge.id,
  } as const
  if (challenge.method !== 'sui') {
    return {
      ...common,
      scheme: `${challenge.method}/${challenge.intent}`,
      network: '',
      asset: '',
      amount: 0n,
      payTo: '',
      escrow: false,
    }
  }
  const request = suiChargeRequestSchema.safeParse(challenge.request)
  if (!request.success) return undefined
  const details = challenge.request.methodDetails as Record<string, unknown> | undefined
  return {
    ...common,
    scheme: challenge.intent === 'charge' ? 'exact' : challenge.intent,
    network: request.data.methodDetails.network,
    asset: request.data.currency,
    amount: BigInt(request.data.amount),
    payTo: request.data.recipient,
    escrow:
      challenge.intent === 'escrow' || (details?.escrow !== undefined && details.escrow !== null),
  }
}

/** MPP `charge` (method `sui`): `WWW-Authenticate` / `Authorization: Payment` / `Payment-Receipt`. */
export const mppCharge: PaymentMethod = {
  name: 'mppCharge',
  dialect: 'mpp',
  buyerSubmits: true,
  server: {
    label: 'MPP',
    how: 'Authorization: Payment (MPP)',
    unsupportedCode: 'method_unsupported',
    classify(headers) {
      // `Authorization` may list several schemes (`Bearer abc, Payment eyJ…`): the `Payment` one.
      const authorization = headers.get('authorization')
      return authorization === null ? undefined : findScheme(authorization, paymentScheme)
    },
    challenge(parts, { terms, id, expires }) {
      return {
        ...parts,
        headers: {
          ...parts.headers,
          [mppHeaders.wwwAuthenticate]: formatChallenge({
            id,
            realm: terms.realm,
            method: 'sui',
            intent: 'charge',
            request: terms.request,
            ...(terms.description === '' ? {} : { description: terms.description }),
            expires,
            opaque: terms.opaque,
          }),
        },
      }
    },
    settle(credential, { terms, settlement, checkChallenge, context }) {
      const parsed = parseCredential(credential)
      if (parsed.challenge.intent === 'session') {
        throw new PaymentError('method_unsupported', 'This route does not take MPP sessions.')
      }
      const payload = suiChargePayload(parsed)
      const { id, expires } = parsed.challenge
      const verdict = checkChallenge(id, expires)
      if (verdict.status !== 'valid') return { status: 'rejected', error: verdict.error }
      return settleMpp(
        {
          digest: payload.digest,
          signature: payload.signature,
          proof: {
            realm: terms.realm,
            challengeId: id,
            amount: terms.amount,
            currency: terms.asset,
            recipient: terms.payTo,
          },
        },
        settlement,
        context,
      )
    },
    successHeaders({ digest, at }) {
      const headers = {
        [mppHeaders.paymentReceipt]: encodeReceipt({
          status: 'success',
          method: 'sui',
          timestamp: new Date(at).toISOString(),
          reference: digest,
        }),
      }
      const none = {}
      // MPP receipts are for successful answers only.
      return (status) => (status < 200 || status > 299 ? none : headers)
    },
  },
  client: {
    label: 'mpp',
    rank: 0,
    read({ headers }) {
      const value = headers.get(mppHeaders.wwwAuthenticate)
      if (value === null) return { offers: [], unreadable: [] }
      try {
        const offers: MppChargeOffer[] = []
        const unreadable: string[] = []
        for (const challenge of parseChallenges(value)) {
          // A session challenge is the session method's to read (paid by vouchers, not a charge).
          if (challenge.intent === 'session') continue
          const offer = mppOffer(challenge)
          if (offer) offers.push(offer)
          else unreadable.push('a sui charge request that is invalid')
        }
        return { offers, unreadable }
      } catch (error) {
        return { offers: [], unreadable: [reasonOf(error)] }
      }
    },
    escrowTerms: (offer) =>
      (
        (offer as MppChargeOffer).challenge.request.methodDetails as
          | Record<string, unknown>
          | undefined
      )?.escrow,
    async pay(given, { bytes, signature, digest }, { signer, ledger }) {
      const offer = given as MppChargeOffer
      const outcome = await ledger.execute(bytes, [signature])
      if (outcome.status === 'rejected') {
        return {
          status: 'failed',
          error: new PaymentError('settlement_failed', 'The ledger refused the payment.', {
            details: { digest, reason: outcome.reason.slice(0, 200) },
          }),
          moneyMayHaveMoved: false,
        }
      }
      const found = outcome.status === 'executed' ? outcome : await ledger.waitFor(digest)
      if (found.status !== 'executed' && found.status !== 'found') {
        return {
          status: 'failed',
          error: new PaymentError(
            'settlement_pending',
            'The payment was submitted but its outcome is not known yet; look the digest up before paying again.',
            { details: { digest } },
          ),
          moneyMayHaveMoved: true,
        }
      }
      if (!found.transaction.success) {
        return {
          status: 'failed',
          error: new PaymentError(
            'transaction_failed',
            'The payment transaction failed on chain.',
            {
              details: { digest, reason: (found.transaction.error ?? '').slice(0, 200) },
            },
          ),
          moneyMayHaveMoved: false,
        }
      }
      const request = offer.challenge.request as {
        amount: string
        currency: string
        recipient: string
      }
      const proof = await signProof(signer, {
        realm: offer.challenge.realm,
        challengeId: offer.challenge.id,
        amount: request.amount,
        currency: request.currency,
        recipient: request.recipient,
        digest,
      })
      const credential = serializeCredential({
        challenge: offer.challenge,
        payload: { digest, signature: proof },
      })
      return { status: 'ready', headers: { authorization: credential } }
    },
    receipt(response) {
      const value = response.headers.get(mppHeaders.paymentReceipt)
      return value === null ? undefined : decodeReceipt(value)
    },
  },
}
