/**
 * Re-probes on the gateway's schedule, with an injected clock: a real seller (a Hono paywall on
 * loopback, its agent registered on the ledger emulator) is probed once per interval by the timer;
 * three failures in a row suspend it and hide it from `GET /v1/services`, a passing probe lists it
 * again with the terms it now asks (a new price); a restarted schedule (a new process name) carries
 * on from the database, a delist during a pass is not undone by the probe, and neither is a newer
 * re-probe by another process (one that took the lease over from a stalled one).
 */
import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Hono } from 'hono'
import { createLedger, createMemoryStore } from 'tollgate'
import { registerAgent } from 'tollgate/conformance'
import { paywall, type TollgateEnv } from 'tollgate/hono'
import { MAINNET_USDC_TYPE, useTestLedger } from 'tollgate/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type GatewayDatabase, openDatabase } from '../db/database.js'
import { createReprober } from './reprobe.js'
import { type ReprobeSchedule, startReprobeSchedule } from './schedule.js'
import { searchServices, servicesQuerySchema } from './services.js'
import { createMarketplaceStore, type MarketplaceStore } from './store.js'
import { putListingOf } from './testHelpers.js'

const chain = useTestLedger({ beforeAll, afterAll })
let agent: Ed25519Keypair
let database: GatewayDatabase
let store: MarketplaceStore
let seller: { url: string; close(): Promise<void> }
/** What the seller does now: no 402 at all, or a 402 at one of two prices. */
let mode: 'broken' | 'cheap' | 'dear' = 'cheap'

beforeAll(async () => {
  agent = chain.createTestWallet({ usdc: '0' })
  const registered = await registerAgent({
    ledger: createLedger({ url: chain.url }),
    signer: agent,
    name: 'scheduled-seller',
    registryPackage: chain.modulesPackage,
  })
  expect(registered.status).toBe('registered')
  database = await openDatabase({ kind: 'sqlite', file: ':memory:' })
  store = createMarketplaceStore(database.db)
  const app = (price: string) => {
    const paid = paywall({
      routes: { 'POST /v1/answer': { price, maxTimeoutSeconds: 2 } },
      payTo: agent.toSuiAddress(),
      ledger: chain.url,
      store: createMemoryStore(),
      secrets: 'marketplace-schedule-secret-of-32-bytes-or-more',
    })
    const hono = new Hono<TollgateEnv>()
    hono.use(paid)
    hono.post('/v1/answer', (c) => c.json({ answer: 42 }))
    return { hono, paid }
  }
  const cheap = app('0.02')
  const dear = app('0.03')
  const http = serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch: (request) =>
      mode === 'broken' ? Response.json({}) : (mode === 'cheap' ? cheap : dear).hono.fetch(request),
  })
  await new Promise((resolve) => http.once('listening', resolve))
  seller = {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/v1/answer`,
    async close() {
      await cheap.paid.close()
      await dear.paid.close()
      await new Promise<void>((resolve) => http.close(() => resolve()))
    },
  }
})

afterAll(async () => {
  await seller?.close()
  await database?.close()
})

const gates = () => ({
  client: chain.client,
  registryPackage: chain.modulesPackage,
  network: 'sui:mainnet',
  usdc: MAINNET_USDC_TYPE,
  // The seller listens on 127.0.0.1.
  allowPrivateNetwork: true,
})

const interval = 86_400_000
const lease = 300_000
let clock = 50_000_000
const passErrors: unknown[] = []

function schedule(holder: string): ReprobeSchedule {
  return startReprobeSchedule({
    reprober: createReprober({
      store,
      gates: gates(),
      holder,
      intervalMs: interval,
      jitterMs: 0,
      leaseMs: lease,
      concurrency: 2,
      now: () => clock,
    }),
    checkEveryMs: 15,
    onError: (error) => passErrors.push(error),
  })
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 15_000
  for (;;) {
    const value = await read()
    if (done(value)) return value
    if (Date.now() > deadline) throw new Error(`timed out; last value ${JSON.stringify(value)}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

const services = async () =>
  (await searchServices([], store, servicesQuerySchema.parse({ tag: 'scheduled' }))).items.map(
    (i) => [i.url, i.price],
  )

/** A listing of the seller (its URL with `?query`), due for a re-probe now. */
const dueListing = (query: string, name: string, tag: string) =>
  putListingOf(
    store,
    { seller: agent.toSuiAddress(), url: `${seller.url}?${query}`, name, tag },
    clock,
    clock,
  )

describe('the re-probe schedule', () => {
  it('probes once per interval: suspends after 3 failures, lists again with new terms', async () => {
    const listing = await putListingOf(
      store,
      { seller: agent.toSuiAddress(), url: seller.url, name: 'Scheduled', tag: 'scheduled' },
      clock + interval,
      clock,
    )
    const probes = () => store.probesOf(listing.id, 20)
    let running = schedule('process-1')
    try {
      expect(await services()).toEqual([[seller.url, '20000']])
      mode = 'broken'
      const states: string[] = []
      for (let i = 1; i <= 3; i++) {
        clock += interval
        await until(probes, (p) => p.length === i)
        const now = await store.getListing(listing.id)
        states.push(`${now?.state}/${now?.consecutiveFailures}`)
      }
      expect(states).toEqual(['listed/1', 'listed/2', 'suspended/3'])
      expect(await services()).toEqual([])
      // Not due again before one interval has passed, however many times the timer fires.
      await new Promise((resolve) => setTimeout(resolve, 150))
      expect(await probes()).toHaveLength(3)

      // A restart: a new process name; the old one's lease runs out, and the due probe happens.
      await running.stop()
      running = schedule('process-2')
      mode = 'dear'
      clock += interval + lease
      await until(probes, (p) => p.length === 4)
      expect(await store.getListing(listing.id)).toMatchObject({
        state: 'listed',
        consecutiveFailures: 0,
        price: 30_000n,
      })
      expect(await services()).toEqual([[seller.url, '30000']])
      expect((await probes()).map((p) => [p.kind, p.passed, p.failedGate])).toEqual([
        ['reprobe', true, null],
        ['reprobe', false, 'b'],
        ['reprobe', false, 'b'],
        ['reprobe', false, 'b'],
      ])
    } finally {
      await running.stop()
      mode = 'cheap'
    }
    expect(passErrors).toEqual([])
  })

  it('does not bring back a listing delisted while its probe was under way', async () => {
    const listing = await dueListing('delisted', 'Delisted', 'delisted-during-probe')
    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    const reprober = createReprober({
      store,
      gates: gates(),
      holder: 'process-3',
      intervalMs: interval,
      leaseMs: lease,
      now: () => clock + 2 * lease,
      judge: async () => {
        await store.setListingState(
          listing.id,
          { state: 'delisted', consecutiveFailures: 0 },
          new Date(clock),
        )
        release()
        return { status: 'failed', failures: [], notJudged: ['b'], summary: 'gate b failed' }
      },
    })
    expect(await reprober.runOnce()).toBeGreaterThanOrEqual(1)
    await held
    expect(await store.getListing(listing.id)).toMatchObject({ state: 'delisted' })
  })

  it('does not undo a newer re-probe: a stalled probe whose listing another process re-probed writes nothing', async () => {
    const listing = await dueListing('stalled', 'Stalled', 'stalled-probe')
    // While this probe is under way, another process (the lease's new holder) probes the listing
    // and schedules its next probe: its verdict stands.
    const newer = { state: 'listed' as const, consecutiveFailures: 0, nextProbeAtMs: clock + 7 }
    const reprober = createReprober({
      store,
      gates: gates(),
      holder: 'process-4',
      intervalMs: interval,
      leaseMs: lease,
      now: () => clock + 4 * lease,
      judge: async (submission) => {
        if (submission.url.endsWith('?stalled')) {
          await store.setListingState(listing.id, newer, new Date(clock))
        }
        return { status: 'failed', failures: [], notJudged: ['b'], summary: 'gate b failed' }
      },
    })
    expect(await reprober.runOnce()).toBeGreaterThanOrEqual(1)
    expect(await store.getListing(listing.id)).toMatchObject(newer)
  })
})
