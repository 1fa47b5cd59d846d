/**
 * The seller's offline pre-check: decode + signature + digest + command analysis of a signed
 * coin-form payment, with no ledger round trip. Target: under 1 ms median. The SDK's own
 * (pure-JavaScript) signature check of the same bytes runs in the same group as the baseline.
 *
 * Run: npx vitest bench --run --project unit bench/settle.bench.ts
 */
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { verifyTransactionSignature } from '@mysten/sui/verify'
import { bench, describe } from 'vitest'
import { normalizeTerms, precheckPayment } from '../src/precheck.js'
import { coinPayment, signOffline, usdcType } from '../src/testHelpers.js'

const payTo = `0x${'33'.repeat(32)}`
const buyer = new Ed25519Keypair()
const target = normalizeTerms({ payTo, asset: usdcType, amount: 20_000n })
const signed = (amount: bigint) =>
  signOffline(coinPayment({ sender: buyer.toSuiAddress(), to: payTo, amount }), buyer)

const good = await signed(20_000n)
const underpaid = await signed(19_999n)

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
    await verifyTransactionSignature(good.bytes, good.signature, { address: buyer.toSuiAddress() })
  })
})
