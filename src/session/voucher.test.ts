import { bcs } from '@mysten/sui/bcs'
import { normalizeSuiAddress, toHex } from '@mysten/sui/utils'
import { ed25519 } from '@noble/curves/ed25519.js'
import { blake2b } from '@noble/hashes/blake2.js'
import { describe, expect, it } from 'vitest'
import { MAINNET_USDC_TYPE } from '../testing/index.js'
import {
  channelIdOf,
  maxChannelAmount,
  signVoucher,
  verifyVoucher,
  voucherDomain,
  voucherMessage,
} from './voucher.js'

const channelId = normalizeSuiAddress('0xc0ffee')
const key = ed25519.utils.randomSecretKey()
const signer = { sign: (message: Uint8Array) => ed25519.sign(message, key) }
const publicKey = ed25519.getPublicKey(key)

describe('voucherMessage', () => {
  it('is the BCS of VoucherMsg: uleb128(26), the domain, the channel id, the amount as u64 LE', () => {
    const message = voucherMessage(channelId, 0x0102030405060708n)
    expect(message.length).toBe(67)
    expect(message[0]).toBe(26)
    expect(new TextDecoder().decode(message.slice(1, 27))).toBe(voucherDomain)
    expect(toHex(message.slice(27, 59))).toBe(channelId.slice(2))
    expect(toHex(message.slice(59))).toBe('0807060504030201')
  })

  it('is the same bytes for every voucher of a channel, once its first bytes are kept', () => {
    const short = '0x2a'
    for (const [id, amount] of [
      [channelId, 1n],
      [channelId, maxChannelAmount],
      [short, 0n],
      [short, 0x0a0b0c0dn],
    ] as const) {
      const expected = bcs
        .struct('VoucherMsg', {
          domain: bcs.vector(bcs.u8()),
          channel_id: bcs.Address,
          cumulative_amount: bcs.u64(),
        })
        .serialize({
          domain: new TextEncoder().encode(voucherDomain),
          channel_id: id,
          cumulative_amount: amount,
        })
        .toBytes()
      expect(toHex(voucherMessage(id, amount))).toBe(toHex(expected))
    }
  })

  it('refuses an amount that is not a u64', () => {
    expect(() => voucherMessage(channelId, -1n)).toThrow(/u64/)
    expect(() => voucherMessage(channelId, maxChannelAmount + 1n)).toThrow(/u64/)
    expect(voucherMessage(channelId, maxChannelAmount).length).toBe(67)
  })
})

describe('signVoucher / verifyVoucher', () => {
  it('verifies a voucher signed by the session key', async () => {
    const voucher = await signVoucher(signer, channelId, 40_000n)
    expect(voucher.signature.length).toBe(64)
    expect(verifyVoucher(voucher, publicKey)).toBe(true)
  })

  it('refuses another amount, another channel, another key, a truncated signature', async () => {
    const voucher = await signVoucher(signer, channelId, 40_000n)
    expect(verifyVoucher({ ...voucher, cumulativeAmount: 40_001n }, publicKey)).toBe(false)
    expect(verifyVoucher({ ...voucher, channelId: normalizeSuiAddress('0xbeef') }, publicKey)).toBe(
      false,
    )
    expect(verifyVoucher(voucher, ed25519.getPublicKey(ed25519.utils.randomSecretKey()))).toBe(
      false,
    )
    expect(verifyVoucher({ ...voucher, signature: voucher.signature.slice(1) }, publicKey)).toBe(
      false,
    )
    expect(verifyVoucher({ ...voucher, cumulativeAmount: -1n }, publicKey)).toBe(false)
  })

  it('is never a Sui transaction or personal-message signature (those cover a 32-byte digest)', () => {
    // The message is 67 bytes; a Sui user signature's message is always blake2b-256 output.
    expect(voucherMessage(channelId, 1n).length).not.toBe(32)
  })
})

describe('channelIdOf', () => {
  const identity = {
    packageId: '0x70116a7e',
    registry: '0x5e55',
    coinType: MAINNET_USDC_TYPE,
    payer: '0xa',
    payee: '0xb',
    salt: new Uint8Array(32).fill(1),
  }

  it("is derived_object's id: blake2b256(0xf0 ‖ registry ‖ len ‖ bcs(key) ‖ bcs(key type))", () => {
    // Computed here from the definition, independently of the SDK's deriveObjectID.
    const key = bcs
      .struct('ChannelKey', { payer: bcs.Address, payee: bcs.Address, salt: bcs.vector(bcs.u8()) })
      .serialize({ payer: '0xa', payee: '0xb', salt: identity.salt })
      .toBytes()
    const keyType = bcs.TypeTag.serialize(
      `0x2::derived_object::DerivedObjectKey<${normalizeSuiAddress('0x70116a7e')}::channel::ChannelKey<${MAINNET_USDC_TYPE}>>`,
    ).toBytes()
    const length = new Uint8Array(8)
    new DataView(length.buffer).setBigUint64(0, BigInt(key.length), true)
    const input = new Uint8Array([
      0xf0,
      ...bcs.Address.serialize('0x5e55').toBytes(),
      ...length,
      ...key,
      ...keyType,
    ])
    expect(channelIdOf(identity)).toBe(`0x${toHex(blake2b(input, { dkLen: 32 }))}`)
  })

  it('changes with the payer, the payee, the salt, the coin type, the registry and the package', () => {
    const ids = new Set([
      channelIdOf(identity),
      channelIdOf({ ...identity, payer: '0xc' }),
      channelIdOf({ ...identity, payee: '0xc' }),
      channelIdOf({ ...identity, salt: new Uint8Array(32).fill(2) }),
      channelIdOf({ ...identity, coinType: '0x2::sui::SUI' }),
      channelIdOf({ ...identity, registry: '0x5e56' }),
      channelIdOf({ ...identity, packageId: '0x70116a7f' }),
    ])
    expect(ids.size).toBe(7)
  })

  it('refuses a salt that is not 32 bytes', () => {
    expect(() => channelIdOf({ ...identity, salt: new Uint8Array(31) })).toThrow(/32 bytes/)
  })
})
