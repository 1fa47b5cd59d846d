import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Transaction } from '@mysten/sui/transactions'
import { describe, expect, it } from 'vitest'
import { createEngine, type LedgerEngine } from './engine.js'
import { runFaucet } from './faucet.js'
import { coinsOf } from './state.js'

async function payment(
  engine: LedgerEngine,
  buyer: Ed25519Keypair,
  to: string,
  coin: { objectId: string; version: string; digest: string },
  gas: { objectId: string; version: string; digest: string },
) {
  const tx = new Transaction()
  tx.setSender(buyer.toSuiAddress())
  tx.setGasPrice(engine.state.referenceGasPrice)
  tx.setGasBudget(10_000_000)
  tx.setGasPayment([gas])
  const [paid] = tx.splitCoins(tx.objectRef(coin), [tx.pure.u64(10_000)])
  tx.transferObjects([paid!], tx.pure.address(to))
  const bytes = await tx.build()
  return { bytes, signature: (await buyer.signTransaction(bytes)).signature }
}

describe('ledger engine', () => {
  it('executes exactly one of two concurrent transactions spending the same coin', async () => {
    for (let round = 0; round < 20; round++) {
      const engine = createEngine()
      const buyer = Ed25519Keypair.generate()
      const { coins } = runFaucet(engine, { address: buyer.toSuiAddress() })
      const [usdc, sui] = [coins[0]!, coins[1]!]
      const a = await payment(engine, buyer, '0xa', usdc, sui)
      const b = await payment(engine, buyer, '0xb', usdc, sui)
      const results = await Promise.all([
        engine.submit(a.bytes, [a.signature]),
        engine.submit(b.bytes, [b.signature]),
      ])
      expect(results.map((r) => r.status).sort()).toEqual(['executed', 'rejected'])
      const received =
        coinsOf(engine.state, '0xa', engine.state.usdcType).length +
        coinsOf(engine.state, '0xb', engine.state.usdcType).length
      expect(received).toBe(1)
    }
  })

  it('returns the same record to every concurrent submission of the same bytes', async () => {
    const engine = createEngine()
    const buyer = Ed25519Keypair.generate()
    const { coins } = runFaucet(engine, { address: buyer.toSuiAddress() })
    const p = await payment(engine, buyer, '0xa', coins[0]!, coins[1]!)
    const results = await Promise.all(
      Array.from({ length: 10 }, () => engine.submit(p.bytes, [p.signature])),
    )
    const records = new Set(results.map((r) => (r.status === 'executed' ? r.record : undefined)))
    expect(records.size).toBe(1)
    expect(engine.state.transactions.size).toBe(1)
    expect(coinsOf(engine.state, '0xa', engine.state.usdcType)).toHaveLength(1)
  })

  it('simulates without committing, and rejects garbage bytes', async () => {
    const engine = createEngine()
    const buyer = Ed25519Keypair.generate()
    const { coins } = runFaucet(engine, { address: buyer.toSuiAddress() })
    const p = await payment(engine, buyer, '0xa', coins[0]!, coins[1]!)
    const simulated = await engine.simulate(p.bytes)
    expect(simulated.status).toBe('executed')
    expect(engine.state.transactions.size).toBe(0)
    expect(coinsOf(engine.state, '0xa', engine.state.usdcType)).toHaveLength(0)
    expect((await engine.submit(Uint8Array.of(1, 2, 3), [p.signature])).status).toBe('rejected')
  })
})
