/**
 * The channel stores under random interleavings, on every store, against a model of the rules: each
 * voucher amount is accepted once (a repeat is refused, across connections), never above the
 * deposit nor once the channel is closing; holds (alone, or taken with a voucher in one step) and
 * units spent at once never take more than `highest − spent − held`;
 * commits, releases and settlings by a part count once (a part above the hold changes nothing); a
 * crashed connection's holds lapse and are given back. After
 * every step the store's record equals the model's, and `spent + held ≤ highest ≤ deposit`.
 * PostgreSQL runs when DATABASE_URL is set, Redis when REDIS_URL is (skipped, with that reason,
 * when not). A crash drops a connection (its holds stay, to lapse); memory has no second process.
 */
import { randomUUID } from 'node:crypto'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { ChannelStore } from './channelStore.js'
import { channelStoreKinds } from './testing/storeKinds.js'

const kinds = channelStoreKinds()
if (kinds.databaseUrl === undefined)
  it.skip('postgres channel store: skipped, DATABASE_URL is not set', () => {})
if (kinds.redisUrl === undefined)
  it.skip('redis channel store: skipped, REDIS_URL is not set', () => {})

type Step =
  /** A voucher, holding `holdPrice` in the same step when it is above 0. */
  | { kind: 'voucher'; amount: bigint; holdPrice: bigint; via: 0 | 1 }
  | { kind: 'hold' | 'spend'; price: bigint; via: 0 | 1 }
  | { kind: 'commit' | 'release'; pick: number; via: 0 | 1 }
  /** A hold settled by a part of it (a window's units used): `part` of 0–120% of its amount. */
  | { kind: 'settle'; pick: number; part: number; units: bigint; via: 0 | 1 }
  | { kind: 'topUp'; amount: bigint }
  | { kind: 'closeRequested' }
  | { kind: 'crash'; via: 0 | 1 }
  | { kind: 'lapse' }

const via = fc.constantFrom<0 | 1>(0, 1)
const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('voucher' as const),
      amount: fc.bigInt(0n, 1_200n),
      holdPrice: fc.oneof(fc.constant(0n), fc.bigInt(1n, 150n)),
      via,
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constantFrom('hold' as const, 'spend' as const),
      price: fc.bigInt(1n, 150n),
      via,
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constantFrom('commit' as const, 'release' as const),
      pick: fc.nat(),
      via,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('settle' as const),
      pick: fc.nat(),
      part: fc.integer({ min: 0, max: 120 }),
      units: fc.bigInt(0n, 16n),
      via,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('topUp' as const), amount: fc.bigInt(1n, 300n) }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('crash' as const), via }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'lapse' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'closeRequested' as const }) },
)

let channels = 0

for (const kind of kinds) {
  describe(`${kind.name} channel store under random steps`, () => {
    it('matches the model after every step; never spends more than the vouchers cover', async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 5, maxLength: 40 }), async (steps) => {
          const opened = kind.open()
          const stores: ChannelStore[] = [opened.store, opened.second()]
          channels++
          const channelId = `0x${(0xc0ffee0000n + BigInt(channels)).toString(16).padStart(64, '0')}`
          await stores[0]?.track({
            channelId,
            payer: `0x${'a'.repeat(64)}`,
            payee: `0x${'b'.repeat(64)}`,
            coinType: '0x2::sui::SUI',
            signer: 'cd'.repeat(32),
            deposit: 1_000n,
            settled: 0n,
          })
          // The model.
          let deposit = 1_000n
          let highest = 0n
          let spent = 0n
          let units = 0n
          let open = true
          const used = new Set<bigint>()
          // Holds by id: amount, and the connection that holds it (a crash makes them lapse).
          const holds = new Map<string, { amount: bigint; via: 0 | 1; lapsed: boolean }>()
          const heldSum = () => [...holds.values()].reduce((t, h) => t + h.amount, 0n)
          /** What the model says of taking `price` from the headroom (a hold, a spend). */
          const taking = <T extends string>(price: bigint, taken: T) =>
            !open ? 'not_open' : highest - spent - heldSum() >= price ? taken : 'insufficient'
          let now = 1_000_000

          for (const s of steps) {
            const store = 'via' in s ? (stores[s.via] as ChannelStore) : (stores[0] as ChannelStore)
            switch (s.kind) {
              case 'voucher': {
                const hold =
                  s.holdPrice === 0n
                    ? undefined
                    : { amount: s.holdPrice, holdId: randomUUID(), leaseUntil: now + 1_000 }
                const got = await store.acceptVoucher(channelId, s.amount, `sig${s.amount}`, hold)
                const expected = !open
                  ? 'not_open'
                  : s.amount > deposit
                    ? 'over_deposit'
                    : used.has(s.amount)
                      ? 'same'
                      : 'accepted'
                expect(got.status).toBe(expected)
                if (expected === 'accepted') {
                  used.add(s.amount)
                  if (s.amount > highest) highest = s.amount
                  // The hold, in the same step: out of the headroom the voucher left.
                  if (hold === undefined) expect(got).not.toHaveProperty('hold')
                  else {
                    const held = highest - spent - heldSum() >= hold.amount
                    expect(got).toMatchObject({ hold: { status: held ? 'held' : 'insufficient' } })
                    if (held)
                      holds.set(hold.holdId, { amount: hold.amount, via: s.via, lapsed: false })
                  }
                } else expect(got).not.toHaveProperty('hold')
                break
              }
              case 'spend': {
                const got = await store.spend(channelId, s.price)
                const expected = taking(s.price, 'spent')
                expect(got.status).toBe(expected)
                if (expected === 'spent') {
                  spent += s.price
                  units++
                }
                break
              }
              case 'hold': {
                const id = randomUUID()
                const got = await store.hold(channelId, s.price, id, now + 1_000)
                const expected = taking(s.price, 'held')
                expect(got.status).toBe(expected)
                if (expected === 'held')
                  holds.set(id, { amount: s.price, via: s.via, lapsed: false })
                break
              }
              case 'commit':
              case 'release': {
                // A crashed process's holds are never committed nor released: they can only lapse.
                const ids = [...holds].filter(([, h]) => !h.lapsed).map(([id]) => id)
                const id = ids.length === 0 ? randomUUID() : (ids[s.pick % ids.length] as string)
                const hold = holds.get(id)
                const done = await (s.kind === 'commit' ? store.commit(id) : store.release(id))
                expect(done).toBe(hold !== undefined)
                if (hold !== undefined) {
                  holds.delete(id)
                  if (s.kind === 'commit') {
                    spent += hold.amount
                    units++
                  }
                }
                break
              }
              case 'settle': {
                const ids = [...holds].filter(([, h]) => !h.lapsed).map(([id]) => id)
                const id = ids.length === 0 ? randomUUID() : (ids[s.pick % ids.length] as string)
                const hold = holds.get(id)
                const amount = ((hold?.amount ?? 100n) * BigInt(s.part)) / 100n
                const got = await store.settleHold(id, { amount, units: s.units })
                // A part larger than the hold changes nothing; else it is spent, the rest given back.
                if (hold === undefined || amount > hold.amount) expect(got).toBeUndefined()
                else {
                  holds.delete(id)
                  spent += amount
                  units += s.units
                  expect(got).toMatchObject({ spent, units, held: heldSum() })
                }
                break
              }
              case 'topUp': {
                deposit += s.amount
                await stores[0]?.observe(channelId, { deposit })
                break
              }
              case 'closeRequested': {
                open = false
                await stores[1]?.observe(channelId, { state: 'closing' })
                break
              }
              case 'crash': {
                // The connection's process dies: it never commits nor releases its holds.
                if (!kind.durable) break
                stores[s.via] = opened.second()
                for (const hold of holds.values()) if (hold.via === s.via) hold.lapsed = true
                break
              }
              case 'lapse': {
                now += 2_000
                const count = await (stores[0] as ChannelStore).releaseLapsed(now)
                expect(count).toBe(holds.size)
                holds.clear()
                break
              }
            }
            const record = await (stores[1] as ChannelStore).get(channelId)
            expect(record).toMatchObject({
              deposit,
              highest,
              spent,
              held: heldSum(),
              units,
              state: open ? 'open' : 'closing',
            })
            expect(spent + heldSum()).toBeLessThanOrEqual(highest)
            expect(highest).toBeLessThanOrEqual(deposit)
          }
        }),
        { numRuns: kind.name === 'memory' ? 150 : 40 },
      )
    }, 120_000)
  })
}
