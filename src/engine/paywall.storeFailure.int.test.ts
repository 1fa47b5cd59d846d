/**
 * A broken payment store reaches the buyer as what it is — 503 when the store cannot be reached or
 * is busy, 500 when it fails otherwise — with code `store_error` and the driver's error reported in
 * the `store_failed` event; never as `replay`, which tells a buyer their payment was already used.
 * Real payments on the ledger emulator, real backends broken for real: a SQLite file locked by
 * another connection or its table dropped; and, when their URL is set, a PostgreSQL server that is
 * not there or a dropped table, a Redis server that is not there or a record key overwritten with
 * another type.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { PaymentError } from '../errors.js'
import { createLedger } from '../ledger/index.js'
import { uniqueName } from '../stores/contract.js'
import { createSqliteStore } from '../stores/sqlite.js'
import type { PaymentStore } from '../stores/types.js'
import { useTestLedger } from '../testing/index.js'
import { signTestPayment } from '../testing/payments.js'
import { encodeXPayment, parsePaymentRequired, x402Headers } from '../x402.js'
import { createPaywall } from './paywall.js'
import type { PaywallEvent, PaywallOptions } from './types.js'

const secret = 'a-challenge-secret-of-at-least-32-bytes!'
const chain = useTestLedger({ beforeAll, afterAll })

/** A store on fresh storage, and how to break it. */
type Opened = {
  store: PaymentStore
  /** Makes the next write of `digest` fail with a database error (not a connection error). */
  breakRecord(digest: string): Promise<void>
  cleanup(): Promise<void>
}

/** A store whose backend cannot be reached, or is busy; `restore` (when it can) makes it usable. */
type Unreachable = {
  store: PaymentStore
  restore?: (() => void) | undefined
  cleanup(): Promise<void>
}

type StoreKind = {
  name: string
  open(): Promise<Opened>
  unreachable(): Promise<Unreachable>
}

const kinds: StoreKind[] = [
  {
    name: 'sqlite',
    async open() {
      const folder = mkdtempSync(join(tmpdir(), 'tollgate-broken-'))
      const path = join(folder, 'payments.db')
      const store = createSqliteStore({ database: path })
      return {
        store,
        async breakRecord() {
          const other = new Database(path)
          other.exec('DROP TABLE tollgate_payments')
          other.close()
        },
        async cleanup() {
          await store.close()
          rmSync(folder, { recursive: true, force: true })
        },
      }
    },
    async unreachable() {
      const folder = mkdtempSync(join(tmpdir(), 'tollgate-busy-'))
      const path = join(folder, 'payments.db')
      const store = createSqliteStore({ database: path, busyTimeoutMs: 50 })
      // Another process holds the file's write lock for longer than the store waits.
      const holder = new Database(path)
      holder.exec('BEGIN EXCLUSIVE')
      return {
        store,
        restore: () => holder.exec('COMMIT'),
        async cleanup() {
          if (holder.inTransaction) holder.exec('COMMIT')
          holder.close()
          await store.close()
          rmSync(folder, { recursive: true, force: true })
        },
      }
    },
  },
]

const databaseUrl = process.env.DATABASE_URL
if (databaseUrl) {
  kinds.push({
    name: 'postgres',
    async open() {
      const { createPostgresStore } = await import('../stores/postgres.js')
      const pg = (await import('pg')).default
      const table = uniqueName('tg_broken')
      const admin = new pg.Pool({ connectionString: databaseUrl, max: 1 })
      const store = createPostgresStore({ connection: databaseUrl, table })
      return {
        store,
        async breakRecord() {
          await admin.query(`DROP TABLE IF EXISTS "${table}"`)
        },
        async cleanup() {
          await admin.query(`DROP TABLE IF EXISTS "${table}"`)
          await admin.end()
          await store.close()
        },
      }
    },
    async unreachable() {
      const { createPostgresStore } = await import('../stores/postgres.js')
      // Nothing listens on port 1: every connection is refused.
      const store = createPostgresStore({ connection: 'postgres://postgres@127.0.0.1:1/test' })
      return { store, cleanup: () => store.close() }
    },
  })
}

const redisUrl = process.env.REDIS_URL
if (redisUrl) {
  kinds.push({
    name: 'redis',
    async open() {
      const { createRedisStore } = await import('../stores/redis.js')
      const { Redis } = await import('ioredis')
      const keyPrefix = `${uniqueName('tg_broken')}:`
      const admin = new Redis(redisUrl)
      const store = createRedisStore({ connection: redisUrl, keyPrefix })
      return {
        store,
        async breakRecord(digest) {
          // The record is no longer a hash: every script that reads it fails (WRONGTYPE).
          await admin.set(`${keyPrefix}payment:${digest}`, 'not a hash')
        },
        async cleanup() {
          await store.close()
          const keys = await admin.keys(`${keyPrefix}*`)
          if (keys.length > 0) await admin.del(...keys)
          await admin.quit()
        },
      }
    },
    async unreachable() {
      const { createRedisStore } = await import('../stores/redis.js')
      const { Redis } = await import('ioredis')
      // Nothing listens on port 1; the client gives up after two reconnection attempts.
      const redis = new Redis('redis://127.0.0.1:1', {
        maxRetriesPerRequest: 1,
        retryStrategy: (times) => (times > 2 ? null : 10),
      })
      redis.on('error', () => {})
      const store = createRedisStore({ connection: redis, keyPrefix: `${uniqueName('tg_gone')}:` })
      return {
        store,
        async cleanup() {
          await store.close()
          redis.disconnect()
        },
      }
    },
  })
}

/** A paywall over `store` with one route, and a funded buyer's x402 request for it. */
async function setUp(store: PaymentStore, extra: Partial<PaywallOptions> = {}) {
  const events: PaywallEvent[] = []
  const paywall = createPaywall({
    payTo: new Ed25519Keypair().toSuiAddress(),
    ledger: createLedger({ url: chain.url }),
    store,
    secrets: [secret],
    onEvent: (event) => events.push(event),
    ...extra,
  })
  let calls = 0
  let during: (() => Promise<void>) | undefined
  const handler = paywall.protect({ price: '0.02' }, async () => {
    calls++
    await during?.()
    return Response.json({ ok: true })
  })
  const url = 'https://api.example.com/v1/search'
  const unpaid = await handler(new Request(url, { method: 'POST' }))
  expect(unpaid.status).toBe(402)
  const requirement = parsePaymentRequired(await unpaid.json()).accepts[0]!
  const signed = await signTestPayment(chain.client, chain.createTestWallet({ usdc: '1' }), {
    to: requirement.payTo,
    amount: BigInt(requirement.maxAmountRequired),
    coinType: requirement.asset,
  })
  const pay = () =>
    handler(
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
      }),
    )
  return {
    pay,
    events,
    calls: () => calls,
    whileServing(step: () => Promise<void>) {
      during = step
    },
  }
}

function storeFailures(events: PaywallEvent[]): PaymentError[] {
  return events.flatMap((e) => (e.type === 'store_failed' ? [e.error] : []))
}

async function until(check: () => boolean, ms = 5_000): Promise<boolean> {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (check()) return true
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return false
}

describe.each(kinds)('a broken payment store ($name)', (kind) => {
  it('that cannot be reached answers 503 store_error, not replay, and reports the cause', async () => {
    const { store, restore, cleanup } = await kind.unreachable()
    try {
      const buyer = await setUp(store)
      const response = await buyer.pay()
      expect(response.status).toBe(503)
      expect(await response.json()).toMatchObject({ status: 503, code: 'store_error' })
      expect(buyer.calls()).toBe(0)
      const [failure] = storeFailures(buyer.events)
      expect(failure).toMatchObject({ code: 'store_error', status: 503 })
      expect(failure?.cause).toBeInstanceOf(Error)
      if (restore !== undefined) {
        // The store is back: the same payment is taken and served (nothing was claimed or spent).
        restore()
        const again = await buyer.pay()
        expect(again.status).toBe(200)
        expect(buyer.calls()).toBe(1)
      }
    } finally {
      await cleanup()
    }
  })

  it('that fails while recording a settlement answers 500 store_error, not replay', async () => {
    const opened = await kind.open()
    try {
      const buyer = await setUp(opened.store, {
        // The transaction executed; the store breaks before the settlement is recorded.
        onSettleStep: async (step, digest) => {
          if (step === 'executed') await opened.breakRecord(digest)
        },
      })
      const response = await buyer.pay()
      expect(response.status).toBe(500)
      const body = (await response.json()) as { code?: string }
      expect(body).toMatchObject({ status: 500, code: 'store_error' })
      expect(buyer.calls()).toBe(0)
      const [failure] = storeFailures(buyer.events)
      expect(failure).toMatchObject({ status: 500, details: { operation: 'mark settled' } })
      expect(failure?.cause).toBeDefined()
      expect(buyer.events.some((e) => e.type === 'rejected' && e.code === 'replay')).toBe(false)
    } finally {
      await opened.cleanup()
    }
  })

  it('that fails while recording a served call reports it; the buyer keeps the answer', async () => {
    const opened = await kind.open()
    try {
      const buyer = await setUp(opened.store)
      buyer.whileServing(async () => {
        const settled = buyer.events.find((e) => e.type === 'settled')
        if (settled?.type === 'settled') await opened.breakRecord(settled.payment.digest)
      })
      const response = await buyer.pay()
      expect(response.status).toBe(200)
      // The outcome is recorded once the body has been sent.
      expect(await response.json()).toEqual({ ok: true })
      expect(await until(() => storeFailures(buyer.events).length > 0)).toBe(true)
      expect(storeFailures(buyer.events)[0]).toMatchObject({
        code: 'store_error',
        status: 500,
        details: { operation: 'mark served' },
      })
      expect(buyer.events.some((e) => e.type === 'served')).toBe(false)
    } finally {
      await opened.cleanup()
    }
  })
})
