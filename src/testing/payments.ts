/**
 * Payment headers for tests: given a 402 and a funded test wallet, produce the `X-PAYMENT` or
 * `Authorization: Payment` header a real buyer would send — including deliberately wrong ones
 * (underpaid, wrong recipient, wrong asset) for rejection tests. For paying in applications, use
 * `tollgate/client`.
 *
 * @module
 */
import type { ClientWithCoreApi } from '@mysten/sui/client'
import type { Keypair } from '@mysten/sui/cryptography'
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { toBase64 } from '@mysten/sui/utils'
import { type Challenge, serializeCredential } from '../mpp.js'
import { signProof } from '../proof.js'
import { encodeXPayment, type PaymentRequirement } from '../x402.js'
import { buildCoinTransfer, buildGaslessTransfer } from './ledger/testHelpers.js'

/** What to pay, and how; every field overrides what the challenge asks (to test rejections). */
export type TestPaymentOptions = {
  /** Recipient; default the challenge's. */
  to?: string | undefined
  /** Base units; default the challenge's amount. */
  amount?: bigint | undefined
  /** Coin type; default the challenge's asset. */
  coinType?: string | undefined
  /** `coin` (default) or `gasless` (the payer needs USDC in its address balance). */
  form?: 'coin' | 'gasless' | undefined
  /** Challenge id to echo; default the challenge's. */
  challengeId?: string | undefined
}

/** A signed payment transaction. */
export type SignedTestPayment = { bytes: Uint8Array; transaction: string; signature: string }

/** Builds and signs (does not submit) a USDC transfer from `payer`. */
export async function signTestPayment(
  client: ClientWithCoreApi,
  payer: Ed25519Keypair,
  payment: { to: string; amount: bigint; coinType: string; form?: 'coin' | 'gasless' | undefined },
): Promise<SignedTestPayment> {
  const common = { payer, to: payment.to, amount: payment.amount, coinType: payment.coinType }
  const bytes =
    payment.form === 'gasless'
      ? await buildGaslessTransfer({
          ...common,
          chainId: (await client.core.getChainIdentifier()).chainIdentifier,
          epoch: BigInt((await client.core.getCurrentSystemState()).systemState.epoch),
        })
      : await buildCoinTransfer({ ...common, client: client as never })
  const { signature } = await payer.signTransaction(bytes)
  return { bytes, transaction: toBase64(bytes), signature }
}

/**
 * The `X-PAYMENT` header answering an x402 requirement.
 *
 * @example
 * const header = await x402PaymentHeader(client, buyer, body.accepts[0])
 * await fetch(url, { method: 'POST', headers: { 'X-PAYMENT': header } })
 */
export async function x402PaymentHeader(
  client: ClientWithCoreApi,
  payer: Ed25519Keypair,
  requirement: PaymentRequirement,
  options: TestPaymentOptions = {},
): Promise<string> {
  const signed = await signTestPayment(client, payer, {
    to: options.to ?? requirement.payTo,
    amount: options.amount ?? BigInt(requirement.maxAmountRequired),
    coinType: options.coinType ?? requirement.asset,
    form: options.form,
  })
  return encodeXPayment({
    network: requirement.network,
    payload: {
      challengeId: options.challengeId ?? String(requirement.extra?.challengeId ?? ''),
      transaction: signed.transaction,
      signature: signed.signature,
    },
  })
}

/**
 * Pays an MPP challenge the way an MPP buyer does: submits the transfer, then signs the proof.
 * Returns the `Authorization` value and the digest.
 *
 * @param prover - who signs the proof; default the payer (pass another key to test theft).
 */
export async function mppAuthorization(
  client: ClientWithCoreApi,
  payer: Ed25519Keypair,
  challenge: Challenge,
  options: TestPaymentOptions & { prover?: Keypair | undefined } = {},
): Promise<{ authorization: string; digest: string }> {
  const request = challenge.request as { amount: string; currency: string; recipient: string }
  const signed = await signTestPayment(client, payer, {
    to: options.to ?? request.recipient,
    amount: options.amount ?? BigInt(request.amount),
    coinType: options.coinType ?? request.currency,
    form: options.form,
  })
  const executed = await client.core.executeTransaction({
    transaction: signed.bytes,
    signatures: [signed.signature],
  })
  const digest = executed.Transaction?.digest ?? executed.FailedTransaction?.digest ?? ''
  const signature = await signProof(options.prover ?? payer, {
    realm: challenge.realm,
    challengeId: options.challengeId ?? challenge.id,
    amount: request.amount,
    currency: request.currency,
    recipient: request.recipient,
    digest,
  })
  return {
    authorization: serializeCredential({ challenge, payload: { digest, signature } }),
    digest,
  }
}
