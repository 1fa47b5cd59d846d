import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SuiGrpcClient } from '@mysten/sui/grpc'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { afterAll, describe, expect, it } from 'vitest'
import { createTestWallet } from '../wallet.js'
import { startLedger } from './index.js'
import { buildCoinTransfer } from './testHelpers.js'

const dir = mkdtempSync(join(tmpdir(), 'tollgate-ledger-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('snapshot file', () => {
  it('keeps balances, objects and executed transactions across a restart', async () => {
    const stateFile = join(dir, 'ledger.json')
    const first = await startLedger({ stateFile })
    const client = new SuiGrpcClient({ network: 'mainnet', baseUrl: first.url })
    const { keypair: buyer } = await createTestWallet({ url: first.url, usdc: '1' })
    const seller = Ed25519Keypair.generate().toSuiAddress()
    const bytes = await buildCoinTransfer({
      client,
      payer: buyer,
      to: seller,
      amount: 20_000n,
      coinType: first.usdcType,
    })
    const executed = await client.core.executeTransaction({
      transaction: bytes,
      signatures: [(await buyer.signTransaction(bytes)).signature],
    })
    first.advanceEpoch()
    await first.stop()

    const second = await startLedger({ stateFile })
    try {
      const again = new SuiGrpcClient({ network: 'mainnet', baseUrl: second.url })
      expect(
        (await again.core.getBalance({ owner: seller, coinType: second.usdcType })).balance.balance,
      ).toBe('20000')
      expect(
        (await again.core.getBalance({ owner: buyer.toSuiAddress(), coinType: second.usdcType }))
          .balance.balance,
      ).toBe('980000')
      const found = await again.core.getTransaction({
        digest: executed.Transaction!.digest,
        include: { balanceChanges: true },
      })
      expect(found.Transaction?.balanceChanges).toContainEqual({
        address: seller,
        coinType: second.usdcType,
        amount: '20000',
      })
      expect((await again.core.getCurrentSystemState()).systemState.epoch).toBe('1')
      // A fresh wallet gets a fresh object id: the id counter survived too.
      const { funded } = await createTestWallet({ url: second.url })
      const before = new Set(
        (
          await again.core.listCoins({ owner: buyer.toSuiAddress(), coinType: second.usdcType })
        ).objects.map((c) => c.objectId),
      )
      expect(funded.coins.some((c) => before.has(c.objectId))).toBe(false)
    } finally {
      await second.stop()
    }
  })
})
