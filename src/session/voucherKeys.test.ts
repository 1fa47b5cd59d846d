import { createHash, createPublicKey, verify } from 'node:crypto'
import { ed25519 } from '@noble/curves/ed25519.js'
import { describe, expect, it, vi } from 'vitest'
import { signVoucher, verifyVoucher, voucherMessage } from './voucher.js'

type Keys = typeof import('./voucherKeys.js')
/** The module as each runtime loads it: on Node (its own crypto), and where no `node:` exists. */
const runtimes: { name: string; load: () => Promise<Keys> }[] = [
  { name: 'on Node (node:crypto)', load: () => import('./voucherKeys.js') },
  {
    name: 'on a Web-standard runtime (Web Crypto)',
    async load() {
      const runtime = process as { getBuiltinModule?: unknown }
      const saved = runtime.getBuiltinModule
      runtime.getBuiltinModule = undefined
      vi.resetModules()
      try {
        return await import('./voucherKeys.js')
      } finally {
        runtime.getBuiltinModule = saved
      }
    },
  },
]

const channelId = `0x${'ab'.repeat(32)}`
const L = 2n ** 252n + 27742317777372353535851937790883648493n
const le = (value: bigint) => {
  const out = new Uint8Array(32)
  for (let i = 0; i < 32; i++) out[i] = Number((value >> BigInt(8 * i)) & 0xffn)
  return out
}
const fromLe = (bytes: Uint8Array) => bytes.reduceRight((v, b) => (v << 8n) | BigInt(b), 0n)

describe.each(runtimes)('native voucher keys $name', ({ load }) => {
  it('sign the same bytes as the JavaScript signer, and agree with verifyVoucher', async () => {
    const { createVoucherVerifier, nativeVoucherSigner } = await load()
    const secret = ed25519.utils.randomSecretKey()
    const publicKey = ed25519.getPublicKey(secret)
    const verifier = createVoucherVerifier()
    for (const amount of [0n, 1n, 20_000n, 2n ** 64n - 1n]) {
      const native = await signVoucher(nativeVoucherSigner(secret), channelId, amount)
      const js = await signVoucher({ sign: (m) => ed25519.sign(m, secret) }, channelId, amount)
      expect(native.signature).toEqual(js.signature)
      expect(await verifier.verify(native, publicKey)).toBe(true)
      expect(verifyVoucher(native, publicKey)).toBe(true)
      const other = { ...native, cumulativeAmount: amount === 0n ? 1n : amount - 1n }
      expect(await verifier.verify(other, publicKey)).toBe(false)
      expect(verifyVoucher(other, publicKey)).toBe(false)
    }
  })

  it('refuse a wrong key, a short signature, S at or above L, a small-order key', async () => {
    const { createVoucherVerifier, nativeVoucherSigner } = await load()
    const secret = ed25519.utils.randomSecretKey()
    const publicKey = ed25519.getPublicKey(secret)
    const verifier = createVoucherVerifier()
    const voucher = await signVoucher(nativeVoucherSigner(secret), channelId, 5n)
    expect(
      await verifier.verify(voucher, ed25519.getPublicKey(ed25519.utils.randomSecretKey())),
    ).toBe(false)
    expect(
      await verifier.verify({ ...voucher, signature: voucher.signature.slice(0, 63) }, publicKey),
    ).toBe(false)
    // S + L: the same point equation, a non-canonical S.
    const s = fromLe(voucher.signature.slice(32))
    const malleable = new Uint8Array(64)
    malleable.set(voucher.signature.slice(0, 32))
    malleable.set(le(s + L), 32)
    expect(await verifier.verify({ ...voucher, signature: malleable }, publicKey)).toBe(false)
    // The identity as a key (small order): refused whatever the signature.
    const identity = le(1n)
    expect(await verifier.verify(voucher, identity)).toBe(false)
  })

  it("refuse R = identity, which the key's owner can make pass OpenSSL's equation", async () => {
    const { createVoucherVerifier } = await load()
    const secret = ed25519.utils.randomSecretKey()
    const { scalar, pointBytes } = ed25519.utils.getExtendedPublicKey(secret)
    const message = voucherMessage(channelId, 7n)
    const R = le(1n) // the identity's encoding
    const digest = createHash('sha512').update(new Uint8Array([...R, ...pointBytes, ...message]))
    const k = fromLe(new Uint8Array(digest.digest())) % L
    const S = (k * scalar) % L
    const forged = new Uint8Array([...R, ...le(S)])
    const voucher = { channelId, cumulativeAmount: 7n, signature: forged }
    const key = createPublicKey({
      key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), pointBytes]),
      format: 'der',
      type: 'spki',
    })
    // OpenSSL alone (what Web Crypto calls in Node) accepts it; the verifier does not.
    expect(verify(null, message, key, forged)).toBe(true)
    expect(await createVoucherVerifier().verify(voucher, pointBytes)).toBe(false)
  })
})
