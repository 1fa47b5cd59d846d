/**
 * The key and credit store on both engines of the relational store (SQLite file, PostgreSQL in a
 * schema of its own): concurrent reservations never overspend (a property over prices and credits,
 * 50 calls in parallel), a call settles once at its cost and gives the rest back, a failed call is
 * restored exactly once however many times it is restored, lapsed reservations are given back, a
 * payment credits once, and keys are stored hashed.
 */
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { GatewayDatabase } from '../db/database.js'
import { testEngines } from '../db/testHelpers.js'
import { createKeyStore, hashKey, type KeyStore } from './keys.js'

// SQLite twice: through the query layer, and with a call's statements run directly on its connection.
const variants = [
  ...testEngines('keys').map((engine) => ({ engine, direct: false, name: engine.name })),
  ...testEngines('keys-direct')
    .filter((engine) => engine.name === 'SQLite')
    .map((engine) => ({ engine, direct: true, name: 'SQLite, direct statements' })),
]

const lease = () => Date.now() + 60_000

for (const { engine, direct, name } of variants) {
  describe.skipIf(engine.skip)(`keys and credit on ${name}`, () => {
    let database: GatewayDatabase
    let keys: KeyStore
    beforeAll(async () => {
      database = await engine.open()
      keys = createKeyStore(database.db, direct ? { sqlite: database.sqlite } : {})
    })
    afterAll(async () => {
      await database?.close()
      await engine.cleanup()
    })

    it('50 parallel reservations on a credit that covers n never overspend: exactly min(n, 50) pass', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.bigInt({ min: 1n, max: 5_000_000n }),
          fc.integer({ min: 0, max: 60 }),
          fc.bigInt({ min: 0n, max: 999_999n }),
          async (price, covers, spare) => {
            // The credit covers `covers` calls, plus less than one more call's price.
            const credit = price * BigInt(covers) + (spare % price)
            const { id } = await keys.create({ credit })
            const results = await Promise.all(
              Array.from({ length: 50 }, (_, i) =>
                keys.reserve(id, price, {
                  entryId: `${id}_${i}`,
                  model: 'm',
                  leaseUntilMs: lease(),
                }),
              ),
            )
            const passed = results.filter((r) => r.status === 'reserved').length
            expect(passed).toBe(Math.min(covers, 50))
            expect(results.every((r) => r.status !== 'unknown_key')).toBe(true)
            const left = (await keys.get(id))?.credit
            expect(left).toBe(credit - BigInt(passed) * price)
            expect(left !== undefined && left >= 0n).toBe(true)
          },
        ),
        { numRuns: 8 },
      )
    })

    it('the documented case: 50 parallel calls on a credit that covers 20', async () => {
      const { id } = await keys.create({ credit: 20n * 2_000n })
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          keys.reserve(id, 2_000n, { entryId: `${id}_${i}`, model: 'm', leaseUntilMs: lease() }),
        ),
      )
      expect(results.filter((r) => r.status === 'reserved')).toHaveLength(20)
      expect(results.filter((r) => r.status === 'insufficient')).toHaveLength(30)
      expect((await keys.get(id))?.credit).toBe(0n)
    })

    it('a failed call is restored exactly once, even when restored concurrently', async () => {
      const { id } = await keys.create({ credit: 10_000n })
      const debit = await keys.reserve(id, 3_000n, {
        entryId: `${id}_call`,
        model: 'm',
        leaseUntilMs: lease(),
      })
      expect(debit).toMatchObject({ status: 'reserved', credit: 7_000n })
      const restores = await Promise.all(
        Array.from({ length: 8 }, () => keys.restore(`${id}_call`)),
      )
      expect(restores.filter(Boolean)).toHaveLength(1)
      expect((await keys.get(id))?.credit).toBe(10_000n)
      // A served call is not restored afterwards, and a restored one is not served.
      await keys.reserve(id, 3_000n, { entryId: `${id}_served`, model: 'm', leaseUntilMs: lease() })
      expect(
        await keys.settle(`${id}_served`, 3_000n, { promptTokens: 3, completionTokens: 4 }),
      ).toEqual({ status: 'settled', charged: 3_000n, released: 0n })
      expect(await keys.restore(`${id}_served`)).toBe(false)
      expect(await keys.settle(`${id}_call`, 1n)).toEqual({ status: 'not_reserved' })
      const states = Object.fromEntries((await keys.ledger(id)).map((e) => [e.id, e.state]))
      expect(states[`${id}_call`]).toBe('restored')
      expect(states[`${id}_served`]).toBe('served')
      expect((await keys.get(id))?.credit).toBe(7_000n)
    })

    it('a reservation that fails among concurrent ones fails alone: the others are reserved once each', async () => {
      const { id } = await keys.create({ credit: 1_000n })
      await keys.reserve(id, 10n, { entryId: `${id}_taken`, model: 'm', leaseUntilMs: lease() })
      // One reuses an entry id (a unique key): it is refused, and nothing of it is kept.
      const results = await Promise.allSettled([
        ...Array.from({ length: 6 }, (_, i) =>
          keys.reserve(id, 10n, { entryId: `${id}_${i}`, model: 'm', leaseUntilMs: lease() }),
        ),
        keys.reserve(id, 10n, { entryId: `${id}_taken`, model: 'm', leaseUntilMs: lease() }),
      ])
      expect(results.map((r) => r.status)).toEqual([...Array(6).fill('fulfilled'), 'rejected'])
      expect((await keys.get(id))?.credit).toBe(1_000n - 70n)
      expect((await keys.ledger(id)).filter((e) => e.kind === 'call')).toHaveLength(7)
    })

    it('settles a call at its cost: the rest of the reservation goes back, once; never above it', async () => {
      const { id } = await keys.create({ credit: 10_000n })
      const calls = ['a', 'b', 'c'].map((c) => `${id}_${c}`)
      for (const entryId of calls)
        await keys.reserve(id, 3_000n, { entryId, model: 'm', leaseUntilMs: lease() })
      expect((await keys.get(id))?.credit).toBe(1_000n)
      // Settled twice at once: one settles, the other finds nothing reserved.
      const [first, again] = await Promise.all([
        keys.settle(`${id}_a`, 1_234n, { promptTokens: 10, completionTokens: 20 }),
        keys.settle(`${id}_a`, 1_234n),
      ])
      expect([first, again]).toEqual(
        expect.arrayContaining([
          { status: 'settled', charged: 1_234n, released: 1_766n },
          { status: 'not_reserved' },
        ]),
      )
      // A cost above the reservation is capped at it; a free answer gives it all back.
      expect(await keys.settle(`${id}_b`, 9_999n)).toEqual({
        status: 'settled',
        charged: 3_000n,
        released: 0n,
      })
      expect(await keys.settle(`${id}_c`, 0n)).toEqual({
        status: 'settled',
        charged: 0n,
        released: 3_000n,
      })
      expect(await keys.restore(`${id}_c`)).toBe(false)
      // credit = top-ups − served amounts, exactly.
      const entries = await keys.ledger(id)
      const spent = entries
        .filter((e) => e.kind === 'call' && e.state === 'served')
        .reduce((sum, e) => sum + e.amount, 0n)
      expect(spent).toBe(1_234n + 3_000n)
      expect((await keys.get(id))?.credit).toBe(10_000n - spent)
    })

    it('gives back the reservations whose lease lapsed, and only those; a renewed one stays', async () => {
      const { id } = await keys.create({ credit: 1_000n })
      const now = Date.now()
      const at = (ms: number) => ({ model: 'm', leaseUntilMs: now + ms })
      await keys.reserve(id, 100n, { entryId: `${id}_dead`, ...at(-1) })
      await keys.reserve(id, 100n, { entryId: `${id}_live`, ...at(60_000) })
      await keys.reserve(id, 100n, { entryId: `${id}_renewed`, ...at(-1) })
      expect(await keys.renew(`${id}_renewed`, now + 60_000)).toBe(true)
      await keys.reserve(id, 100n, { entryId: `${id}_settled`, ...at(-1) })
      await keys.settle(`${id}_settled`, 40n)
      expect(await keys.renew(`${id}_settled`, now + 60_000)).toBe(false)
      expect((await keys.get(id))?.credit).toBe(1_000n - 300n - 40n)
      // Other keys' lapsed reservations may be swept too: this key's are counted by its ledger.
      await keys.releaseLapsed(now)
      const states = Object.fromEntries((await keys.ledger(id)).map((e) => [e.id, e.state]))
      expect(states).toMatchObject({
        [`${id}_dead`]: 'restored',
        [`${id}_live`]: 'debited',
        [`${id}_renewed`]: 'debited',
        [`${id}_settled`]: 'served',
      })
      expect((await keys.get(id))?.credit).toBe(1_000n - 200n - 40n)
      // The call that was given back cannot settle any more (it runs free, the credit stays exact).
      expect(await keys.settle(`${id}_dead`, 50n)).toEqual({ status: 'not_reserved' })
      expect(await keys.releaseLapsed(now)).toBe(0)
    })

    it('the served records of concurrent calls are each written with their own token counts', async () => {
      const { id } = await keys.create({ credit: 100n })
      const calls = Array.from({ length: 12 }, (_, i) => `${id}_s${i}`)
      for (const entryId of calls)
        await keys.reserve(id, 1n, { entryId, model: 'm', leaseUntilMs: lease() })
      // Served all at once (the direct SQLite store writes one turn's records together), one restored.
      const [restored] = await Promise.all([
        keys.restore(`${id}_s0`),
        ...calls
          .slice(1)
          .map((entryId, i) =>
            keys.settle(entryId, 1n, { promptTokens: i, completionTokens: 2 * i }),
          ),
      ])
      expect(restored).toBe(true)
      const rows = await database.db
        .selectFrom('inference_ledger')
        .select(['id', 'state', 'prompt_tokens', 'completion_tokens'])
        .where('key_id', '=', id)
        .where('kind', '=', 'call')
        .execute()
      const byId = new Map(rows.map((r) => [r.id, r]))
      expect(byId.get(`${id}_s0`)?.state).toBe('restored')
      calls.slice(1).forEach((entryId, i) => {
        expect(byId.get(entryId)).toMatchObject({
          state: 'served',
          prompt_tokens: expect.toSatisfy((n) => Number(n) === i),
          completion_tokens: expect.toSatisfy((n) => Number(n) === 2 * i),
        })
      })
      expect((await keys.get(id))?.credit).toBe(89n)
    })

    it('a payment tops up once; an unknown or revoked key is not credited', async () => {
      const { id } = await keys.create()
      const reference = `payment:${id}`
      const first = await keys.topUp(id, 1_000_000n, reference)
      const again = await keys.topUp(id, 1_000_000n, reference)
      expect(first).toEqual({ status: 'credited', credit: 1_000_000n })
      expect(again).toEqual({ status: 'duplicate' })
      // What the lease sweeper asks before refunding a top-up payment its process left unserved.
      expect(await keys.creditedBy(reference)).toBe(true)
      expect(await keys.creditedBy(`${reference}:never-paid`)).toBe(false)
      expect(await keys.topUp('key_0000000000000000', 5n, `${reference}:x`)).toEqual({
        status: 'unknown_key',
      })
      expect(await keys.creditedBy(`${reference}:x`)).toBe(false)
      await keys.revoke(id)
      expect(await keys.topUp(id, 5n, `${reference}:y`)).toEqual({ status: 'unknown_key' })
      expect(await keys.creditedBy(`${reference}:y`)).toBe(false)
      expect(
        await keys.reserve(id, 1n, { entryId: `${id}_r`, model: 'm', leaseUntilMs: lease() }),
      ).toEqual({
        status: 'unknown_key',
      })
    })

    it('stores only the hash of a key; finds it, and refuses revoked and unknown keys', async () => {
      const created = await keys.create({ name: 'ci' })
      expect(created.key).toMatch(/^tg_[A-Za-z0-9_-]{43}$/)
      const row = await database.db
        .selectFrom('inference_keys')
        .selectAll()
        .where('id', '=', created.id)
        .executeTakeFirstOrThrow()
      expect(row.hash).toBe(hashKey(created.key))
      expect(JSON.stringify(row, (_, v) => (typeof v === 'bigint' ? String(v) : v))).not.toContain(
        created.key.slice(3, 20),
      )
      expect(await keys.authenticate(created.key)).toEqual({ status: 'valid', keyId: created.id })
      expect(await keys.authenticate(`${created.key.slice(0, -1)}x`)).toEqual({ status: 'invalid' })
      expect(await keys.authenticate('')).toEqual({ status: 'invalid' })
      expect(await keys.revoke(created.id)).toBe(true)
      expect(await keys.revoke(created.id)).toBe(false)
      expect(await keys.authenticate(created.key)).toEqual({ status: 'invalid' })
    })

    it('keeps an owner (normalised) and lists one owner’s keys only', async () => {
      const alice = `0x${'a'.repeat(63)}1`
      const bob = '0xb0b'
      const mine = await keys.create({
        name: 'console',
        owner: alice.toUpperCase().replace('0X', '0x'),
      })
      const theirs = await keys.create({ owner: bob })
      const operators = await keys.create({ name: 'operator' })
      expect(mine.owner).toBe(alice)
      expect(theirs.owner).toBe(`0x${'0'.repeat(61)}b0b`)
      expect(operators.owner).toBeNull()
      expect((await keys.list({ owner: alice })).map((k) => k.id)).toEqual([mine.id])
      expect((await keys.list({ owner: '0xB0B' })).map((k) => k.id)).toEqual([theirs.id])
      const all = (await keys.list()).map((k) => k.id)
      expect(all).toEqual(expect.arrayContaining([mine.id, theirs.id, operators.id]))
      expect((await keys.get(mine.id))?.owner).toBe(alice)
    })
  })
}
