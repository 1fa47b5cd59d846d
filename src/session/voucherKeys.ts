/**
 * Voucher signatures at the speed a per-call payment needs: the runtime's own Ed25519 — Node's
 * crypto module on Node, on the calling thread (25 µs to sign, 65 to verify here), else Web Crypto
 * (`crypto.subtle`, about 40 µs more each: a trip to the thread pool) — against 0.9 and 1.7 ms in
 * JavaScript. The native check is wrapped so
 * that it accepts no more than {@link verifyVoucher} and the chain do: the session key must be a
 * canonical point of large order (checked once per key, kept with its imported key), the
 * signature's `R` must not be of small order (a cofactorless check, as OpenSSL's, would otherwise
 * accept `R` = identity from the key's owner; compared with the eight small-order encodings as
 * bytes — a non-canonical `R` never passes, as `R` is recomputed and compared as encoded), and `S`
 * must be canonical (refused by the native check). Every voucher it accepts can be settled.
 *
 * @module
 */
import { ED25519_TORSION_SUBGROUP, ed25519 } from '@noble/curves/ed25519.js'
import { bytesToHex } from '../internal/hex.js'
import { nodeCrypto } from '../internal/runtime.js'
import { type Voucher, type VoucherSigner, voucherMessage } from './voucher.js'

// Node's Ed25519 (`nodeCrypto`) runs on the calling thread, where Web Crypto's hands each
// signature to the thread pool and back — about 40 µs more a signature. The same OpenSSL check
// either way.

/** A verifying key: Node's key object, or Web Crypto's. */
type VerifyKey =
  | { readonly kind: 'node'; readonly key: import('node:crypto').KeyObject }
  | { readonly kind: 'web'; readonly key: CryptoKey }

/** The DER prefix of an Ed25519 SubjectPublicKeyInfo (the 32-byte key follows). */
const spkiPrefix = Uint8Array.from([
  0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
])

/** Imports a 32-byte Ed25519 public key for verifying; null when the runtime refuses it. */
async function importVerifyKey(publicKey: Uint8Array): Promise<VerifyKey | null> {
  try {
    if (nodeCrypto !== undefined) {
      const der = new Uint8Array(spkiPrefix.length + 32)
      der.set(spkiPrefix)
      der.set(publicKey, spkiPrefix.length)
      return {
        kind: 'node',
        key: nodeCrypto.createPublicKey({ key: der as never, format: 'der', type: 'spki' }),
      }
    }
    const key = await crypto.subtle.importKey(
      'raw',
      Uint8Array.from(publicKey),
      { name: 'Ed25519' },
      false,
      ['verify'],
    )
    return { kind: 'web', key }
  } catch {
    return null
  }
}

/** PKCS #8 wrapping of a 32-byte Ed25519 secret (Web Crypto imports private keys only so). */
const pkcs8Prefix = Uint8Array.from([
  0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
])

/** The canonical encodings of the eight points of small order. */
const smallOrder = new Set(ED25519_TORSION_SUBGROUP)

/** Whether 32 bytes encode a canonical Ed25519 point that is not of small order. */
function isLargeOrderPoint(bytes: Uint8Array): boolean {
  try {
    return !ed25519.Point.fromBytes(bytes, false).isSmallOrder()
  } catch {
    return false
  }
}

/** A verifier of vouchers that remembers the session keys it imported. */
export type VoucherVerifier = {
  /** Whether the voucher is signed by `signerPublicKey` (32 bytes); never rejects. */
  verify(voucher: Voucher, signerPublicKey: Uint8Array): Promise<boolean>
}

/**
 * Creates a verifier (one per seller: it keeps up to `maxKeys` imported session keys, the oldest
 * dropped first).
 *
 * @example
 * ```ts
 * const verifier = createVoucherVerifier()
 * await verifier.verify(voucher, sessionPublicKey) // true or false
 * ```
 */
export function createVoucherVerifier(maxKeys = 10_000): VoucherVerifier {
  const keys = new Map<string, Promise<VerifyKey | null>>()
  function keyOf(publicKey: Uint8Array): Promise<VerifyKey | null> {
    const id = bytesToHex(publicKey)
    let key = keys.get(id)
    if (key === undefined) {
      key = isLargeOrderPoint(publicKey) ? importVerifyKey(publicKey) : Promise.resolve(null)
      if (keys.size >= maxKeys) keys.delete(keys.keys().next().value as string)
      keys.set(id, key)
    }
    return key
  }
  return {
    async verify(voucher, signerPublicKey) {
      const { signature } = voucher
      if (signature.length !== 64 || signerPublicKey.length !== 32) return false
      if (smallOrder.has(bytesToHex(signature.subarray(0, 32)))) return false
      let message: Uint8Array
      try {
        message = voucherMessage(voucher.channelId, voucher.cumulativeAmount)
      } catch {
        return false
      }
      const key = await keyOf(signerPublicKey)
      if (key === null) return false
      try {
        if (key.kind === 'node' && nodeCrypto !== undefined) {
          return nodeCrypto.verify(null, message, key.key, signature)
        }
        return await crypto.subtle.verify(
          { name: 'Ed25519' },
          key.key as CryptoKey,
          Uint8Array.from(signature),
          Uint8Array.from(message),
        )
      } catch {
        return false
      }
    },
  }
}

/**
 * A voucher signer over a session key's 32-byte Ed25519 secret, signing natively. The signatures
 * are the same bytes as any RFC 8032 signer's (Ed25519 is deterministic).
 *
 * @example
 * ```ts
 * const voucher = await signVoucher(nativeVoucherSigner(sessionKey), channelId, 40_000n)
 * ```
 */
export function nativeVoucherSigner(secretKey: Uint8Array): VoucherSigner {
  const pkcs8 = new Uint8Array(pkcs8Prefix.length + 32)
  pkcs8.set(pkcs8Prefix)
  pkcs8.set(secretKey, pkcs8Prefix.length)
  const node = nodeCrypto
  if (node !== undefined) {
    const key = node.createPrivateKey({ key: pkcs8 as never, format: 'der', type: 'pkcs8' })
    return { sign: (bytes) => new Uint8Array(node.sign(null, bytes, key)) }
  }
  const key = crypto.subtle.importKey('pkcs8', pkcs8, { name: 'Ed25519' }, false, ['sign'])
  return {
    sign: async (bytes) =>
      new Uint8Array(
        await crypto.subtle.sign({ name: 'Ed25519' }, await key, Uint8Array.from(bytes)),
      ),
  }
}
