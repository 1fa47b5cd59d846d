/**
 * Two gateway processes on one relational store (two connection pools on one PostgreSQL schema, or
 * two connections on one SQLite file), each running the re-probe schedule on its own timer: every
 * listing is probed exactly once per interval; when one process stops, the other takes over once
 * its lease has run out. The judge is a counter (this is about who probes when, not the gates;
 * the gates against real sellers are in submit.int.test.ts and schedule.int.test.ts).
 */
import { afterAll, describe, expect, it } from 'vitest'
import type { GatewayDatabase } from '../db/database.js'
import { testEngines } from '../db/testHelpers.js'
import { createReprober } from './reprobe.js'
import { type ReprobeSchedule, startReprobeSchedule } from './schedule.js'
import { createMarketplaceStore, type MarketplaceStore } from './store.js'

const engines = testEngines('reprobe')

const interval = 3_600_000
const lease = 60_000
const listings = 24

async function until(done: () => boolean): Promise<void> {
  const deadline = Date.now() + 15_000
  while (!done()) {
    if (Date.now() > deadline) throw new Error('timed out')
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

for (const engine of engines) {
  describe.skipIf(engine.skip)(`two gateway processes on ${engine.name}`, () => {
    const opened: GatewayDatabase[] = []
    afterAll(async () => {
      for (const database of opened) await database.close()
      await engine.cleanup()
    })

    it('probe each listing once per interval, and one takes over when the other stops', async () => {
      const databases = [await engine.open(), await engine.open()]
      opened.push(...databases)
      const stores = databases.map((d) => createMarketplaceStore(d.db)) as [
        MarketplaceStore,
        MarketplaceStore,
      ]
      let clock = 1_000_000
      const ids: string[] = []
      for (let i = 0; i < listings; i++) {
        const listing = await stores[i % 2 === 0 ? 0 : 1].putListing(
          {
            seller: `0x${(i + 1).toString(16).padStart(64, '0')}`,
            url: `https://seller-${i}.example/v1/answer`,
            method: 'POST',
            probeBody: '{}',
            name: `seller ${i}`,
            description: '',
            tags: [],
            network: 'sui:mainnet',
            asset: 'usdc',
            price: 1_000n,
            payTo: `0x${(i + 1).toString(16).padStart(64, '0')}`,
            nextProbeAtMs: clock,
          },
          new Date(clock),
        )
        ids.push(listing.id)
      }
      /** Probes per listing per process. */
      const probes = new Map<string, number[]>(ids.map((id) => [id, [0, 0]]))
      let lastProber = 0
      const total = () => [...probes.values()].reduce((n, [a = 0, b = 0]) => n + a + b, 0)
      const processes: (ReprobeSchedule | undefined)[] = stores.map((store, p) =>
        startReprobeSchedule({
          reprober: createReprober({
            store,
            gates: { client: undefined as never, network: 'sui:mainnet', usdc: 'usdc' },
            holder: `process-${p}`,
            intervalMs: interval,
            jitterMs: 0,
            leaseMs: lease,
            concurrency: 4,
            now: () => clock,
            async judge(submission) {
              const id = ids[Number(submission.url.split('-')[1]?.split('.')[0])]
              const counts = probes.get(id ?? '')
              if (counts !== undefined) counts[p] = (counts[p] ?? 0) + 1
              lastProber = p
              await new Promise((resolve) => setTimeout(resolve, 2))
              return { status: 'unusable', message: 'counted' }
            },
          }),
          checkEveryMs: 5,
        }),
      )
      try {
        for (let round = 1; round <= 3; round++) {
          if (round > 1) clock += interval
          await until(() => total() === round * listings)
          // Both timers keep firing: nothing more happens until the clock reaches the next interval.
          await new Promise((resolve) => setTimeout(resolve, 100))
          expect(total()).toBe(round * listings)
        }
        // The process holding the lease stops; the other takes over the next interval's probes.
        const holder = lastProber
        await processes[holder]?.stop()
        processes[holder] = undefined
        clock += interval
        await until(() => total() === 4 * listings)
        await new Promise((resolve) => setTimeout(resolve, 100))
        expect(total()).toBe(4 * listings)
        for (const [a = 0, b = 0] of probes.values()) expect(a + b).toBe(4)
        const other = 1 - holder
        expect(
          [...probes.values()].every((counts) => (counts[other] ?? 0) >= 1),
          'the other process probed every listing in the 4th interval',
        ).toBe(true)
      } finally {
        for (const running of processes) await running?.stop()
      }
    })
  })
}
