/**
 * The MPP payment proof: in the header dialect the buyer submits the transaction itself and sends
 * its digest. So that nobody who merely saw the digest on-chain can redeem it, the credential also
 * carries a personal-message signature BY THE TRANSACTION SENDER over this proof (JCS JSON):
 *
 * ```json
 * { "domain": realm, "version": 1, "method": "sui", "intent": "charge",
 *   "challengeId", "amount", "currency", "recipient", "digest" }
 * ```
 *
 * @module
 */
import type { Signer } from '@mysten/sui/cryptography'
import { normalizeSuiAddress } from '@mysten/sui/utils'
import { verifyPersonalMessageSignature } from '@mysten/sui/verify'
import canonicalize from 'canonicalize'

/** The facts a proof binds together. */
export type ProofFields = {
  /** The challenge realm (the seller's host). */
  realm: string
  challengeId: string
  /** Base units, as a decimal string. */
  amount: string
  /** Coin type. */
  currency: string
  recipient: string
  /** Digest of the paying transaction. */
  digest: string
}

/** The exact bytes that are signed: UTF-8 of the JCS form of the proof object. */
export function proofMessage(fields: ProofFields): Uint8Array {
  const json = canonicalize({
    domain: fields.realm,
    version: 1,
    method: 'sui',
    intent: 'charge',
    challengeId: fields.challengeId,
    amount: fields.amount,
    currency: fields.currency,
    recipient: fields.recipient,
    digest: fields.digest,
  })
  return new TextEncoder().encode(json as string)
}

/**
 * Signs a proof as the buyer (the transaction's sender).
 *
 * @returns the serialized personal-message signature, base64.
 * @example
 * const signature = await signProof(keypair, { realm, challengeId, amount, currency, recipient, digest })
 */
export async function signProof(signer: Signer, fields: ProofFields): Promise<string> {
  const { signature } = await signer.signPersonalMessage(proofMessage(fields))
  return signature
}

/** The result of {@link verifyProof}. */
export type ProofCheck = { status: 'valid' } | { status: 'invalid'; reason: string }

/**
 * Checks that `signature` is a personal-message signature by `sender` over the proof. Never throws.
 *
 * @param sender - the paying transaction's sender, as read from the ledger (never from the buyer).
 */
export async function verifyProof(
  fields: ProofFields,
  signature: string,
  sender: string,
): Promise<ProofCheck> {
  if (signature.length === 0 || signature.length > 16_384) {
    return { status: 'invalid', reason: 'signature is empty or too large' }
  }
  try {
    await verifyPersonalMessageSignature(proofMessage(fields), signature, {
      address: normalizeSuiAddress(sender),
    })
    return { status: 'valid' }
  } catch {
    return { status: 'invalid', reason: 'not a signature by the transaction sender over the proof' }
  }
}
