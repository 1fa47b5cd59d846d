/**
 * The vouchers of an MPP `session` on Sui, and the id of the channel they are for.
 *
 * A voucher authorises the payee to take up to `cumulativeAmount` base units from one channel in
 * all (it is cumulative, not a bill: the seller settles only what it served, never more than the
 * highest voucher). It is signed with raw Ed25519 by the channel's session key — the one signing
 * mode (docs/protocol.md, "Sessions") — over the BCS bytes of
 * `VoucherMsg { domain, channel_id, cumulative_amount }`:
 *
 * ```
 * uleb128(26) ‖ "MPP-SUI-SESSION-VOUCHER-V1" ‖ channel id (32 bytes) ‖ u64 little-endian   (67 bytes)
 * ```
 *
 * A Sui user signature always covers a 32-byte intent digest, so a 67-byte voucher message can
 * never be mistaken for a transaction or a personal message signed by the same key.
 *
 * The channel's id is derived (`derived_object`) from the registry object and the key
 * `ChannelKey<T> { payer, payee, salt }`, so a buyer computes it before the channel exists and
 * signs its first voucher inside `open`.
 *
 * @module
 */
import { bcs } from '@mysten/sui/bcs'
import { deriveObjectID, normalizeStructTag, normalizeSuiAddress } from '@mysten/sui/utils'
import { ed25519 } from '@noble/curves/ed25519.js'
import { PaymentError } from '../errors.js'

/** The domain of every voucher message. */
export const voucherDomain = 'MPP-SUI-SESSION-VOUCHER-V1'

/** The largest amount a voucher or a channel holds: a Move `u64`. */
export const maxChannelAmount = 2n ** 64n - 1n

const VoucherMsg = bcs.struct('VoucherMsg', {
  domain: bcs.vector(bcs.u8()),
  channel_id: bcs.Address,
  cumulative_amount: bcs.u64(),
})

const ChannelKey = bcs.struct('ChannelKey', {
  payer: bcs.Address,
  payee: bcs.Address,
  salt: bcs.vector(bcs.u8()),
})

const domainBytes = new TextEncoder().encode(voucherDomain)

/** A voucher: the channel, the cumulative amount it authorises, and the session key's signature. */
export type Voucher = {
  /** The channel's object id (0x + 64 hex). */
  readonly channelId: string
  /** Base units authorised in all, since the channel opened. */
  readonly cumulativeAmount: bigint
  /** Raw Ed25519 signature, 64 bytes. */
  readonly signature: Uint8Array
}

function checkAmount(amount: bigint): void {
  if (amount < 0n || amount > maxChannelAmount) {
    throw new PaymentError('invalid_amount', 'A voucher amount is a u64 (0 to 2^64 − 1).')
  }
}

/**
 * The 67 bytes a voucher's signature covers.
 *
 * @throws {PaymentError} `invalid_amount` for an amount that is not a u64.
 * @example
 * ```ts
 * voucherMessage(channelId, 20_000n).length // 67
 * ```
 */
export function voucherMessage(channelId: string, cumulativeAmount: bigint): Uint8Array {
  checkAmount(cumulativeAmount)
  // Every voucher of a channel shares its first 59 bytes (the domain and the channel id): they are
  // serialised once per channel, and each voucher adds its amount (a u64, little-endian).
  let prefix = messagePrefixes.get(channelId)
  if (prefix === undefined) {
    const whole = VoucherMsg.serialize({
      domain: domainBytes,
      channel_id: normalizeSuiAddress(channelId),
      cumulative_amount: 0n,
    }).toBytes()
    prefix = whole.subarray(0, whole.length - 8)
    if (messagePrefixes.size >= 10_000) {
      messagePrefixes.delete(messagePrefixes.keys().next().value as string)
    }
    messagePrefixes.set(channelId, prefix)
  }
  const message = new Uint8Array(prefix.length + 8)
  message.set(prefix)
  new DataView(message.buffer).setBigUint64(prefix.length, cumulativeAmount, true)
  return message
}

/** The shared first bytes of each channel's voucher messages, by channel id as given. */
const messagePrefixes = new Map<string, Uint8Array>()

/** What signs vouchers: a raw Ed25519 signer (the channel's session key). */
export type VoucherSigner = {
  /** Signs the bytes as they are (no intent, no hashing). */
  sign(bytes: Uint8Array): Uint8Array | Promise<Uint8Array>
}

/**
 * Signs a voucher with the channel's session key.
 *
 * @example
 * ```ts
 * const key = ed25519.utils.randomSecretKey()
 * const voucher = await signVoucher({ sign: (m) => ed25519.sign(m, key) }, channelId, 40_000n)
 * ```
 */
export async function signVoucher(
  signer: VoucherSigner,
  channelId: string,
  cumulativeAmount: bigint,
): Promise<Voucher> {
  const signature = await signer.sign(voucherMessage(channelId, cumulativeAmount))
  return { channelId: normalizeSuiAddress(channelId), cumulativeAmount, signature }
}

/**
 * Whether a voucher is signed by `signerPublicKey` (32 bytes) for its channel and amount. Cheap
 * format checks come first; a signature of any other length is false, never an exception.
 */
export function verifyVoucher(voucher: Voucher, signerPublicKey: Uint8Array): boolean {
  if (voucher.signature.length !== 64 || signerPublicKey.length !== 32) return false
  if (voucher.cumulativeAmount < 0n || voucher.cumulativeAmount > maxChannelAmount) return false
  try {
    const message = voucherMessage(voucher.channelId, voucher.cumulativeAmount)
    // Strict RFC 8032 verification: a subset of what the chain's check accepts, so that every
    // voucher the seller accepts can be settled.
    return ed25519.verify(voucher.signature, message, signerPublicKey, { zip215: false })
  } catch {
    return false
  }
}

/** What a channel's id is derived from. */
export type ChannelIdentity = {
  /** The package that holds the channel module. */
  readonly packageId: string
  /** The shared registry object the id is derived under. */
  readonly registry: string
  /** The coin type held (`0x…::usdc::USDC`). */
  readonly coinType: string
  readonly payer: string
  readonly payee: string
  /** 32 bytes chosen by the payer (a new channel between the same two needs a new salt). */
  readonly salt: Uint8Array
}

/**
 * The id of the channel `ChannelKey<coinType> { payer, payee, salt }` under the registry: what
 * `derived_object::claim` gives it on chain, computed offline.
 *
 * @throws {PaymentError} `invalid_config` for a salt that is not 32 bytes.
 */
export function channelIdOf(identity: ChannelIdentity): string {
  if (identity.salt.length !== 32) {
    throw new PaymentError('invalid_config', 'A channel salt is 32 bytes.')
  }
  const keyType = `${normalizeSuiAddress(identity.packageId)}::channel::ChannelKey<${normalizeStructTag(identity.coinType)}>`
  const key = ChannelKey.serialize({
    payer: normalizeSuiAddress(identity.payer),
    payee: normalizeSuiAddress(identity.payee),
    salt: identity.salt,
  }).toBytes()
  return deriveObjectID(normalizeSuiAddress(identity.registry), keyType, key)
}
