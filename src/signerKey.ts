/**
 * A signer from a Sui secret key as users hold it: the bech32 `suiprivkey1…` string that
 * `sui keytool export` prints and `Keypair.getSecretKey()` returns. The gateway's operator key and
 * the CLI's agent key are read with it, each naming its own setting in its message.
 *
 * @module
 */
import { decodeSuiPrivateKey, type Keypair } from '@mysten/sui/cryptography'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Secp256k1Keypair } from '@mysten/sui/keypairs/secp256k1'
import { Secp256r1Keypair } from '@mysten/sui/keypairs/secp256r1'

/**
 * What {@link signerFromSecretKey} made of a key: a signer, or why not — `malformed` (not a
 * `suiprivkey1…` string, a bad checksum, an unknown scheme flag or a key of the wrong length) or
 * `unsupported_scheme` (a valid key of a scheme that has no secret key to sign with, such as
 * `MultiSig`).
 */
export type SignerKeyResult =
  | { status: 'valid'; signer: Keypair }
  | { status: 'invalid'; reason: 'malformed' }
  | { status: 'invalid'; reason: 'unsupported_scheme'; scheme: string }

const keypairs: Readonly<Record<string, (secretKey: Uint8Array) => Keypair>> = {
  ED25519: (secretKey) => Ed25519Keypair.fromSecretKey(secretKey),
  Secp256k1: (secretKey) => Secp256k1Keypair.fromSecretKey(secretKey),
  Secp256r1: (secretKey) => Secp256r1Keypair.fromSecretKey(secretKey),
}

/**
 * Reads a Sui secret key (`suiprivkey1…`, Ed25519, secp256k1 or secp256r1) into a signer. Never
 * throws, and the result never holds the key's text: the caller writes the message, naming where
 * the key came from without echoing it.
 *
 * @param secret - The bech32 secret key. Security: it signs payments and gas with this key; read it
 *   from a secret store or the environment, never from a request.
 * @returns `{ status: 'valid', signer }`, or `{ status: 'invalid', reason }` (see
 *   {@link SignerKeyResult}).
 *
 * @example
 * ```ts
 * const key = signerFromSecretKey(process.env.OPERATOR_KEY ?? '')
 * if (key.status === 'invalid') throw new Error(`OPERATOR_KEY: ${key.reason}`)
 * const refunder = createRefunder({ store, ledger, signer: key.signer })
 * ```
 */
export function signerFromSecretKey(secret: string): SignerKeyResult {
  let decoded: ReturnType<typeof decodeSuiPrivateKey>
  try {
    decoded = decodeSuiPrivateKey(secret)
  } catch {
    return { status: 'invalid', reason: 'malformed' }
  }
  const scheme: string | undefined = decoded.scheme
  if (scheme === undefined) return { status: 'invalid', reason: 'malformed' }
  const keypair = keypairs[scheme]
  if (keypair === undefined) return { status: 'invalid', reason: 'unsupported_scheme', scheme }
  try {
    return { status: 'valid', signer: keypair(decoded.secretKey) }
  } catch {
    return { status: 'invalid', reason: 'malformed' }
  }
}
