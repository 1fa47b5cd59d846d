import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Secp256k1Keypair } from '@mysten/sui/keypairs/secp256k1'
import { describe, expect, it } from 'vitest'
import { proofBytes, signProof, verifyProof } from './proof.js'

const fields = {
  realm: 'seller.example',
  challengeId: 'abc',
  amount: '20000',
  currency: '0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC',
  recipient: `0x${'33'.repeat(32)}`,
  digest: '4btiuiMPvEENsttpZC7CZ53DruC3MAgfznDbASZ7DR6S',
}

describe('payment proof', () => {
  it('signs JCS JSON with keys in canonical order', () => {
    const text = new TextDecoder().decode(proofBytes(fields))
    expect(text).toBe(
      `{"amount":"20000","challengeId":"abc","currency":"${fields.currency}","digest":"${fields.digest}","domain":"seller.example","intent":"charge","method":"sui","recipient":"${fields.recipient}","version":1}`,
    )
  })

  it.each([
    ['Ed25519', () => new Ed25519Keypair()],
    ['secp256k1', () => new Secp256k1Keypair()],
  ])('verifies a %s proof by the sender only', async (_name, make) => {
    const buyer = make()
    const signature = await signProof(buyer, fields)
    expect(await verifyProof(fields, signature, buyer.toSuiAddress())).toEqual({ status: 'valid' })
    const stranger = new Ed25519Keypair().toSuiAddress()
    expect((await verifyProof(fields, signature, stranger)).status).toBe('invalid')
  })

  it('rejects a proof for another digest, amount or challenge', async () => {
    const buyer = new Ed25519Keypair()
    const signature = await signProof(buyer, fields)
    for (const change of [{ digest: 'x' }, { amount: '1' }, { challengeId: 'other' }]) {
      const check = await verifyProof({ ...fields, ...change }, signature, buyer.toSuiAddress())
      expect(check.status).toBe('invalid')
    }
    expect((await verifyProof(fields, 'garbage', buyer.toSuiAddress())).status).toBe('invalid')
  })
})
