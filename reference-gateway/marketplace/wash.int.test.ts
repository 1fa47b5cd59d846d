/**
 * The activity feed's wash-trading rule, on SQLite and PostgreSQL: a payment is marked `wash` when
 * its buyer and seller also appear the other way round in the feed (before or after it), or are one
 * address; other payments between the same addresses and everyone else's are not. Read through
 * `GET /v1/activity` and the store's stream query alike.
 */
import { toBase58 } from '@mysten/sui/utils'
import { afterAll, describe, expect, it } from 'vitest'
import type { GatewayDatabase } from '../db/database.js'
import { testEngines } from '../db/testHelpers.js'
import { activityRoutes, createActivityStore, recordGatewaySale } from './activity.js'
import { createMarketplaceStore } from './store.js'

const asset = '0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC'
const address = (n: number) => `0x${n.toString(16).padStart(64, '0')}`
const digest = (n: number) => toBase58(new Uint8Array(32).fill(n))
const [alice, bob, carol] = [address(0xa), address(0xb), address(0xc)]

type Item = { digest: string; buyer: string; seller: string; wash: boolean }

for (const engine of testEngines('wash')) {
  describe.skipIf(engine.skip)(`the wash-trading mark on ${engine.name}`, () => {
    let database: GatewayDatabase | undefined
    afterAll(async () => {
      await database?.close()
      await engine.cleanup()
    })

    it('marks payments between two addresses that paid each other, and self-payments', async () => {
      database = await engine.open()
      let clock = 1_000_000
      const activity = createActivityStore(database.db, () => clock)
      const routes = activityRoutes({
        activity,
        store: createMarketplaceStore(database.db),
        // Reading the feed never asks the ledger.
        ledger: { getTransaction: () => Promise.reject(new Error('not read here')) },
        asset,
      })
      const sale = async (n: number, buyer: string, seller: string) => {
        clock += 1_000
        await recordGatewaySale(
          activity,
          { payTo: seller, asset },
          { digest: digest(n), payer: buyer, amount: 100_000n, resource: 'https://gw.test/x' },
          new Date(clock),
        )
      }
      const feed = async () => {
        const answer = await routes.request('/v1/activity?limit=100')
        expect(answer.status).toBe(200)
        const { items } = (await answer.json()) as { items: Item[] }
        return new Map(items.map((i) => [i.digest, i.wash]))
      }

      await sale(1, alice, bob)
      await sale(2, carol, bob)
      expect(await feed()).toEqual(
        new Map([
          [digest(2), false],
          [digest(1), false],
        ]),
      )

      // Bob pays Alice back: both directions are now marked, the earlier payment too.
      await sale(3, bob, alice)
      await sale(4, alice, bob)
      // Carol pays herself.
      await sale(5, carol, carol)
      const marked = await feed()
      expect(marked.get(digest(1))).toBe(true)
      expect(marked.get(digest(3))).toBe(true)
      expect(marked.get(digest(4))).toBe(true)
      expect(marked.get(digest(5))).toBe(true)
      // Carol bought from Bob, but Bob never paid Carol.
      expect(marked.get(digest(2))).toBe(false)

      // The live stream's query carries the same mark.
      const streamed = await activity.since(0, 100)
      expect(new Map(streamed.map((i) => [i.digest, i.wash]))).toEqual(marked)
    })
  })
}
