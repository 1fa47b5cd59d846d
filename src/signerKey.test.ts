import { encodeSuiPrivateKey } from '@mysten/sui/cryptography'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Secp256k1Keypair } from '@mysten/sui/keypairs/secp256k1'
import { Secp256r1Keypair } from '@mysten/sui/keypairs/secp256r1'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { signerFromSecretKey } from './signerKey.js'

describe('signerFromSecretKey', () => {
  it.each([
    ['Ed25519', new Ed25519Keypair()],
    ['secp256k1', new Secp256k1Keypair()],
    ['secp256r1', new Secp256r1Keypair()],
  ])('reads a %s key into a signer of the same address and scheme', async (_, keypair) => {
    const result = signerFromSecretKey(keypair.getSecretKey())
    if (result.status !== 'valid') expect.fail(`refused: ${JSON.stringify(result)}`)
    expect(result.signer.toSuiAddress()).toBe(keypair.toSuiAddress())
    expect(result.signer.getKeyScheme()).toBe(keypair.getKeyScheme())
    // It signs: the same signature the original key makes (both schemes sign deterministically).
    const message = new TextEncoder().encode('tollgate')
    expect((await result.signer.signPersonalMessage(message)).signature).toBe(
      (await keypair.signPersonalMessage(message)).signature,
    )
  })

  it('refuses what is not a Sui secret key', () => {
    const key = new Ed25519Keypair().getSecretKey()
    const lastChar = key.at(-1) === 'q' ? 'p' : 'q'
    for (const bad of [
      '',
      'hunter2',
      'suiprivkey1qqqq',
      `${key.slice(0, -1)}${lastChar}`, // bad checksum
      key.replace('suiprivkey', 'suipubkey'),
      Buffer.from(new Uint8Array(32).fill(7)).toString('base64'), // a raw key, not bech32
    ]) {
      expect(signerFromSecretKey(bad), bad).toEqual({ status: 'invalid', reason: 'malformed' })
    }
  })

  it('names the scheme of a valid key that cannot sign', () => {
    const multisig = encodeSuiPrivateKey(new Uint8Array(32).fill(1), 'MultiSig')
    expect(signerFromSecretKey(multisig)).toEqual({
      status: 'invalid',
      reason: 'unsupported_scheme',
      scheme: 'MultiSig',
    })
  })

  it('never throws, whatever the string', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.string().map((s) => `suiprivkey1${s}`),
        ),
        (text) => {
          expect(['valid', 'invalid']).toContain(signerFromSecretKey(text).status)
        },
      ),
    )
  })
})
