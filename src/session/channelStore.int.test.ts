/**
 * The channel stores' contract, the same for every store: the voucher rules, holds (alone, or taken
 * with a voucher in one step) and units spent at once that never spend more than the highest
 * voucher (also when many connections hold at once), commits and releases counted once, lapsed
 * holds given back. PostgreSQL runs when DATABASE_URL is set, Redis when
 * REDIS_URL is (each skipped, with that reason, when not).
 */
import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { uniqueName } from '../stores/contract.js'
import type { OpenedChannel } from './channelStore.js'
import { createPostgresChannelStore } from './postgresChannelStore.js'
import { createRedisChannelStore } from './redisChannelStore.js'
import { channelStoreKinds } from './testing/storeKinds.js'

const kinds = channelStoreKinds()
const { databaseUrl, redisUrl } = kinds

if (databaseUrl === undefined)
  it.skip('postgres channel store: skipped, DATABASE_URL is not set', () => {})
if (redisUrl === undefined) it.skip('redis channel store: skipped, REDIS_URL is not set', () => {})

let next = 0
function opened(deposit = 1_000_000n): OpenedChannel {
  next++
  return {
    channelId: `0x${next.toString(16).padStart(64, '0')}`,
    payer: `0x${'a'.repeat(64)}`,
    payee: `0x${'b'.repeat(64)}`,
    coinType: '0x2::sui::SUI',
    signer: 'cd'.repeat(32),
    deposit,
    settled: 0n,
  }
}

const lease = () => Date.now() + 60_000

describe.each(kinds)('$name channel store', (kind) => {
  it('tracks a channel once: opening it again changes nothing', async () => {
    const { store } = kind.open()
    const channel = opened()
    const first = await store.track(channel)
    expect(first).toMatchObject({ highest: 0n, spent: 0n, held: 0n, units: 0n, state: 'open' })
    await store.acceptVoucher(channel.channelId, 100n, 'sig')
    expect((await store.track({ ...channel, deposit: 5n })).highest).toBe(100n)
    expect(await store.get(`0x${'f'.repeat(64)}`)).toBeUndefined()
  })

  it('accepts each voucher amount once, within the deposit, keeping the highest', async () => {
    const { store } = kind.open()
    const channel = opened(1_000n)
    await store.track(channel)
    expect(await store.acceptVoucher(channel.channelId, 400n, 'a')).toMatchObject({
      status: 'accepted',
      channel: { highest: 400n, highestSignature: 'a' },
    })
    expect(await store.acceptVoucher(channel.channelId, 400n, 'b')).toMatchObject({
      status: 'same',
      channel: { highestSignature: 'a' },
    })
    // A new lower amount is taken (calls arrive in any order); the highest stands; a repeat is not.
    expect(await store.acceptVoucher(channel.channelId, 300n, 'c')).toMatchObject({
      status: 'accepted',
      channel: { highest: 400n, highestSignature: 'a' },
    })
    expect((await store.acceptVoucher(channel.channelId, 300n, 'c')).status).toBe('same')
    expect((await store.acceptVoucher(channel.channelId, 1_001n, 'd')).status).toBe('over_deposit')
    expect((await store.acceptVoucher(`0x${'e'.repeat(64)}`, 1n, 'e')).status).toBe('unknown')
    expect((await store.get(channel.channelId))?.highest).toBe(400n)
  })

  it('holds the price out of the headroom, commits it into spent once, releases it once', async () => {
    const { store } = kind.open()
    const channel = opened()
    await store.track(channel)
    await store.acceptVoucher(channel.channelId, 50n, 'v')
    const a = await store.hold(channel.channelId, 20n, randomUUID(), lease())
    const b = await store.hold(channel.channelId, 20n, randomUUID(), lease())
    expect(a.status).toBe('held')
    expect(b.status).toBe('held')
    expect(await store.hold(channel.channelId, 20n, randomUUID(), lease())).toMatchObject({
      status: 'insufficient',
      required: 60n,
    })
    if (a.status !== 'held' || b.status !== 'held') throw new Error('held expected')
    expect(await store.commit(a.holdId)).toBe(true)
    expect(await store.commit(a.holdId)).toBe(false)
    expect(await store.release(b.holdId)).toBe(true)
    expect(await store.release(b.holdId)).toBe(false)
    expect(await store.commit(b.holdId)).toBe(false)
    expect(await store.get(channel.channelId)).toMatchObject({ spent: 20n, held: 0n, units: 1n })
  })

  it('settles a hold by the part that was used, giving the rest back, once', async () => {
    const { store } = kind.open()
    const channel = opened()
    await store.track(channel)
    await store.acceptVoucher(channel.channelId, 100n, 'v')
    const window = await store.hold(channel.channelId, 80n, randomUUID(), lease())
    if (window.status !== 'held') throw new Error('held expected')
    // More than the hold holds changes nothing: the hold stays, whole.
    expect(await store.settleHold(window.holdId, { amount: 90n, units: 9n })).toBeUndefined()
    expect(await store.get(channel.channelId)).toMatchObject({ spent: 0n, held: 80n, units: 0n })
    // The channel as the step left it.
    expect(await store.settleHold(window.holdId, { amount: 30n, units: 3n })).toMatchObject({
      channelId: channel.channelId,
      highest: 100n,
      spent: 30n,
      held: 0n,
      units: 3n,
    })
    expect(await store.get(channel.channelId)).toMatchObject({ spent: 30n, held: 0n, units: 3n })
    expect(await store.settleHold(window.holdId, { amount: 30n, units: 3n })).toBeUndefined()
    expect(await store.release(window.holdId)).toBe(false)
    // What was given back is headroom again: 70 of the voucher's 100.
    const rest = await store.hold(channel.channelId, 70n, randomUUID(), lease())
    expect(rest.status).toBe('held')
    if (rest.status !== 'held') throw new Error('held expected')
    expect(await store.hold(channel.channelId, 1n, randomUUID(), lease())).toMatchObject({
      status: 'insufficient',
      required: 101n,
    })
    // All of a hold, as many units: the same as a whole commit, counted by units.
    expect(await store.settleHold(rest.holdId, { amount: 70n, units: 7n })).toMatchObject({
      spent: 100n,
      units: 10n,
    })
    expect(await store.get(channel.channelId)).toMatchObject({ spent: 100n, held: 0n, units: 10n })
    await expect(store.settleHold(rest.holdId, { amount: -1n, units: 1n })).rejects.toMatchObject({
      code: 'invalid_amount',
    })
  })

  it('takes a voucher and the hold of its call in one step; a repeat or a refused voucher holds nothing', async () => {
    const { store } = kind.open()
    const channel = opened(1_000n)
    await store.track(channel)
    const hold = (amount: bigint) => ({ amount, holdId: randomUUID(), leaseUntil: lease() })
    const first = await store.acceptVoucher(channel.channelId, 30n, 'a', hold(30n))
    expect(first).toMatchObject({
      status: 'accepted',
      channel: { highest: 30n, held: 30n },
      hold: { status: 'held', channel: { held: 30n } },
    })
    // A lower amount arriving late is accepted, but the headroom it leaves is 0.
    expect(await store.acceptVoucher(channel.channelId, 20n, 'b', hold(10n))).toMatchObject({
      status: 'accepted',
      hold: { status: 'insufficient', required: 40n },
    })
    expect(await store.acceptVoucher(channel.channelId, 30n, 'a', hold(1n))).toMatchObject({
      status: 'same',
    })
    expect(await store.acceptVoucher(channel.channelId, 2_000n, 'c', hold(1n))).not.toHaveProperty(
      'hold',
    )
    if (first.status !== 'accepted' || first.hold?.status !== 'held') throw new Error('held')
    expect(await store.commit(first.hold.holdId)).toBe(true)
    expect(await store.get(channel.channelId)).toMatchObject({ spent: 30n, held: 0n, units: 1n })
  })

  it('spends a unit straight out of the headroom, never beyond it', async () => {
    const { store } = kind.open()
    const channel = opened()
    await store.track(channel)
    await store.acceptVoucher(channel.channelId, 25n, 'v')
    const held = await store.hold(channel.channelId, 10n, randomUUID(), lease())
    expect(held.status).toBe('held')
    expect(await store.spend(channel.channelId, 10n)).toMatchObject({
      status: 'spent',
      channel: { spent: 10n, held: 10n, units: 1n },
    })
    expect(await store.spend(channel.channelId, 6n)).toMatchObject({
      status: 'insufficient',
      required: 26n,
    })
    expect((await store.spend(`0x${'e'.repeat(64)}`, 1n)).status).toBe('unknown')
    await store.observe(channel.channelId, { state: 'closing' })
    expect((await store.spend(channel.channelId, 1n)).status).toBe('not_open')
    expect(await store.get(channel.channelId)).toMatchObject({ spent: 10n, units: 1n })
  })

  it('counts each of many units spent at once on one channel, never beyond the voucher', async () => {
    const { store } = kind.open()
    const channel = opened()
    await store.track(channel)
    await store.acceptVoucher(channel.channelId, 30n * 7n, 'v')
    // 40 at once (on PostgreSQL most of them committed together, in one transaction).
    const results = await Promise.all(
      Array.from({ length: 40 }, () => store.spend(channel.channelId, 7n)),
    )
    expect(results.filter((r) => r.status === 'spent')).toHaveLength(30)
    expect(results.filter((r) => r.status === 'insufficient')).toHaveLength(10)
    expect(await store.get(channel.channelId)).toMatchObject({ spent: 210n, units: 30n, held: 0n })
  })

  it('gives lapsed holds back, and only those', async () => {
    const { store } = kind.open()
    const channel = opened()
    await store.track(channel)
    await store.acceptVoucher(channel.channelId, 100n, 'v')
    const now = Date.now()
    await store.hold(channel.channelId, 30n, randomUUID(), now - 1)
    const live = await store.hold(channel.channelId, 30n, randomUUID(), now + 60_000)
    expect(await store.releaseLapsed(now)).toBeGreaterThanOrEqual(1)
    expect(await store.get(channel.channelId)).toMatchObject({ held: 30n, spent: 0n })
    if (live.status !== 'held') throw new Error('held expected')
    expect(await store.commit(live.holdId)).toBe(true)
    expect(await store.get(channel.channelId)).toMatchObject({ held: 0n, spent: 30n })
  })

  it('refuses vouchers and holds once the channel is closing; states never go back', async () => {
    const { store } = kind.open()
    const channel = opened()
    await store.track(channel)
    await store.acceptVoucher(channel.channelId, 100n, 'v')
    expect(
      await store.observe(channel.channelId, { deposit: 2_000_000n, settled: 40n }),
    ).toMatchObject({
      deposit: 2_000_000n,
      settled: 40n,
    })
    // Amounts never go down.
    expect(await store.observe(channel.channelId, { deposit: 1n, settled: 1n })).toMatchObject({
      deposit: 2_000_000n,
      settled: 40n,
    })
    await store.observe(channel.channelId, { state: 'closing' })
    expect((await store.acceptVoucher(channel.channelId, 200n, 'w')).status).toBe('not_open')
    expect((await store.hold(channel.channelId, 1n, randomUUID(), lease())).status).toBe('not_open')
    expect((await store.observe(channel.channelId, { state: 'open' }))?.state).toBe('closing')
    expect((await store.observe(channel.channelId, { state: 'closed' }))?.state).toBe('closed')
    expect((await store.observe(channel.channelId, { state: 'closing' }))?.state).toBe('closed')
  })

  it('never holds more than the highest voucher, with many calls at once over two connections', async () => {
    const { store, second } = kind.open()
    const other = second()
    const channel = opened()
    await store.track(channel)
    await store.acceptVoucher(channel.channelId, 10n * 7n, 'v')
    const attempts = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        (i % 2 === 0 ? store : other).hold(channel.channelId, 7n, randomUUID(), lease()),
      ),
    )
    const held = attempts.filter((a) => a.status === 'held')
    expect(held.length).toBe(10)
    await Promise.all(
      held.map((h, i) => (h.status === 'held' ? (i % 2 ? store : other).commit(h.holdId) : false)),
    )
    expect(await other.get(channel.channelId)).toMatchObject({ spent: 70n, held: 0n, units: 10n })
  })

  it('lists the channels in a state', async () => {
    const { store } = kind.open()
    const a = opened()
    const b = opened()
    await store.track(a)
    await store.track(b)
    await store.observe(b.channelId, { state: 'closing' })
    const ids = async (state: 'open' | 'closing' | 'closed') =>
      (await store.list(state)).map((c) => c.channelId)
    expect(await ids('open')).toContain(a.channelId)
    expect(await ids('open')).not.toContain(b.channelId)
    expect(await ids('closing')).toEqual([b.channelId])
  })

  it('accepts one presenter of an amount, with many at once over two connections', async () => {
    const { store, second } = kind.open()
    const other = second()
    const channel = opened(1_000n)
    await store.track(channel)
    const attempts = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        (i % 2 === 0 ? store : other).acceptVoucher(channel.channelId, 100n + BigInt(i % 4), 'v'),
      ),
    )
    // Four amounts, ten presenters each: exactly one accepted per amount.
    expect(attempts.filter((a) => a.status === 'accepted')).toHaveLength(4)
    expect(attempts.filter((a) => a.status === 'same')).toHaveLength(36)
    expect((await other.get(channel.channelId))?.highest).toBe(103n)
  })

  it('keeps amounts exact up to 2^63 − 1 (no rounding through floating point)', async () => {
    const { store } = kind.open()
    const top = 2n ** 63n - 1n
    const channel = opened(top)
    await store.track(channel)
    expect((await store.acceptVoucher(channel.channelId, top - 1n, 'v')).status).toBe('accepted')
    expect((await store.acceptVoucher(channel.channelId, top - 2n, 'w')).status).toBe('accepted')
    expect((await store.acceptVoucher(channel.channelId, top - 2n, 'w')).status).toBe('same')
    expect((await store.get(channel.channelId))?.highest).toBe(top - 1n)
    const big = await store.hold(channel.channelId, top - 3n, randomUUID(), lease())
    expect(big.status).toBe('held')
    expect((await store.hold(channel.channelId, 2n, randomUUID(), lease())).status).toBe('held')
    expect((await store.hold(channel.channelId, 1n, randomUUID(), lease())).status).toBe(
      'insufficient',
    )
    if (big.status === 'held') await store.commit(big.holdId)
    expect(await store.get(channel.channelId)).toMatchObject({ spent: top - 3n, held: 2n })
  })

  it('refuses amounts no store keeps exactly', async () => {
    const { store } = kind.open()
    await expect(store.track(opened(2n ** 63n))).rejects.toMatchObject({ code: 'invalid_amount' })
  })
})

if (databaseUrl !== undefined) {
  describe('postgres channel store', () => {
    it('prepares its statements: PostgreSQL plans each once per connection, not at every call', async () => {
      const pool = new pg.Pool({ connectionString: databaseUrl, max: 1 })
      try {
        const store = createPostgresChannelStore({
          pool,
          channels: uniqueName('channels'),
          holds: uniqueName('holds'),
          vouchers: uniqueName('vouchers'),
        })
        const channel = opened()
        await store.track(channel)
        for (let i = 1n; i <= 3n; i++) {
          const taken = await store.acceptVoucher(channel.channelId, i * 10n, 'sig', {
            amount: 10n,
            holdId: randomUUID(),
            leaseUntil: lease(),
          })
          if (taken.status !== 'accepted' || taken.hold?.status !== 'held')
            throw new Error('refused')
          expect(await store.commit(taken.hold.holdId)).toBe(true)
        }
        const { rows } = await pool.query(
          "SELECT statement FROM pg_prepared_statements WHERE name LIKE 'tollgate\\_%'",
        )
        const texts = rows.map((row: { statement: string }) => row.statement)
        // The voucher with its hold, and the commit: one prepared statement each, used three times.
        expect(
          texts.some((text) => text.includes('INSERT INTO') && text.includes('FOR UPDATE')),
        ).toBe(true)
        expect(texts.some((text) => text.includes('DELETE FROM'))).toBe(true)
        expect((await store.get(channel.channelId))?.spent).toBe(30n)
      } finally {
        await pool.end()
      }
    })

    it('spends units that wait together as one statement, each answered as if spent in turn', async () => {
      const pool = new pg.Pool({ connectionString: databaseUrl, max: 2, pipeline: true })
      const texts: string[] = []
      const connect = pool.connect.bind(pool)
      const poolQuery = pool.query.bind(pool) as (...args: unknown[]) => unknown
      // The store's batches borrow a connection (`connect()`); its lone writes, and a batch merged
      // into one statement, use `query`.
      const watched = {
        query: (...args: unknown[]) => {
          const [config] = args as [string | { text: string }]
          texts.push(typeof config === 'string' ? config : config.text)
          return poolQuery(...args)
        },
        async connect() {
          const client = await connect()
          const query = client.query.bind(client) as (...args: unknown[]) => unknown
          Object.assign(client, {
            query: (...args: unknown[]) => {
              const [config] = args as [string | { text: string }]
              texts.push(typeof config === 'string' ? config : config.text)
              return query(...args)
            },
          })
          return client
        },
      } as unknown as pg.Pool
      try {
        const store = createPostgresChannelStore({
          pool: watched,
          channels: uniqueName('channels'),
          holds: uniqueName('holds'),
          vouchers: uniqueName('vouchers'),
        })
        const channel = opened()
        await store.track(channel)
        await store.acceptVoucher(channel.channelId, 30n * 7n, 'v')
        const results = await Promise.all(
          Array.from({ length: 40 }, () => store.spend(channel.channelId, 7n)),
        )
        // Merged: fewer statements than spends, one of them for many, sent as a transaction of
        // its own (no BEGIN and COMMIT around one statement).
        expect(texts.some((text) => text.includes('LEAST('))).toBe(true)
        expect(texts).not.toContain('BEGIN')
        const spent = results.flatMap((r) => (r.status === 'spent' ? [r.channel.spent] : []))
        expect(spent).toHaveLength(30)
        // Each spent unit is answered the channel as it was after it: 7, 14, … 210, once each.
        expect([...spent].sort((a, b) => (a < b ? -1 : 1))).toEqual(
          Array.from({ length: 30 }, (_, i) => 7n * BigInt(i + 1)),
        )
        expect(results.filter((r) => r.status === 'insufficient')).toHaveLength(10)
        expect(await store.get(channel.channelId)).toMatchObject({ spent: 210n, units: 30n })
        // Units of no price at once are each spent (never merged into a division by zero).
        const free = await Promise.all(
          Array.from({ length: 10 }, () => store.spend(channel.channelId, 0n)),
        )
        expect(free.map((r) => r.status)).toEqual(Array(10).fill('spent'))
        expect(await store.get(channel.channelId)).toMatchObject({ spent: 210n, units: 40n })
      } finally {
        await pool.end()
      }
    })
  })
}

if (redisUrl !== undefined) {
  describe('redis channel store', () => {
    it('takes each step in one round trip, answering the channel as its script left it', async () => {
      const client = new Redis(redisUrl)
      const commands: string[] = []
      // Every command the store sends, by the client's method it calls.
      const counted = new Proxy(client, {
        get(target, name, receiver) {
          const value = Reflect.get(target, name, receiver)
          if (typeof value !== 'function') return value
          return (...args: unknown[]) => {
            commands.push(String(name))
            return value.apply(target, args)
          }
        },
      })
      try {
        const store = createRedisChannelStore({ client: counted, keyPrefix: `${randomUUID()}:` })
        const channel = opened(100n)
        const steps: [string, () => Promise<unknown>, Record<string, unknown> | undefined][] = [
          ['track', () => store.track(channel), { highest: 0n, state: 'open' }],
          ['voucher', () => store.acceptVoucher(channel.channelId, 50n, 'sig'), undefined],
          [
            'hold',
            () => store.hold(channel.channelId, 20n, randomUUID(), lease()),
            { status: 'held', channel: { held: 20n, highest: 50n } },
          ],
          [
            'refused hold',
            () => store.hold(channel.channelId, 40n, randomUUID(), lease()),
            { status: 'insufficient', channel: { held: 20n } },
          ],
          [
            'observe',
            () => store.observe(channel.channelId, { deposit: 200n, state: 'closing' }),
            { deposit: 200n, state: 'closing', held: 20n },
          ],
        ]
        for (const [step, run, expected] of steps) {
          commands.length = 0
          const answer = await run()
          if (expected !== undefined) expect(answer, step).toMatchObject(expected)
          // One script (`evalsha`, or `eval` once when Redis does not hold it yet).
          expect(
            commands.filter((c) => c !== 'eval'),
            step,
          ).toEqual(['evalsha'])
        }
        expect(await store.observe(`0x${'e'.repeat(64)}`, { deposit: 1n })).toBeUndefined()
      } finally {
        client.disconnect()
      }
    })
  })
}
