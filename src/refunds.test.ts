import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Transaction } from '@mysten/sui/transactions'
import { describe, expect, it } from 'vitest'
import { transactionDigest } from './internal/suiSignature.js'
import type { ExecuteOutcome } from './ledger/types.js'
import { createRefunder, type RefundLedger } from './refunds.js'
import { createMemoryStore } from './stores/memory.js'

const usdc = '0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC'
const ref = '4btiuiMPvEENsttpZC7CZ53DruC3MAgfznDbASZ7DR6S'
const operator = new Ed25519Keypair()
const payer = new Ed25519Keypair().toSuiAddress()

/** A ledger that remembers what executed; `next` scripts the answers of execute. */
function fakeLedger(next: Array<'ok' | 'fail' | 'lost' | 'refuse'> = []) {
  const executed = new Map<string, boolean>()
  let nonce = 0
  const submissions: string[] = []
  const ledger: RefundLedger = {
    async buildTransfer({ sender, to, amount }) {
      const tx = new Transaction()
      tx.setSender(sender)
      tx.setGasPrice(1000)
      tx.setGasBudget(5_000_000)
      tx.setGasPayment([
        { objectId: `0x${'11'.repeat(32)}`, version: String(++nonce), digest: ref },
      ])
      const [c] = tx.splitCoins(tx.gas, [amount])
      tx.transferObjects([c!], to)
      return tx.build()
    },
    async execute(bytes): Promise<ExecuteOutcome> {
      const digest = transactionDigest(bytes)
      submissions.push(digest)
      if (executed.has(digest)) return result(digest, executed.get(digest)!)
      const step = next.shift() ?? 'ok'
      if (step === 'refuse') return { status: 'rejected', reason: 'stale gas object' }
      executed.set(digest, step !== 'fail')
      if (step === 'lost') return { status: 'unknown', reason: 'response lost', digest }
      return result(digest, step === 'ok')
    },
    async getTransaction(digest) {
      const ok = executed.get(digest)
      return ok === undefined
        ? { status: 'not_found' }
        : { status: 'found', transaction: transactionOf(digest, ok) }
    },
  }
  return { ledger, executed, submissions }
}

function transactionOf(digest: string, success: boolean) {
  return {
    digest,
    success,
    sender: operator.toSuiAddress(),
    balanceChanges: [],
    events: [],
    checkpoint: null,
    timestampMs: null,
  }
}

function result(digest: string, success: boolean): ExecuteOutcome {
  return { status: 'executed', transaction: transactionOf(digest, success) }
}

async function owedStore() {
  const store = createMemoryStore()
  await store.claim('D1', { resource: 'r', dialect: 'x402' })
  await store.settled('D1', {
    payer,
    amount: 20_000n,
    resource: 'r',
    dialect: 'x402',
    network: 'sui:mainnet',
    asset: usdc,
    settledAt: new Date(),
  })
  await store.oweRefund('D1', 'handler threw')
  return store
}

describe('refunds', () => {
  it('without an operator key, lists the refund and pays nothing', async () => {
    const store = await owedStore()
    const { ledger, submissions } = fakeLedger()
    const refunder = createRefunder({ store, ledger })
    expect(await refunder.runOnce()).toEqual({ refunded: 0, failed: 0, waiting: 1 })
    expect((await refunder.owed()).map((r) => r.digest)).toEqual(['D1'])
    expect(submissions).toEqual([])
  })

  it('pays a due refund once, however often it runs', async () => {
    const store = await owedStore()
    const { ledger, executed } = fakeLedger()
    const events: string[] = []
    const refunder = createRefunder({
      store,
      ledger,
      signer: operator,
      onEvent: (e) => events.push(e.type),
    })
    await Promise.all([refunder.runOnce(), refunder.runOnce()])
    await refunder.runOnce()
    expect(executed.size).toBe(1)
    expect((await store.get('D1'))?.state).toBe('refunded')
    expect(events).toEqual(['refunded'])
  })

  it('after a lost response, finds the recorded refund on the ledger instead of paying again', async () => {
    const store = await owedStore()
    const { ledger, executed } = fakeLedger(['lost'])
    const refunder = createRefunder({ store, ledger, signer: operator })
    expect(await refunder.runOnce()).toEqual({ refunded: 0, failed: 0, waiting: 1 })
    expect((await refunder.runOnce()).refunded).toBe(1)
    expect(executed.size).toBe(1)
    const record = await store.get('D1')
    expect(record?.refund?.refundDigest).toBe(record?.refund?.transaction?.refundDigest)
  })

  it('re-submits the same recorded bytes when the first submission was refused', async () => {
    const store = await owedStore()
    const { ledger, submissions } = fakeLedger(['refuse'])
    const refunder = createRefunder({ store, ledger, signer: operator })
    expect((await refunder.runOnce()).failed).toBe(1)
    expect((await refunder.runOnce()).refunded).toBe(1)
    expect(submissions).toHaveLength(2)
    expect(new Set(submissions).size).toBe(1)
  })

  it('replaces a recorded refund whose re-submission is refused again', async () => {
    const store = await owedStore()
    const { ledger, submissions, executed } = fakeLedger(['refuse', 'refuse'])
    const refunder = createRefunder({ store, ledger, signer: operator })
    await refunder.runOnce()
    expect((await refunder.runOnce()).refunded).toBe(1)
    expect(submissions).toHaveLength(3)
    expect(new Set(submissions).size).toBe(2)
    expect(executed.size).toBe(1)
  })

  it('replaces a refund that executed and failed', async () => {
    const store = await owedStore()
    const { ledger, executed } = fakeLedger(['fail'])
    const refunder = createRefunder({ store, ledger, signer: operator })
    expect((await refunder.runOnce()).failed).toBe(1)
    expect((await refunder.runOnce()).refunded).toBe(1)
    expect([...executed.values()]).toEqual([false, true])
  })
})
