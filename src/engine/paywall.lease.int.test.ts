/**
 * A paid call longer than the serve lease is served once: the engine renews the lease while the
 * call runs, so the same payment bytes presented again with a fresh challenge are told to retry
 * (`settlement_pending` with `Retry-After`: the process holding the payment may still die), never
 * served twice, however long the call takes; once served, they are a replay. The clock of the engine and the store is injected and moved on by the test;
 * the renewals themselves run on the engine's timer (every third of a short lease). Real payments
 * on the ledger emulator, for the memory and SQLite stores (and Redis / PostgreSQL when their URL is
 * set).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLedger } from '../ledger/index.js'
import { uniqueName } from '../stores/contract.js'
import { createMemoryStore } from '../stores/memory.js'
import { createSqliteStore } from '../stores/sqlite.js'
import type { PaymentStore, StoreOptions } from '../stores/types.js'
import { useTestLedger } from '../testing/index.js'
import { signTestPayment } from '../testing/payments.js'
import { encodeXPayment, parsePaymentRequired, x402Headers } from '../x402.js'
import { createPaywall } from './paywall.js'
import type { PaywallEvent } from './types.js'

const secret = 'a-challenge-secret-of-at-least-32-bytes!'
/** The serve lease of these tests, in ms of the injected clock (renewed every 200 real ms). */
const serveLeaseMs = 600
const chain = useTestLedger({ beforeAll, afterAll })

type StoreKind = {
  name: string
  open(options: StoreOptions): Promise<{ store: PaymentStore; cleanup(): Promise<void> }>
}

const kinds: StoreKind[] = [
  {
    name: 'memory',
    open: async (options) => ({ store: createMemoryStore(options), cleanup: async () => {} }),
  },
  {
    name: 'sqlite',
    async open(options) {
      const folder = mkdtempSync(join(tmpdir(), 'tollgate-lease-'))
      const store = createSqliteStore({ ...options, database: join(folder, 'payments.db') })
      return {
        store,
        async cleanup() {
          await store.close()
          rmSync(folder, { recursive: true, force: true })
        },
      }
    },
  },
]
const redisUrl = process.env.REDIS_URL
if (redisUrl) {
  kinds.push({
    name: 'redis',
    async open(options) {
      const { createRedisStore } = await import('../stores/redis.js')
      const { Redis } = await import('ioredis')
      const keyPrefix = `${uniqueName('tg_lease')}:`
      const store = createRedisStore({ ...options, connection: redisUrl, keyPrefix })
      return {
        store,
        async cleanup() {
          await store.close()
          const admin = new Redis(redisUrl)
          const keys = await admin.keys(`${keyPrefix}*`)
          if (keys.length > 0) await admin.del(...keys)
          await admin.quit()
        },
      }
    },
  })
}
const databaseUrl = process.env.DATABASE_URL
if (databaseUrl) {
  kinds.push({
    name: 'postgres',
    async open(options) {
      const { createPostgresStore } = await import('../stores/postgres.js')
      const table = uniqueName('tg_lease')
      const store = createPostgresStore({ ...options, connection: databaseUrl, table })
      return {
        store,
        async cleanup() {
          const pg = await import('pg')
          const admin = new pg.default.Client({ connectionString: databaseUrl })
          await admin.connect()
          await admin.query(`DROP TABLE IF EXISTS "${table}"`)
          await admin.end()
          await store.close()
        },
      }
    },
  })
}

async function until(check: () => Promise<boolean>, ms = 5_000): Promise<boolean> {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (await check()) return true
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return false
}

describe.each(kinds)('the serve lease of a long paid call ($name store)', (kind) => {
  it('is renewed while the call runs: the same bytes with a fresh challenge are told to retry', async () => {
    let clock = Date.now()
    const { store, cleanup } = await kind.open({ now: () => clock, serveLeaseMs })
    try {
      const seller = new Ed25519Keypair().toSuiAddress()
      const events: PaywallEvent[] = []
      const paywall = createPaywall({
        payTo: seller,
        ledger: createLedger({ url: chain.url }),
        store,
        secrets: [secret],
        now: () => clock,
        onEvent: (event) => events.push(event),
      })
      let calls = 0
      let release!: () => void
      const released = new Promise<void>((resolve) => {
        release = resolve
      })
      const handler = paywall.protect({ price: '0.02' }, async () => {
        calls++
        if (calls === 1) await released
        return Response.json({ call: calls })
      })
      const url = 'https://api.example.com/v1/long'
      const challenge = async () => {
        const response = await handler(new Request(url, { method: 'POST' }))
        expect(response.status).toBe(402)
        return parsePaymentRequired(await response.json()).accepts[0]!
      }
      const requirement = await challenge()
      const payer = chain.createTestWallet({ usdc: '1' })
      const signed = await signTestPayment(chain.client, payer, {
        to: requirement.payTo,
        amount: BigInt(requirement.maxAmountRequired),
        coinType: requirement.asset,
      })
      const header = (challengeId: unknown) =>
        encodeXPayment({
          network: requirement.network,
          payload: {
            challengeId: String(challengeId),
            transaction: signed.transaction,
            signature: signed.signature,
          },
        })
      const first = handler(
        new Request(url, {
          method: 'POST',
          headers: { [x402Headers.payment]: header(requirement.extra?.challengeId) },
        }),
      )
      expect(await until(async () => calls === 1)).toBe(true)
      const settled = events.find((e) => e.type === 'settled')
      const digest = settled?.type === 'settled' ? settled.payment.digest : ''
      expect((await store.get(digest))?.state).toBe('settled')

      // The call runs for more than three leases; the engine keeps renewing at the clock's time.
      for (let step = 0; step < 5; step++) {
        clock += (serveLeaseMs * 2) / 3
        await until(
          async () => (await store.get(digest))?.leaseUntil?.getTime() === clock + serveLeaseMs,
        )
      }
      // A challenge valid now (stateless ids: the same one within its expiry bucket).
      const fresh = await challenge()
      const again = await handler(
        new Request(url, {
          method: 'POST',
          headers: { [x402Headers.payment]: header(fresh.extra?.challengeId) },
        }),
      )
      expect(again.status).toBe(402)
      expect(((await again.json()) as { code?: string }).code).toBe('settlement_pending')
      // The lease ends within a second of the injected clock: retry then.
      expect(again.headers.get('retry-after')).toBe('1')
      expect(calls).toBe(1)

      release()
      const answer = await first
      expect(answer.status).toBe(200)
      expect(await answer.json()).toEqual({ call: 1 })
      expect(await until(async () => (await store.get(digest))?.state === 'served')).toBe(true)
      // Served: renewals stopped, and the payment is never handed out again.
      clock += serveLeaseMs * 10
      const late = await handler(
        new Request(url, {
          method: 'POST',
          headers: { [x402Headers.payment]: header((await challenge()).extra?.challengeId) },
        }),
      )
      expect(((await late.json()) as { code?: string }).code).toBe('replay')
      expect(calls).toBe(1)
      expect(events.filter((e) => e.type === 'lease_lost')).toEqual([])
    } finally {
      await cleanup()
    }
  })

  it('is lost by a process cut off from the store for a whole lease, to one re-presenter; the loser reports it', async () => {
    let clock = Date.now()
    const { store, cleanup } = await kind.open({ now: () => clock, serveLeaseMs })
    try {
      const seller = new Ed25519Keypair().toSuiAddress()
      // Process A cannot reach the store for its renewals; process B shares the same store.
      let cutOff = false
      const storeOfA = {
        ...store,
        renewServeLease: (digest: string, lease: Date) =>
          cutOff
            ? Promise.reject(new Error('the store is unreachable'))
            : store.renewServeLease(digest, lease),
      }
      const eventsOfA: PaywallEvent[] = []
      const common = {
        payTo: seller,
        ledger: createLedger({ url: chain.url }),
        secrets: [secret],
        now: () => clock,
      }
      const a = createPaywall({ ...common, store: storeOfA, onEvent: (e) => eventsOfA.push(e) })
      const b = createPaywall({ ...common, store })
      let release!: () => void
      const released = new Promise<void>((resolve) => {
        release = resolve
      })
      const served: string[] = []
      const handlerOf = (name: string) => async () => {
        served.push(name)
        if (name === 'a') await released
        return Response.json({ by: name })
      }
      const route = { price: '0.02' }
      const onA = a.protect(route, handlerOf('a'))
      const onB = b.protect(route, handlerOf('b'))
      const url = 'https://api.example.com/v1/long'
      const unpaid = await onA(new Request(url, { method: 'POST' }))
      const requirement = parsePaymentRequired(await unpaid.json()).accepts[0]!
      const payer = chain.createTestWallet({ usdc: '1' })
      const signed = await signTestPayment(chain.client, payer, {
        to: requirement.payTo,
        amount: BigInt(requirement.maxAmountRequired),
        coinType: requirement.asset,
      })
      const paying = () =>
        new Request(url, {
          method: 'POST',
          headers: {
            [x402Headers.payment]: encodeXPayment({
              network: requirement.network,
              payload: {
                challengeId: String(requirement.extra?.challengeId),
                transaction: signed.transaction,
                signature: signed.signature,
              },
            }),
          },
        })
      const first = onA(paying())
      expect(await until(async () => served.length === 1)).toBe(true)
      cutOff = true
      clock += serveLeaseMs + 1
      // B is presented the same payment after A's lease ran out: served there, once.
      const second = await onB(paying())
      expect(second.status).toBe(200)
      expect(await second.json()).toEqual({ by: 'b' })
      expect(served).toEqual(['a', 'b'])
      // A reaches the store again: its renewal is refused, and it says so.
      cutOff = false
      expect(await until(async () => eventsOfA.some((e) => e.type === 'lease_lost'))).toBe(true)
      release()
      expect((await first).status).toBe(200)
      const third = await onB(paying())
      expect(((await third.json()) as { code?: string }).code).toBe('replay')
      // The residual the lease cannot prevent (documented): A's call was already running.
      expect(served).toEqual(['a', 'b'])
    } finally {
      await cleanup()
    }
  })
})
