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
import { type ProofInput, proofMessage } from './mpp.js'

/** The facts a proof binds together (realm, challenge id, amount, currency, recipient, digest). */
export type ProofFields = ProofInput

/** The exact bytes that are signed: UTF-8 of the JCS proof text (see `proofMessage` in mpp.ts). */
export function proofBytes(fields: ProofFields): Uint8Array {
  return new TextEncoder().encode(proofMessage(fields))
}

/**
 * Signs a proof as the buyer (the transaction's sender).
 *
 * @returns the serialized personal-message signature, base64.
 * @example
 * const signature = await signProof(keypair, { realm, challengeId, amount, currency, recipient, digest })
 */
export async function signProof(signer: Signer, fields: ProofFields): Promise<string> {
  const { signature } = await signer.signPersonalMessage(proofBytes(fields))
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
    await verifyPersonalMessageSignature(proofBytes(fields), signature, {
      address: normalizeSuiAddress(sender),
    })
    return { status: 'valid' }
  } catch {
    return { status: 'invalid', reason: 'not a signature by the transaction sender over the proof' }
  }
}
