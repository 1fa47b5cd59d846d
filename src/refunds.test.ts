import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Transaction } from '@mysten/sui/transactions'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { PaymentError } from './errors.js'
import { transactionDigest } from './internal/suiSignature.js'
import type { ExecuteOutcome } from './ledger/types.js'
import { createRefunder, type RefundLedger } from './refunds.js'
import { createMemoryStore } from './stores/memory.js'

const usdc = '0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC'
const ref = '4btiuiMPvEENsttpZC7CZ53DruC3MAgfznDbASZ7DR6S'
const operator = new Ed25519Keypair()
const payer = new Ed25519Keypair().toSuiAddress()

/**
 * A ledger that follows Sui's rules for what the refunder relies on: a digest executes once (a
 * re-submission answers the same effects); every refund is a gasless transfer valid during two
 * epochs of the ledger's own clock (`clock.epoch`, injected), refused once that window has passed;
 * `next` scripts the answers of execute (`refuse` is a temporary refusal: nothing executed, the
 * bytes stay valid). `canStillExecute` judges by the window, as the real ledger does.
 */
function fakeLedger(next: Array<'ok' | 'fail' | 'lost' | 'refuse'> = []) {
  const clock = { epoch: 10n }
  const executed = new Map<string, boolean>()
  const windows = new Map<string, bigint>()
  const built: Uint8Array[] = []
  let nonce = 0
  const submissions: string[] = []
  const ledger: RefundLedger = {
    async buildTransfer({ sender, to, amount }) {
      const tx = new Transaction()
      tx.setSender(sender)
      tx.setGasPrice(0)
      tx.setGasBudget(0)
      tx.setGasPayment([])
      tx.setExpiration({
        ValidDuring: {
          minEpoch: String(clock.epoch),
          maxEpoch: String(clock.epoch + 1n),
          minTimestamp: null,
          maxTimestamp: null,
          chain: ref,
          nonce: ++nonce,
        },
      })
      tx.moveCall({
        target: '0x2::balance::send_funds',
        typeArguments: [usdc],
        arguments: [tx.balance({ type: usdc, balance: amount }), tx.pure.address(to)],
      })
      const bytes = await tx.build({ assumeSufficientAddressBalances: true } as never)
      windows.set(transactionDigest(bytes), clock.epoch + 1n)
      built.push(bytes)
      return bytes
    },
    async execute(bytes): Promise<ExecuteOutcome> {
      const digest = transactionDigest(bytes)
      submissions.push(digest)
      if (executed.has(digest)) return result(digest, executed.get(digest)!)
      if (clock.epoch > (windows.get(digest) ?? -1n)) {
        return { status: 'rejected', reason: 'Transaction Expired' }
      }
      const step = next.shift() ?? 'ok'
      if (step === 'refuse') return { status: 'rejected', reason: 'balance momentarily low' }
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
    async canStillExecute(bytes) {
      const window = windows.get(transactionDigest(bytes))
      return window === undefined || clock.epoch > window
        ? { status: 'never', reason: 'expired' }
        : { status: 'possible' }
    },
  }
  /** What reached the payer: the successful executions. */
  const paid = () => [...executed.values()].filter(Boolean).length
  /** Someone holding every signed refund submits them all again (they are signed and valid). */
  const replayAll = async () => {
    for (const bytes of built) await ledger.execute(bytes, ['sig'])
  }
  return { ledger, executed, submissions, clock, built, paid, replayAll }
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

  it('keeps a refused refund while it may still execute, and never pays twice', async () => {
    const store = await owedStore()
    const { ledger, submissions, built, paid, replayAll } = fakeLedger([
      'refuse',
      'refuse',
      'refuse',
    ])
    const refunder = createRefunder({ store, ledger, signer: operator })
    expect((await refunder.runOnce()).failed).toBe(1)
    expect(await refunder.runOnce()).toEqual({ refunded: 0, failed: 0, waiting: 1 })
    expect(await refunder.runOnce()).toEqual({ refunded: 0, failed: 0, waiting: 1 })
    expect(built).toHaveLength(1)
    // The refusal was temporary: the same signed refund goes through.
    expect((await refunder.runOnce()).refunded).toBe(1)
    expect(new Set(submissions).size).toBe(1)
    await replayAll()
    expect(paid()).toBe(1)
  })

  it('replaces a refused refund only once the ledger’s epoch has passed its window', async () => {
    const store = await owedStore()
    const { ledger, clock, built, paid, replayAll } = fakeLedger(['refuse', 'refuse', 'refuse'])
    const refunder = createRefunder({ store, ledger, signer: operator })
    await refunder.runOnce()
    expect((await refunder.runOnce()).waiting).toBe(1)
    clock.epoch += 1n // the last epoch of its window: still valid
    expect((await refunder.runOnce()).waiting).toBe(1)
    expect(built).toHaveLength(1)
    clock.epoch += 1n // past its window: it can never execute
    expect((await refunder.runOnce()).refunded).toBe(1)
    expect(built).toHaveLength(2)
    const record = await store.get('D1')
    expect(record?.refund?.refundDigest).toBe(transactionDigest(built[1]!))
    await replayAll()
    expect(paid()).toBe(1)
  })

  it('waits when the ledger cannot tell whether the refused refund may still execute', async () => {
    const store = await owedStore()
    const { ledger, built } = fakeLedger(['refuse', 'refuse'])
    const refunder = createRefunder({
      store,
      ledger: {
        ...ledger,
        canStillExecute: async () => ({ status: 'unknown', reason: 'timeout' }),
      },
      signer: operator,
    })
    await refunder.runOnce()
    expect(await refunder.runOnce()).toEqual({ refunded: 0, failed: 0, waiting: 1 })
    expect(built).toHaveLength(1)
  })

  it('pays exactly once under any schedule of runs, refusals, epochs and replays (property)', async () => {
    const action = fc.oneof(
      { arbitrary: fc.constant('run' as const), weight: 4 },
      { arbitrary: fc.constant('refuse' as const), weight: 4 },
      { arbitrary: fc.constant('replay' as const), weight: 2 },
      { arbitrary: fc.constant('epoch' as const), weight: 1 },
      { arbitrary: fc.constant('lose' as const), weight: 1 },
      { arbitrary: fc.constant('fail' as const), weight: 1 },
    )
    await fc.assert(
      fc.asyncProperty(fc.array(action, { maxLength: 14 }), async (actions) => {
        const store = await owedStore()
        const script: Array<'ok' | 'fail' | 'lost' | 'refuse'> = []
        const { ledger, clock, paid, replayAll } = fakeLedger(script)
        const refunder = createRefunder({ store, ledger, signer: operator })
        for (const a of actions) {
          if (a === 'run') await refunder.runOnce()
          else if (a === 'refuse') script.push('refuse')
          else if (a === 'lose') script.push('lost')
          else if (a === 'fail') script.push('fail')
          else if (a === 'epoch') clock.epoch += 1n
          else await replayAll()
          expect(paid()).toBeLessThanOrEqual(1)
        }
        // Afterwards the ledger answers again: the refund is paid, once.
        script.length = 0
        for (let i = 0; i < 4; i++) {
          await refunder.runOnce()
          clock.epoch += 2n
        }
        await replayAll()
        expect(paid()).toBe(1)
        expect((await store.get('D1'))?.state).toBe('refunded')
      }),
      { numRuns: 300 },
    )
  })

  it('replaces a refund that executed and failed', async () => {
    const store = await owedStore()
    const { ledger, executed } = fakeLedger(['fail'])
    const refunder = createRefunder({ store, ledger, signer: operator })
    expect((await refunder.runOnce()).failed).toBe(1)
    expect((await refunder.runOnce()).refunded).toBe(1)
    expect([...executed.values()]).toEqual([false, true])
  })

  it('two workers listing the same refund at once: one records and pays it, the other stands back', async () => {
    const store = await owedStore()
    const { ledger, executed, submissions } = fakeLedger()
    const events: string[] = []
    const worker = () =>
      createRefunder({ store, ledger, signer: operator, onEvent: (e) => events.push(e.type) })
    const summaries = await Promise.all([worker().runOnce(), worker().runOnce()])
    // Both built and signed a refund; the second to record it got a conflict and submitted nothing.
    expect(summaries).toEqual(
      expect.arrayContaining([
        { refunded: 1, failed: 0, waiting: 0 },
        { refunded: 0, failed: 0, waiting: 1 },
      ]),
    )
    expect(submissions).toHaveLength(1)
    expect(executed.size).toBe(1)
    expect(events).toEqual(['refunded'])
    expect((await store.get('D1'))?.state).toBe('refunded')
    // A worker that finds it paid by another when it comes to mark it refunded counts nothing.
    const late = createRefunder({
      store: { ...store, listRefundsDue: async () => [(await store.get('D1'))!] },
      ledger,
      signer: operator,
    })
    expect(await late.runOnce()).toEqual({ refunded: 0, failed: 0, waiting: 0 })
  })

  it('a broken store is a failed refund, reported with its cause, never a silent skip', async () => {
    const store = await owedStore()
    const { ledger, submissions } = fakeLedger()
    const reasons: string[] = []
    const broken = {
      ...store,
      recordRefundTransaction: () =>
        Promise.reject(
          new PaymentError('store_error', 'The payment store is unavailable; try again.', {
            status: 503,
          }),
        ),
    }
    const refunder = createRefunder({
      store: broken,
      ledger,
      signer: operator,
      onEvent: (e) => {
        if (e.type === 'refund_failed') reasons.push(e.reason)
      },
    })
    expect(await refunder.runOnce()).toEqual({ refunded: 0, failed: 1, waiting: 0 })
    expect(reasons).toEqual(['The payment store is unavailable; try again.'])
    expect(submissions).toEqual([])
  })
})
