/**
 * A payment whose process died after the ledger executed it and before the store recorded it
 * settled: left `claimed`, it is found by the seller's lease sweeper once its claim lease lapsed,
 * looked up on the ledger and refunded — the buyer is never charged without being served or
 * refunded. A lapsed claim whose transaction never executed is released. Over the ledger emulator,
 * with a real store (SQLite; PostgreSQL when DATABASE_URL is set).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createSellerPaywall } from './engine/seller.js'
import type { SellerEvent } from './engine/sellerTypes.js'
import { transactionDigest } from './internal/transactionData.js'
import { createLedger, type Ledger } from './ledger/index.js'
import { serviceUrl, uniqueName } from './stores/contract.js'
import { createPostgresStore } from './stores/postgres.js'
import { createSqliteStore } from './stores/sqlite.js'
import type { PaymentStore, StoreOptions } from './stores/types.js'
import { signTestPayment, useTestLedger } from './testing/index.js'

// Long enough that the steps before the first sweep (a ledger execution, a balance read) end within
// it on a loaded machine: the sweep inside the lease must find the claim still running.
const claimLeaseMs = 1_500
const price = 20_000n
const resource = 'https://api.example/v1/paid'

const emulator = useTestLedger({ beforeAll, afterAll })
let ledger: Ledger

beforeAll(async () => {
  ledger = createLedger({ url: emulator.url })
})

type Backend = { open(options: StoreOptions): Promise<PaymentStore>; cleanup(): Promise<void> }

function sqlite(): Backend {
  const folder = mkdtempSync(join(tmpdir(), 'tollgate-claims-'))
  return {
    open: async (options) =>
      createSqliteStore({ ...options, database: join(folder, 'payments.db') }),
    cleanup: async () => rmSync(folder, { recursive: true, force: true }),
  }
}

const databaseUrl = serviceUrl('DATABASE_URL')

function postgres(): Backend {
  const schema = uniqueName('tg_claims')
  return {
    open: async (options) => createPostgresStore({ ...options, connection: databaseUrl!, schema }),
    cleanup: async () => {
      const admin = new pg.Client({ connectionString: databaseUrl })
      await admin.connect()
      try {
        await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
      } finally {
        await admin.end()
      }
    },
  }
}

/** A seller on `store` whose refunds are signed by the `payTo` key, its timers left idle. */
function sellerOn(store: PaymentStore, operator: Ed25519Keypair, events: SellerEvent[]) {
  return createSellerPaywall({
    routes: { 'POST /v1/paid': '0.02' },
    payTo: operator.toSuiAddress(),
    asset: emulator.usdcType,
    ledger,
    store,
    secrets: 'a-challenge-secret-of-at-least-32-bytes!',
    refundSigner: operator,
    refundIntervalMs: 3_600_000,
    leaseSweep: { graceMs: 0, intervalMs: 3_600_000 },
    onEvent: (event) => events.push(event),
  })
}

const usdcOf = async (address: string) =>
  (await ledger.getBalance(address, emulator.usdcType)).total

async function lapse(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, claimLeaseMs + 50))
}

const backends: [string, () => Backend, boolean][] = [
  ['sqlite', sqlite, false],
  ['postgres', postgres, databaseUrl === undefined],
]

for (const [name, backend, skip] of backends) {
  describe.skipIf(skip)(
    `a claim left by a process that died, ${name} (postgres needs DATABASE_URL)`,
    () => {
      it('is refunded by one sweep when the ledger executed it, back to the buyer’s start', async () => {
        const storage = backend()
        const store = await storage.open({ claimLeaseMs })
        const operator = emulator.createTestWallet({ usdc: '1', sui: '1' })
        emulator.faucet({ address: operator.toSuiAddress(), usdc: '1', into: 'addressBalance' })
        const buyer = emulator.createTestWallet({ usdc: '1', sui: '1' })
        const events: SellerEvent[] = []
        const seller = sellerOn(store, operator, events)
        try {
          const start = await usdcOf(buyer.toSuiAddress())
          const payment = await signTestPayment(emulator.client, buyer, {
            to: operator.toSuiAddress(),
            amount: price,
            coinType: emulator.usdcType,
          })
          const digest = transactionDigest(payment.bytes)
          // The process claims the digest and the ledger executes the buyer's transaction, then
          // the process dies: the store never hears that it settled.
          expect(await store.claim(digest, { resource, dialect: 'x402' })).toEqual({
            status: 'claimed',
          })
          const executed = await ledger.execute(payment.bytes, [payment.signature])
          expect(executed.status).toBe('executed')
          expect(await usdcOf(buyer.toSuiAddress())).toBe(start - price)

          // Within the claim lease the claimer may still be settling it: left alone.
          expect((await seller.sweeper.runOnce()).owed).toBe(0)
          expect((await store.get(digest))?.state).toBe('claimed')

          await lapse()
          expect(await seller.sweeper.runOnce()).toMatchObject({ owed: 1, released: 0, skipped: 0 })
          const owed = await store.get(digest)
          // Owed, and maybe already paid by the refunder the sweep woke.
          expect(['refund_due', 'refunded']).toContain(owed?.state)
          expect(owed?.settlement?.amount).toBe(price)
          expect(owed?.settlement?.payer).toBe(buyer.toSuiAddress())
          expect(events).toContainEqual(
            expect.objectContaining({ type: 'claim_resolved', digest, outcome: 'refund_owed' }),
          )

          await seller.refunder.runOnce()
          expect((await store.get(digest))?.state).toBe('refunded')
          expect(events.filter((event) => event.type === 'refunded')).toHaveLength(1)
          expect(await usdcOf(buyer.toSuiAddress())).toBe(start)
          // Resolved once: the next sweep owes nothing more.
          expect((await seller.sweeper.runOnce()).owed).toBe(0)
        } finally {
          await seller.close()
          await store.close()
          await storage.cleanup()
        }
      })

      it('is released when its transaction never executed, and may be presented again', async () => {
        const storage = backend()
        const store = await storage.open({ claimLeaseMs })
        const operator = emulator.createTestWallet({ usdc: '1', sui: '1' })
        const buyer = emulator.createTestWallet({ usdc: '1', sui: '1' })
        const events: SellerEvent[] = []
        const seller = sellerOn(store, operator, events)
        try {
          const start = await usdcOf(buyer.toSuiAddress())
          const payment = await signTestPayment(emulator.client, buyer, {
            to: operator.toSuiAddress(),
            amount: price,
            coinType: emulator.usdcType,
          })
          const digest = transactionDigest(payment.bytes)
          // The process claims the digest and dies before submitting it.
          await store.claim(digest, { resource, dialect: 'x402' })
          await lapse()
          expect(await seller.sweeper.runOnce()).toMatchObject({ owed: 0, released: 1 })
          expect(await store.get(digest)).toBeUndefined()
          expect(events).toContainEqual(
            expect.objectContaining({ type: 'claim_resolved', digest, outcome: 'released' }),
          )
          expect(await usdcOf(buyer.toSuiAddress())).toBe(start)
          // Presented again, it is claimed afresh (and would be settled and served).
          expect((await store.claim(digest, { resource, dialect: 'x402' })).status).toBe('claimed')
        } finally {
          await seller.close()
          await store.close()
          await storage.cleanup()
        }
      })
    },
  )
}
