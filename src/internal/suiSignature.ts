/**
 * Sui transaction signature checks with a native fast path.
 *
 * Ed25519 (flag `0x00`, by far the most common scheme) is verified with WebCrypto (`crypto.subtle`,
 * native on Node, Deno, Bun, workerd and browsers; imported keys cached), many times faster than the
 * SDK's pure-JavaScript verifier; every other scheme (secp256k1, secp256r1, multisig, zkLogin,
 * passkey) goes through `@mysten/sui/verify`. Both paths give the same answers: the unit tests
 * compare them on valid, tampered and wrong-key inputs.
 *
 * @module
 */
import { fromBase64, normalizeSuiAddress, toHex } from '@mysten/sui/utils'
import { verifyTransactionSignature } from '@mysten/sui/verify'
import { blake2b } from '@noble/hashes/blake2.js'
import { createRecent, type Recent } from './recent.js'

/** The outcome of checking one serialized signature over transaction bytes. */
export type SignerCheck =
  | { status: 'valid'; address: string }
  | { status: 'invalid'; reason: string }

const ED25519_FLAG = 0x00
const ED25519_LENGTH = 1 + 64 + 32
/**
 * Imported keys by hex public key, kept by whoever checks many signatures (an engine keeps one):
 * importing costs about as much as verifying, and payers repeat. The import itself is kept, so
 * that concurrent checks by one payer import once.
 */
export type ImportedKeys = Recent<string, Promise<CryptoKey>>

/** A bounded store of imported keys for {@link verifyTransactionSigner}. */
export function importedKeys(max = 10_000): ImportedKeys {
  return createRecent({ max })
}

/** The raw 32-byte key as a WebCrypto verification key (remembered in `keys` when given). */
function ed25519Key(publicKey: Uint8Array, keys: ImportedKeys | undefined): Promise<CryptoKey> {
  const hex = keys === undefined ? '' : toHex(publicKey)
  const known = keys?.get(hex)
  if (known !== undefined) return known
  const imported = crypto.subtle.importKey(
    'raw',
    publicKey as Uint8Array<ArrayBuffer>,
    { name: 'Ed25519' },
    false,
    ['verify'],
  )
  return keys === undefined ? imported : keys.remember(hex, imported)
}
/** Intent scope TransactionData, version 0, app id Sui. */
const TRANSACTION_INTENT = Uint8Array.from([0, 0, 0])
/** Largest serialized signature accepted (zkLogin signatures are the biggest, a few KB). */
const MAX_SIGNATURE_CHARS = 16_384

/**
 * Blake2b-256 of the intent message `[0,0,0] ‖ txBytes`: what a Sui transaction signature signs.
 *
 * @param txBytes - BCS `TransactionData` bytes.
 */
export function transactionSigningDigest(txBytes: Uint8Array): Uint8Array {
  const message = new Uint8Array(TRANSACTION_INTENT.length + txBytes.length)
  message.set(TRANSACTION_INTENT, 0)
  message.set(txBytes, TRANSACTION_INTENT.length)
  return blake2b(message, { dkLen: 32 })
}

/**
 * The Sui address of an Ed25519 public key: blake2b-256(0x00 ‖ pubkey), as 0x-prefixed hex.
 *
 * @param publicKey - the raw 32-byte key.
 */
export function ed25519Address(publicKey: Uint8Array): string {
  const data = new Uint8Array(1 + publicKey.length)
  data[0] = ED25519_FLAG
  data.set(publicKey, 1)
  return normalizeSuiAddress(toHex(blake2b(data, { dkLen: 32 })))
}

/**
 * Checks that `serializedSignature` is a valid Sui signature over `txBytes` and says who signed.
 * Never throws for bad input: malformed or wrong signatures are `{ status: 'invalid' }`.
 *
 * @param txBytes - BCS `TransactionData` bytes exactly as submitted.
 * @param serializedSignature - base64 of flag ‖ signature ‖ public key (or a multisig/zkLogin form).
 * @param keys - where imported Ed25519 keys are remembered between checks (default: nowhere).
 * @returns the signer's normalized address when valid. The caller compares it with the sender
 *   (or gas owner): a valid signature by someone else is still a rejection.
 * @example
 * const check = await verifyTransactionSigner(bytes, signature)
 * if (check.status === 'valid' && check.address === sender) { ... }
 */
export async function verifyTransactionSigner(
  txBytes: Uint8Array,
  serializedSignature: string,
  keys?: ImportedKeys,
): Promise<SignerCheck> {
  if (serializedSignature.length === 0 || serializedSignature.length > MAX_SIGNATURE_CHARS) {
    return { status: 'invalid', reason: 'signature is empty or too large' }
  }
  let raw: Uint8Array
  try {
    raw = fromBase64(serializedSignature)
  } catch {
    return { status: 'invalid', reason: 'signature is not base64' }
  }
  if (raw[0] === ED25519_FLAG) {
    if (raw.length !== ED25519_LENGTH) {
      return { status: 'invalid', reason: 'Ed25519 signature has the wrong length' }
    }
    const signature = raw.subarray(1, 65)
    const publicKey = raw.subarray(65)
    try {
      const ok = await crypto.subtle.verify(
        'Ed25519',
        await ed25519Key(publicKey, keys),
        signature as Uint8Array<ArrayBuffer>,
        transactionSigningDigest(txBytes) as Uint8Array<ArrayBuffer>,
      )
      return ok
        ? { status: 'valid', address: ed25519Address(publicKey) }
        : { status: 'invalid', reason: 'signature does not verify over the transaction bytes' }
    } catch {
      return { status: 'invalid', reason: 'Ed25519 public key is malformed' }
    }
  }
  try {
    const publicKey = await verifyTransactionSignature(txBytes, serializedSignature)
    return { status: 'valid', address: normalizeSuiAddress(publicKey.toSuiAddress()) }
  } catch (error) {
    return {
      status: 'invalid',
      reason: error instanceof Error ? error.message : 'signature does not verify',
    }
  }
}

export { transactionDigest } from './transactionData.js'
