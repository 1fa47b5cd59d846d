import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { describe, expect, it } from 'vitest'
import { PaymentError } from './errors.js'
import type { ExecuteOutcome, LookupOutcome, Settlement } from './ledger/types.js'
import { normalizeTerms } from './precheck.js'
import { signProof } from './proof.js'
import { resolvePending, type SettlementLedger, settleMpp, settleX402 } from './settle.js'
import { createMemoryStore } from './stores/memory.js'
import { coinPayment, signOffline, someDigest, usdcType as usdc } from './testHelpers.js'

const payTo = `0x${'33'.repeat(32)}`
const ref = someDigest
const buyer = new Ed25519Keypair()
const terms = {
  ...normalizeTerms({ payTo, asset: usdc, amount: 20_000n }),
  network: 'sui:mainnet',
  resource: 'http://seller.test/paid',
}

async function payment(amount = 20_000n) {
  const tx = coinPayment({ sender: buyer.toSuiAddress(), to: payTo, amount })
  const signed = await signOffline(tx, buyer)
  return {
    transaction: signed.transaction,
    signature: signed.signature,
    digest: await tx.getDigest(),
  }
}

/** A scripted ledger: answers what the test says, and counts executions. */
function scriptedLedger(answer: (digest: string) => ExecuteOutcome, lookups: LookupOutcome[] = []) {
  const executed: string[] = []
  const ledger: SettlementLedger = {
    async execute(bytes) {
      const { transactionDigest } = await import('./internal/suiSignature.js')
      const digest = transactionDigest(bytes)
      executed.push(digest)
      return answer(digest)
    },
    async getTransaction() {
      return lookups.shift() ?? { status: 'not_found' }
    },
  }
  return { ledger, executed }
}

function paid(digest: string, amount = 20_000n, extra: Partial<Settlement> = {}): ExecuteOutcome {
  return {
    status: 'executed',
    transaction: {
      digest,
      success: true,
      sender: buyer.toSuiAddress(),
      events: [],
      checkpoint: null,
      timestampMs: null,
      balanceChanges: [
        { address: payTo, coinType: usdc, amount },
        { address: buyer.toSuiAddress(), coinType: usdc, amount: -amount },
      ],
      ...extra,
    },
  }
}

describe('settleX402', () => {
  it('settles once and answers replay for the same payment', async () => {
    const store = createMemoryStore()
    const { ledger, executed } = scriptedLedger((d) => paid(d))
    const p = await payment()
    const first = await settleX402(p, terms, { ledger, store })
    expect(first).toMatchObject({
      status: 'settled',
      digest: p.digest,
      amount: 20_000n,
      resumed: false,
    })
    await store.served(p.digest)
    const again = await settleX402(p, terms, { ledger, store })
    expect(again.status === 'rejected' && again.error.code).toBe('replay')
    expect(executed).toEqual([p.digest])
  })

  it('serves a settled-but-unserved payment once more after its serve lease', async () => {
    let now = 1_000_000
    const store = createMemoryStore({ now: () => now, serveLeaseMs: 1000 })
    const { ledger } = scriptedLedger((d) => paid(d))
    const p = await payment()
    expect((await settleX402(p, terms, { ledger, store })).status).toBe('settled')
    now += 5000 // the serving process died: the lease runs out
    expect(await settleX402(p, terms, { ledger, store })).toMatchObject({
      status: 'settled',
      resumed: true,
    })
    await store.served(p.digest)
    const third = await settleX402(p, terms, { ledger, store })
    expect(third.status === 'rejected' && third.error.code).toBe('replay')
  })

  it('tells a presenter to retry while another holds the payment, until its lease ends', async () => {
    let now = 1_000_000
    const clock = () => now
    const store = createMemoryStore({ now: clock, claimLeaseMs: 3_500, serveLeaseMs: 60_000 })
    const { ledger, executed } = scriptedLedger((d) => paid(d))
    const p = await payment()
    // Another request claimed it and is submitting it: retry when its claim lease would end.
    expect(
      (await store.claim(p.digest, { resource: terms.resource, dialect: 'x402' })).status,
    ).toBe('claimed')
    const whileClaimed = await settleX402(p, terms, { ledger, store, now: clock })
    expect(whileClaimed).toMatchObject({ status: 'pending', retryAfterSeconds: 4 })
    expect(whileClaimed.status === 'pending' && whileClaimed.error).toMatchObject({
      code: 'settlement_pending',
      details: { digest: p.digest, state: 'claimed' },
    })
    expect(executed).toEqual([])
    // That request died: after the claim lease the payment is claimed afresh and settled here.
    now += 3_500
    expect(await settleX402(p, terms, { ledger, store, now: clock })).toMatchObject({
      status: 'settled',
    })
    // Being served here: a presenter is told to retry (at most 10 s), even 1 ms before the end.
    now += 59_999
    expect(await settleX402(p, terms, { ledger, store, now: clock })).toMatchObject({
      status: 'pending',
      retryAfterSeconds: 1,
    })
    // For another resource, the same payment is a replay.
    const elsewhere = await settleX402(
      p,
      { ...terms, resource: 'http://seller.test/other' },
      {
        ledger,
        store,
        now: clock,
      },
    )
    expect(elsewhere.status === 'rejected' && elsewhere.error.code).toBe('replay')
  })

  it.each([
    [
      'failed on chain',
      (d: string) => paid(d, 20_000n, { success: false, error: 'InsufficientCoinBalance' }),
      'transaction_failed',
    ],
    ['underpaid in effects', (d: string) => paid(d, 19_000n), 'insufficient_amount'],
    [
      'paid in another asset',
      (d: string) =>
        ({
          ...paid(d),
          transaction: {
            ...(paid(d) as { transaction: Settlement }).transaction,
            balanceChanges: [{ address: payTo, coinType: '0x2::sui::SUI', amount: 20_000n }],
          },
        }) as ExecuteOutcome,
      'wrong_asset',
    ],
  ])('rejects a payment %s and burns its digest', async (_name, answer, code) => {
    const store = createMemoryStore()
    const p = await payment()
    const result = await settleX402(p, terms, { ledger: scriptedLedger(answer).ledger, store })
    expect(result.status === 'rejected' && result.error.code).toBe(code)
    expect((await store.get(p.digest))?.state).toBe('rejected')
  })

  it('releases the claim when the ledger refuses the transaction before execution', async () => {
    const store = createMemoryStore()
    const p = await payment()
    const result = await settleX402(p, terms, {
      ledger: scriptedLedger(() => ({ status: 'rejected', reason: 'stale object' })).ledger,
      store,
    })
    expect(result.status === 'rejected' && result.error.code).toBe('settlement_failed')
    expect(await store.get(p.digest)).toBeUndefined()
  })

  it('leaves an unanswered submission pending and resolves it by look-up', async () => {
    const store = createMemoryStore()
    const p = await payment()
    const { ledger } = scriptedLedger(() => ({ status: 'unknown', reason: 'timeout', digest: '' }))
    const result = await settleX402(p, terms, { ledger, store })
    expect(result.status).toBe('pending')
    const pending = await store.get(p.digest)
    expect(pending?.state).toBe('pending')
    const found = (paid(p.digest) as { transaction: Settlement }).transaction
    const resolved = await resolvePending(pending!, terms, {
      ledger: scriptedLedger(() => paid(p.digest), [{ status: 'found', transaction: found }])
        .ledger,
      store,
    })
    expect(resolved.status).toBe('settled')
    expect((await store.get(p.digest))?.state).toBe('settled')
  })

  it('keeps a payment pending while the ledger does not know it', async () => {
    const store = createMemoryStore()
    const p = await payment()
    const { ledger } = scriptedLedger(() => ({ status: 'unknown', reason: 'timeout', digest: '' }))
    await settleX402(p, terms, { ledger, store })
    const resolved = await resolvePending((await store.get(p.digest))!, terms, { ledger, store })
    expect(resolved.status).toBe('pending')
    expect((await store.get(p.digest))?.state).toBe('pending')
  })

  it('resolves a pending payment when the buyer presents it again', async () => {
    const store = createMemoryStore()
    const p = await payment()
    const lost = scriptedLedger(() => ({ status: 'unknown', reason: 'timeout', digest: '' }))
    expect((await settleX402(p, terms, { ledger: lost.ledger, store })).status).toBe('pending')
    const back = scriptedLedger((d) => paid(d))
    const again = await settleX402(p, terms, { ledger: back.ledger, store })
    expect(again).toMatchObject({ status: 'settled', digest: p.digest })
    // The same bytes were submitted again (idempotent on the ledger), and settled once.
    expect(back.executed).toEqual([p.digest])
    // Settled and not yet served: its server holds it, so a presenter is told to retry.
    const third = await settleX402(p, terms, { ledger: back.ledger, store })
    expect(third).toMatchObject({ status: 'pending', retryAfterSeconds: 10 })
    expect(third.status === 'pending' && third.error.code).toBe('settlement_pending')
    await store.served(p.digest)
    const fourth = await settleX402(p, terms, { ledger: back.ledger, store })
    expect(fourth.status === 'rejected' && fourth.error.code).toBe('replay')
  })

  it('settles a pending payment once when it is presented again by many at once', async () => {
    const store = createMemoryStore()
    const p = await payment()
    const lost = scriptedLedger(() => ({ status: 'unknown', reason: 'timeout', digest: '' }))
    await settleX402(p, terms, { ledger: lost.ledger, store })
    const back = scriptedLedger((d) => paid(d))
    const results = await Promise.all(
      Array.from({ length: 20 }, () => settleX402(p, terms, { ledger: back.ledger, store })),
    )
    const outcomes = results.map((r) => (r.status === 'rejected' ? r.error.code : r.status))
    expect(outcomes.filter((o) => o === 'settled')).toHaveLength(1)
    // The others lost to a presenter that is serving it now: told to retry, not "already used".
    expect(outcomes.filter((o) => o === 'pending')).toHaveLength(19)
  })

  it('a store that fails while recording the settlement throws its store_error, never a replay', async () => {
    const memory = createMemoryStore()
    const failure = new PaymentError('store_error', 'The payment store failed.', {
      cause: Object.assign(new Error('relation "payments" does not exist'), { code: '42P01' }),
    })
    const store = { ...memory, settled: () => Promise.reject(failure) }
    const { ledger } = scriptedLedger((d) => paid(d))
    const p = await payment()
    await expect(settleX402(p, terms, { ledger, store })).rejects.toBe(failure)
    // Bad input the store refuses is the same: an error, not a lost race.
    const refusing = { ...memory, settled: memory.settled }
    const other = await payment(20_001n)
    const invalid = await settleX402(
      other,
      { ...terms, network: 'n'.repeat(300) },
      {
        ledger,
        store: refusing,
      },
    ).catch((e: unknown) => e)
    expect(invalid).toMatchObject({ code: 'store_error', status: 500 })
  })

  it('rejects before touching the ledger when the pre-check fails', async () => {
    const store = createMemoryStore()
    const { ledger, executed } = scriptedLedger((d) => paid(d))
    const result = await settleX402(await payment(1n), terms, { ledger, store })
    expect(result.status === 'rejected' && result.error.code).toBe('insufficient_amount')
    expect(executed).toEqual([])
  })
})

describe('settleMpp', () => {
  const proof = {
    realm: 'seller.test',
    challengeId: 'c1',
    amount: '20000',
    currency: usdc,
    recipient: payTo,
  }

  it('settles a digest with the sender proof, and only once', async () => {
    const store = createMemoryStore()
    const p = await payment()
    const tx = (paid(p.digest) as { transaction: Settlement }).transaction
    const signature = await signProof(buyer, { ...proof, digest: p.digest })
    const lookups: LookupOutcome[] = [{ status: 'not_found' }, { status: 'found', transaction: tx }]
    const { ledger } = scriptedLedger(() => paid(p.digest), lookups)
    const result = await settleMpp({ digest: p.digest, signature, proof }, terms, {
      ledger,
      store,
      lookupBackoffMs: 1,
    })
    expect(result).toMatchObject({ status: 'settled', dialect: 'mpp', payer: buyer.toSuiAddress() })
    await store.served(p.digest)
    const replay = await settleMpp({ digest: p.digest, signature, proof }, terms, { ledger, store })
    expect(replay.status === 'rejected' && replay.error.code).toBe('replay')
  })

  it('refuses someone else’s proof and leaves the digest to its owner', async () => {
    const store = createMemoryStore()
    const p = await payment()
    const tx = (paid(p.digest) as { transaction: Settlement }).transaction
    const thief = await signProof(new Ed25519Keypair(), { ...proof, digest: p.digest })
    const lookups: LookupOutcome[] = [
      { status: 'found', transaction: tx },
      { status: 'found', transaction: tx },
    ]
    const { ledger } = scriptedLedger(() => paid(p.digest), lookups)
    const stolen = await settleMpp({ digest: p.digest, signature: thief, proof }, terms, {
      ledger,
      store,
    })
    expect(stolen.status === 'rejected' && stolen.error.code).toBe('signer_mismatch')
    const owner = await signProof(buyer, { ...proof, digest: p.digest })
    expect(
      (await settleMpp({ digest: p.digest, signature: owner, proof }, terms, { ledger, store }))
        .status,
    ).toBe('settled')
  })

  it('rejects an unknown digest after bounded look-ups', async () => {
    const store = createMemoryStore()
    const { ledger } = scriptedLedger(() => ({ status: 'unknown', reason: '', digest: '' }))
    const result = await settleMpp({ digest: ref, signature: 'x', proof }, terms, {
      ledger,
      store,
      lookupBackoffMs: 1,
      lookupAttempts: 3,
    })
    expect(result.status === 'rejected' && result.error.code).toBe('transaction_not_found')
  })
})
