import { describe, expect, it } from 'vitest'
import { createLeaseSweeper, type LeaseSweepEvent, leaseLapsedReason } from './leaseSweeper.js'
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
    expect(await sweeper.runOnce()).toEqual({ owed: 0, served: 0, skipped: 0 })
    expect((await store.get('dead'))?.state).toBe('settled')
    expect(woken()).toBe(0)
    advance(1)
    expect(await sweeper.runOnce()).toEqual({ owed: 1, served: 0, skipped: 0 })
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
    expect(await sweeper.runOnce()).toEqual({ owed: 0, served: 0, skipped: 0 })
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
    expect(await sweeper.runOnce()).toEqual({ owed: 0, served: 0, skipped: 0 })
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
    expect(await sweeper.runOnce()).toEqual({ owed: 0, served: 0, skipped: 1 })
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
    expect(await sweeper.runOnce()).toEqual({ owed: 0, served: 0, skipped: 0 })
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
    expect(await sweeper.runOnce()).toEqual({ owed: 1, served: 1, skipped: 1 })
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
    for (const options of [{ graceMs: -1 }, { graceMs: 1.5 }, { batchSize: 0 }]) {
      expect(() => createLeaseSweeper({ store, ...options })).toThrow(
        expect.objectContaining({ code: 'invalid_config' }),
      )
    }
    expect(() => createLeaseSweeper({ store }).start(0)).toThrow(
      expect.objectContaining({ code: 'invalid_config' }),
    )
  })
})
