import { describe, expect, it } from 'vitest'
import {
  type ClaimResolution,
  claimLapsedReason,
  createLeaseSweeper,
  type LeaseSweepEvent,
  leaseLapsedReason,
} from './leaseSweeper.js'
import { createMemoryStore } from './stores/memory.js'
import type { PaymentStore } from './stores/types.js'

const meta = { resource: 'https://api.example/v1/slow', dialect: 'x402' } as const
const serveLeaseMs = 30_000
const graceMs = 10_000

async function settled(store: PaymentStore, digest: string): Promise<void> {
  await store.claim(digest, meta)
  await store.settled(digest, {
    payer: `0x${'ab'.repeat(32)}`,
    amount: 20_000n,
    resource: meta.resource,
    dialect: 'x402',
    network: 'sui:mainnet',
    asset: '0x2::usdc::USDC',
    settledAt: new Date(0),
  })
}

function setUp() {
  let now = 1_700_000_000_000
  const clock = () => now
  const store = createMemoryStore({ now: clock, serveLeaseMs })
  const events: LeaseSweepEvent[] = []
  let woken = 0
  const sweeper = createLeaseSweeper({
    store,
    graceMs,
    now: clock,
    refunder: { runOnce: async () => ++woken },
    onEvent: (event) => events.push(event),
  })
  return {
    store,
    sweeper,
    events,
    woken: () => woken,
    advance: (ms: number) => {
      now += ms
    },
  }
}

describe('the lease sweeper', () => {
  it('owes back a settled payment whose lease lapsed more than the grace ago, and wakes the refunds', async () => {
    const { store, sweeper, events, woken, advance } = setUp()
    await settled(store, 'dead')
    await settled(store, 'served')
    await store.served('served')
    // Within the lease, and within the grace after it: its buyer may still present it again.
    advance(serveLeaseMs + graceMs - 1)
    expect(await sweeper.runOnce()).toEqual({
      owed: 0,
      served: 0,
      released: 0,
      rejected: 0,
      skipped: 0,
    })
    expect((await store.get('dead'))?.state).toBe('settled')
    expect(woken()).toBe(0)
    advance(1)
    expect(await sweeper.runOnce()).toEqual({
      owed: 1,
      served: 0,
      released: 0,
      rejected: 0,
      skipped: 0,
    })
    const record = await store.get('dead')
    expect(record?.state).toBe('refund_due')
    expect(record?.refund?.reason).toBe(leaseLapsedReason)
    expect(events).toEqual([
      {
        type: 'lease_lapsed',
        digest: 'dead',
        payer: `0x${'ab'.repeat(32)}`,
        amount: 20_000n,
        resource: meta.resource,
      },
    ])
    expect(woken()).toBe(1)
    expect((await store.get('served'))?.state).toBe('served')
    // Owed once: a second run finds nothing.
    expect(await sweeper.runOnce()).toEqual({
      owed: 0,
      served: 0,
      released: 0,
      rejected: 0,
      skipped: 0,
    })
  })

  it('leaves alone a payment whose lease is renewed, or that was presented again', async () => {
    const { store, sweeper, advance } = setUp()
    await settled(store, 'running')
    await settled(store, 'back')
    advance(serveLeaseMs - 1)
    const lease = (await store.get('running'))?.leaseUntil as Date
    const renewal = await store.renewServeLease('running', lease)
    expect(renewal.status).toBe('renewed')
    advance(graceMs + 1)
    // `back` lapsed; its buyer presents it again before the sweep: served there.
    expect((await store.claim('back', meta)).status).toBe('settled_unserved')
    expect(await sweeper.runOnce()).toEqual({
      owed: 0,
      served: 0,
      released: 0,
      rejected: 0,
      skipped: 0,
    })
    expect((await store.get('running'))?.state).toBe('settled')
    expect((await store.get('back'))?.state).toBe('settled')
  })

  it('counts a payment moved on between listing and owing as skipped', async () => {
    const { store, advance } = setUp()
    await settled(store, 'raced')
    advance(serveLeaseMs + graceMs)
    const racing: PaymentStore = {
      ...store,
      async listLapsed(options) {
        const listed = await store.listLapsed(options)
        // The buyer presents it again right after the sweeper listed it.
        await store.claim('raced', meta)
        return listed
      },
    }
    const sweeper = createLeaseSweeper({ store: racing, graceMs })
    expect(await sweeper.runOnce()).toEqual({
      owed: 0,
      served: 0,
      released: 0,
      rejected: 0,
      skipped: 1,
    })
    expect((await store.get('raced'))?.state).toBe('settled')
  })

  it('reports a store it cannot reach, and tries again on the next run', async () => {
    const { store } = setUp()
    const events: LeaseSweepEvent[] = []
    const broken: PaymentStore = {
      ...store,
      listLapsed: () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:5432')),
    }
    const sweeper = createLeaseSweeper({ store: broken, onEvent: (e) => events.push(e) })
    expect(await sweeper.runOnce()).toEqual({
      owed: 0,
      served: 0,
      released: 0,
      rejected: 0,
      skipped: 0,
    })
    expect(events).toEqual([
      { type: 'sweep_failed', reason: 'connect ECONNREFUSED 127.0.0.1:5432' },
    ])
  })

  it('marks served, never refunds, a lapsed payment whose work `delivered` knows was done', async () => {
    let now = 1_700_000_000_000
    const clock = () => now
    const store = createMemoryStore({ now: clock, serveLeaseMs })
    const events: LeaseSweepEvent[] = []
    const asked: string[] = []
    const sweeper = createLeaseSweeper({
      store,
      graceMs,
      now: clock,
      // The credit bought by `credited` was committed before its process died.
      delivered: async (record) => {
        asked.push(record.digest)
        if (record.digest === 'unsure') throw new Error('the credit table did not answer')
        return record.digest === 'credited'
      },
      onEvent: (event) => events.push(event),
    })
    for (const digest of ['credited', 'lost', 'unsure']) await settled(store, digest)
    now += serveLeaseMs + graceMs
    expect(await sweeper.runOnce()).toEqual({
      owed: 1,
      served: 1,
      released: 0,
      rejected: 0,
      skipped: 1,
    })
    expect(asked.sort()).toEqual(['credited', 'lost', 'unsure'])
    expect((await store.get('credited'))?.state).toBe('served')
    expect((await store.get('lost'))?.state).toBe('refund_due')
    // Not known either way: neither refunded nor served, asked again on the next run.
    expect((await store.get('unsure'))?.state).toBe('settled')
    expect(events.map((event) => event.type).sort()).toEqual([
      'lease_delivered',
      'lease_lapsed',
      'sweep_failed',
    ])
  })

  it('refuses settings no sweep could run with', () => {
    const store = createMemoryStore()
    for (const options of [
      { graceMs: -1 },
      { graceMs: 1.5 },
      { batchSize: 0 },
      { pendingGraceMs: -1 },
    ]) {
      expect(() => createLeaseSweeper({ store, ...options })).toThrow(
        expect.objectContaining({ code: 'invalid_config' }),
      )
    }
    expect(() => createLeaseSweeper({ store }).start(0)).toThrow(
      expect.objectContaining({ code: 'invalid_config' }),
    )
  })
})

describe('the lease sweeper resolving payments whose process died before recording them', () => {
  const claimLeaseMs = 300_000
  const pendingGraceMs = 60_000
  const payer = `0x${'cd'.repeat(32)}`

  function executed(amount: bigint): ClaimResolution {
    return {
      status: 'executed',
      settlement: {
        payer,
        amount,
        resource: meta.resource,
        dialect: 'x402',
        network: 'sui:localnet',
        asset: '0x2::usdc::USDC',
        settledAt: new Date(0),
      },
    }
  }

  function setUpResolving(answers: Record<string, ClaimResolution | Error>) {
    let now = 1_700_000_000_000
    const clock = () => now
    const store = createMemoryStore({ now: clock, serveLeaseMs, claimLeaseMs })
    const events: LeaseSweepEvent[] = []
    const asked: string[] = []
    let woken = 0
    const sweeper = createLeaseSweeper({
      store,
      graceMs,
      pendingGraceMs,
      now: clock,
      refunder: { runOnce: async () => ++woken },
      onEvent: (event) => events.push(event),
      resolve: async (record) => {
        asked.push(record.digest)
        const answer = answers[record.digest]
        if (answer === undefined) throw new Error(`unexpected look-up of ${record.digest}`)
        if (answer instanceof Error) throw answer
        return answer
      },
    })
    return {
      store,
      sweeper,
      events,
      asked,
      woken: () => woken,
      advance: (ms: number) => {
        now += ms
      },
    }
  }

  it('settles and owes back a lapsed claim the ledger executed, and wakes the refunds', async () => {
    const { store, sweeper, events, asked, woken, advance } = setUpResolving({
      paid: executed(20_000n),
    })
    await store.claim('paid', meta)
    // Within the claim lease and the grace after it: its process may still be settling it.
    advance(claimLeaseMs + graceMs - 1)
    expect(await sweeper.runOnce()).toEqual({
      owed: 0,
      served: 0,
      released: 0,
      rejected: 0,
      skipped: 0,
    })
    expect(asked).toEqual([])
    advance(1)
    expect(await sweeper.runOnce()).toEqual({
      owed: 1,
      served: 0,
      released: 0,
      rejected: 0,
      skipped: 0,
    })
    const record = await store.get('paid')
    expect(record?.state).toBe('refund_due')
    expect(record?.settlement?.amount).toBe(20_000n)
    expect(record?.settlement?.payer).toBe(payer)
    expect(record?.refund?.reason).toBe(claimLapsedReason)
    expect(events).toEqual([
      {
        type: 'claim_resolved',
        digest: 'paid',
        state: 'claimed',
        outcome: 'refund_owed',
        resource: meta.resource,
        payer,
        amount: 20_000n,
      },
    ])
    expect(woken()).toBe(1)
    // Resolved once: the next run looks nothing up.
    expect((await sweeper.runOnce()).owed).toBe(0)
    expect(asked).toEqual(['paid'])
  })

  it('releases a lapsed claim the ledger never saw, so that it may be presented again', async () => {
    const { store, sweeper, events, woken, advance } = setUpResolving({
      lost: { status: 'absent' },
    })
    await store.claim('lost', meta)
    advance(claimLeaseMs + graceMs)
    expect((await sweeper.runOnce()).released).toBe(1)
    expect(await store.get('lost')).toBeUndefined()
    expect(events).toEqual([
      {
        type: 'claim_resolved',
        digest: 'lost',
        state: 'claimed',
        outcome: 'released',
        resource: meta.resource,
      },
    ])
    expect(woken()).toBe(0)
    expect((await store.claim('lost', meta)).status).toBe('claimed')
  })

  it('resolves a pending payment after its grace: executed is owed back, absent is left pending', async () => {
    const { store, sweeper, asked, advance } = setUpResolving({
      landed: executed(7n),
      inFlight: { status: 'absent' },
    })
    for (const digest of ['landed', 'inFlight']) {
      await store.claim(digest, meta)
      await store.markPending(digest)
    }
    // Its buyer is still retrying: left for the buyer to present again.
    advance(pendingGraceMs - 1)
    expect((await sweeper.runOnce()).owed).toBe(0)
    expect(asked).toEqual([])
    advance(1)
    expect(await sweeper.runOnce()).toEqual({
      owed: 1,
      served: 0,
      released: 0,
      rejected: 0,
      skipped: 1,
    })
    expect((await store.get('landed'))?.state).toBe('refund_due')
    expect((await store.get('landed'))?.settlement?.amount).toBe(7n)
    // The ledger does not know it yet: a submitted transaction may still land.
    expect((await store.get('inFlight'))?.state).toBe('pending')
  })

  it('leaves a payment the ledger could not tell about, and marks one that did not pay rejected', async () => {
    const { store, sweeper, events, advance } = setUpResolving({
      unreadable: { status: 'unknown', reason: 'the ledger did not answer' },
      thrown: new Error('fetch failed'),
      failed: { status: 'rejected', code: 'transaction_failed' },
    })
    for (const digest of ['unreadable', 'thrown', 'failed']) await store.claim(digest, meta)
    advance(claimLeaseMs + graceMs)
    expect(await sweeper.runOnce()).toEqual({
      owed: 0,
      served: 0,
      released: 0,
      rejected: 1,
      skipped: 2,
    })
    expect((await store.get('unreadable'))?.state).toBe('claimed')
    expect((await store.get('thrown'))?.state).toBe('claimed')
    expect((await store.get('failed'))?.state).toBe('rejected')
    expect((await store.get('failed'))?.rejection?.code).toBe('transaction_failed')
    expect(events.map((event) => event.type)).toEqual(['claim_resolved'])
  })

  it('leaves a lapsed claim that a new presenter took over after it was listed', async () => {
    const { store, advance } = setUpResolving({})
    await store.claim('retaken', meta)
    await store.claim('reborn', meta)
    advance(claimLeaseMs + graceMs)
    const racing: PaymentStore = {
      ...store,
      async listLapsedClaims(options) {
        const listed = await store.listLapsedClaims(options)
        // Both buyers present their payment again right after the sweeper listed them.
        await store.claim('retaken', meta)
        await store.claim('reborn', meta)
        return listed
      },
    }
    const resolutions: Record<string, ClaimResolution> = {
      retaken: executed(20_000n),
      reborn: { status: 'absent' },
    }
    const sweeper = createLeaseSweeper({
      store: racing,
      graceMs,
      resolve: async (record) => resolutions[record.digest] ?? { status: 'unknown', reason: '' },
    })
    expect(await sweeper.runOnce()).toEqual({
      owed: 0,
      served: 0,
      released: 0,
      rejected: 0,
      skipped: 2,
    })
    // The new presenters hold them: one settles its payment itself, the other is not forgotten.
    expect((await store.get('retaken'))?.state).toBe('claimed')
    expect((await store.get('reborn'))?.state).toBe('claimed')
  })

  it('looks nothing up without `resolve`', async () => {
    const { store, advance } = setUpResolving({})
    const sweeper = createLeaseSweeper({ store, graceMs })
    await store.claim('waiting', meta)
    advance(claimLeaseMs + graceMs)
    expect(await sweeper.runOnce()).toEqual({
      owed: 0,
      served: 0,
      released: 0,
      rejected: 0,
      skipped: 0,
    })
    expect((await store.get('waiting'))?.state).toBe('claimed')
  })
})
