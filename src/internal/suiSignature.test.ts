import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Secp256k1Keypair } from '@mysten/sui/keypairs/secp256k1'
import { Transaction } from '@mysten/sui/transactions'
import { fromBase64, normalizeSuiAddress, toBase64 } from '@mysten/sui/utils'
import { verifyTransactionSignature } from '@mysten/sui/verify'
import { describe, expect, it } from 'vitest'
import { transactionDigest, verifyTransactionSigner } from './suiSignature.js'

async function buildBytes(sender: string): Promise<Uint8Array> {
  const tx = new Transaction()
  tx.setSender(sender)
  tx.setGasPrice(1000)
  tx.setGasBudget(5_000_000)
  tx.setGasPayment([
    { objectId: `0x${'ab'.repeat(32)}`, version: '7', digest: '11111111111111111111111111111111' },
  ])
  const [coin] = tx.splitCoins(tx.gas, [tx.pure.u64(10_000)])
  tx.transferObjects([coin!], tx.pure.address(`0x${'cd'.repeat(32)}`))
  return tx.build()
}

async function sdkSays(bytes: Uint8Array, signature: string): Promise<string | 'invalid'> {
  try {
    return normalizeSuiAddress((await verifyTransactionSignature(bytes, signature)).toSuiAddress())
  } catch {
    return 'invalid'
  }
}

function fast(result: Awaited<ReturnType<typeof verifyTransactionSigner>>): string {
  return result.status === 'valid' ? result.address : 'invalid'
}

describe('verifyTransactionSigner', () => {
  it('agrees with the SDK on a valid Ed25519 signature and names the signer', async () => {
    const key = Ed25519Keypair.generate()
    const bytes = await buildBytes(key.toSuiAddress())
    const { signature } = await key.signTransaction(bytes)
    const result = await verifyTransactionSigner(bytes, signature)
    expect(result).toEqual({ status: 'valid', address: key.toSuiAddress() })
    expect(fast(result)).toBe(await sdkSays(bytes, signature))
  })

  it('agrees with the SDK on tampered bytes', async () => {
    const key = Ed25519Keypair.generate()
    const bytes = await buildBytes(key.toSuiAddress())
    const { signature } = await key.signTransaction(bytes)
    const tampered = Uint8Array.from(bytes)
    tampered[tampered.length - 1] = (tampered.at(-1) ?? 0) ^ 1
    const result = await verifyTransactionSigner(tampered, signature)
    expect(result.status).toBe('invalid')
    expect(await sdkSays(tampered, signature)).toBe('invalid')
  })

  it('agrees with the SDK on a tampered signature', async () => {
    const key = Ed25519Keypair.generate()
    const bytes = await buildBytes(key.toSuiAddress())
    const raw = fromBase64((await key.signTransaction(bytes)).signature)
    raw[10] = (raw[10] ?? 0) ^ 0xff
    const signature = toBase64(raw)
    expect((await verifyTransactionSigner(bytes, signature)).status).toBe('invalid')
    expect(await sdkSays(bytes, signature)).toBe('invalid')
  })

  it('agrees with the SDK when another key signed (reports that key, not the sender)', async () => {
    const sender = Ed25519Keypair.generate()
    const other = Ed25519Keypair.generate()
    const bytes = await buildBytes(sender.toSuiAddress())
    const { signature } = await other.signTransaction(bytes)
    const result = await verifyTransactionSigner(bytes, signature)
    expect(result).toEqual({ status: 'valid', address: other.toSuiAddress() })
    expect(fast(result)).toBe(await sdkSays(bytes, signature))
  })

  it('rejects a signature whose public key was swapped for another', async () => {
    const key = Ed25519Keypair.generate()
    const other = Ed25519Keypair.generate()
    const bytes = await buildBytes(key.toSuiAddress())
    const raw = fromBase64((await key.signTransaction(bytes)).signature)
    raw.set(other.getPublicKey().toRawBytes(), 65)
    const signature = toBase64(raw)
    expect((await verifyTransactionSigner(bytes, signature)).status).toBe('invalid')
    expect(await sdkSays(bytes, signature)).toBe('invalid')
  })

  it('uses the SDK for secp256k1 and agrees with it', async () => {
    const key = Secp256k1Keypair.generate()
    const bytes = await buildBytes(key.toSuiAddress())
    const { signature } = await key.signTransaction(bytes)
    expect(await verifyTransactionSigner(bytes, signature)).toEqual({
      status: 'valid',
      address: key.toSuiAddress(),
    })
    const tampered = Uint8Array.from(bytes)
    tampered[5] = (tampered[5] ?? 0) ^ 1
    expect((await verifyTransactionSigner(tampered, signature)).status).toBe('invalid')
  })

  it('answers invalid, never throws, for garbage', async () => {
    const bytes = await buildBytes(Ed25519Keypair.generate().toSuiAddress())
    const randomEd25519 = Uint8Array.from({ length: 97 }, (_, i) =>
      i === 0 ? 0 : (i * 37 + 11) % 256,
    )
    const junks = [
      '',
      'not base64!!',
      toBase64(randomEd25519),
      toBase64(Uint8Array.of(0, 1, 2)),
      'A'.repeat(20_000),
    ]
    for (const junk of junks) {
      expect((await verifyTransactionSigner(bytes, junk)).status).toBe('invalid')
    }
  })
})

describe('transactionDigest', () => {
  it('is the digest the SDK computes for the built transaction', async () => {
    const key = Ed25519Keypair.generate()
    const bytes = await buildBytes(key.toSuiAddress())
    expect(transactionDigest(bytes)).toBe(await Transaction.from(bytes).getDigest())
  })
})
