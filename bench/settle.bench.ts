/**
 * The seller's offline pre-check: decode + signature + digest + command analysis of a signed
 * coin-form payment, with no ledger round trip. Target: under 1 ms median. The SDK's own
 * (pure-JavaScript) signature check of the same bytes runs in the same group as the baseline.
 *
 * Run: npx vitest bench --run --project unit bench/settle.bench.ts
 */
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Transaction } from '@mysten/sui/transactions'
import { fromBase64, toBase64 } from '@mysten/sui/utils'
import { verifyTransactionSignature } from '@mysten/sui/verify'
import { bench, describe } from 'vitest'
import { normalizeTerms, precheckPayment } from '../src/precheck.js'

const usdc = '0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC'
const payTo = `0x${'33'.repeat(32)}`
const ref = '4btiuiMPvEENsttpZC7CZ53DruC3MAgfznDbASZ7DR6S'
const buyer = new Ed25519Keypair()
const target = normalizeTerms({ payTo, asset: usdc, amount: 20_000n })

async function signed(amount: bigint) {
  const tx = new Transaction()
  tx.setSender(buyer.toSuiAddress())
  tx.setGasPrice(1000)
  tx.setGasBudget(5_000_000)
  tx.setGasPayment([{ objectId: `0x${'11'.repeat(32)}`, version: '5', digest: ref }])
  const coin = tx.objectRef({ objectId: `0x${'22'.repeat(32)}`, version: '7', digest: ref })
  const [c] = tx.splitCoins(coin, [amount])
  tx.transferObjects([c!], payTo)
  const bytes = await tx.build()
  return { transaction: toBase64(bytes), signature: (await buyer.signTransaction(bytes)).signature }
}

const good = await signed(20_000n)
const underpaid = await signed(19_999n)
const goodBytes = fromBase64(good.transaction)

describe('offline pre-check of an x402 payment', () => {
  bench('precheckPayment: valid coin-form payment', async () => {
    const r = await precheckPayment(good.transaction, good.signature, target)
    if (r.status !== 'ok') throw new Error('expected ok')
  })
  bench('precheckPayment: underpayment rejected (no ledger call)', async () => {
    const r = await precheckPayment(underpaid.transaction, underpaid.signature, target)
    if (r.status !== 'rejected') throw new Error('expected a rejection')
  })
  bench('baseline: @mysten/sui verifyTransactionSignature alone', async () => {
    await verifyTransactionSignature(goodBytes, good.signature, { address: buyer.toSuiAddress() })
  })
})
