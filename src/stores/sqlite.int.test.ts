import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { endianness, tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { describe, expect, test } from 'vitest'
import { describePaymentStoreContract } from './contract.js'
import { checkpointIntervalMs } from './internal/sqliteCheckpoints.js'
import { createSqliteStore, openSqliteDatabase } from './sqlite.js'

describePaymentStoreContract('sqlite (file)', () => {
  const folder = mkdtempSync(join(tmpdir(), 'tollgate-sqlite-'))
  const path = join(folder, 'data', 'payments.db')
  return {
    open: (options) => createSqliteStore({ ...options, database: path }),
    cleanup: async () => rmSync(folder, { recursive: true, force: true }),
  }
})

describePaymentStoreContract('sqlite (caller-owned Database, custom table)', () => {
  const db = new Database(':memory:')
  return {
    open: (options) => createSqliteStore({ ...options, database: db, table: 'paid_calls' }),
    cleanup: async () => {
      db.close()
    },
  }
})

describe('sqlite checkpoints', () => {
  // SQLite's own checkpoint would copy the log into the file inside the commit that crosses 1 000
  // pages, blocking the process; the store's files hand it to a worker thread instead.
  test('a commit never checkpoints; the worker copies the log into the file soon after', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'tollgate-sqlite-'))
    const path = join(folder, 'c.db')
    const db = openSqliteDatabase(path) as Database.Database
    try {
      expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(0)
      db.exec('CREATE TABLE t (v BLOB)')
      const insert = db.prepare('INSERT INTO t (v) VALUES (?)')
      // About 3 000 pages of log in one commit: far past SQLite's own threshold.
      db.transaction(() => {
        for (let i = 0; i < 3_000; i++) insert.run(Buffer.alloc(4_000, i % 256))
      })()
      // Still in the log: SQLite's own checkpoint would have copied it before the commit returned.
      expect(statSync(path).size).toBeLessThan(1_000_000)
      const deadline = Date.now() + 10_000
      while (statSync(path).size < 3_000 * 4_000 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      expect(statSync(path).size).toBeGreaterThanOrEqual(3_000 * 4_000)
    } finally {
      db.close()
      rmSync(folder, { recursive: true, force: true })
    }
  })
  // A checkpoint that copies the whole log makes the next commit start the log again and sync its
  // new header, on the committing thread: a short log is left until it reaches SQLite's own
  // threshold, as SQLite itself would leave it.
  test('a short log is left as it is: no checkpoint, so no commit starts the log again', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'tollgate-sqlite-'))
    const path = join(folder, 's.db')
    const db = openSqliteDatabase(path) as Database.Database
    /** The wal-index header's last frame of the log and frames copied (bytes 16 and 96; the machine's byte order). */
    const log = () => {
      const header = readFileSync(`${path}-shm`).subarray(0, 136)
      const u32 = (at: number) =>
        endianness() === 'LE' ? header.readUInt32LE(at) : header.readUInt32BE(at)
      return { last: u32(16), copied: u32(96) }
    }
    try {
      db.exec('CREATE TABLE t (v INTEGER)')
      const insert = db.prepare('INSERT INTO t (v) VALUES (?)')
      for (let i = 0; i < 20; i++) {
        insert.run(i)
        await new Promise((resolve) => setTimeout(resolve, checkpointIntervalMs / 4))
      }
      await new Promise((resolve) => setTimeout(resolve, 4 * checkpointIntervalMs))
      // Every commit is still in the log, none copied, and the log never started again.
      expect(log().last).toBeGreaterThanOrEqual(21)
      expect(log().copied).toBe(0)
    } finally {
      db.close()
      rmSync(folder, { recursive: true, force: true })
    }
  })
})

describe('sqlite store options', () => {
  test('opens the file in WAL mode, and leaves a caller-owned Database open on close', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'tollgate-sqlite-'))
    try {
      const path = join(folder, 'p.db')
      const store = createSqliteStore({ database: path })
      await store.close()
      const db = new Database(path)
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal')
      const shared = createSqliteStore({ database: db })
      await shared.close()
      expect(db.open).toBe(true)
      db.close()
    } finally {
      rmSync(folder, { recursive: true, force: true })
    }
  })

  test('commits the writes still waiting for their group when it closes', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'tollgate-sqlite-'))
    try {
      const path = join(folder, 'p.db')
      const store = createSqliteStore({ database: path })
      const digest = 'A'.repeat(44)
      const claimed = store.claim(digest, { resource: 'https://shop.example/x', dialect: 'x402' })
      await store.close()
      expect(await claimed).toMatchObject({ status: 'claimed' })
      const reopened = createSqliteStore({ database: path })
      expect(await reopened.get(digest)).toMatchObject({ state: 'claimed' })
      await reopened.close()
    } finally {
      rmSync(folder, { recursive: true, force: true })
    }
  })

  test('a synced write runs after the writes asked for before it, not ahead of them', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'tollgate-sqlite-'))
    try {
      const store = createSqliteStore({ database: join(folder, 'p.db') })
      const digest = 'B'.repeat(44)
      const resource = 'https://shop.example/x'
      // Neither is awaited: both wait for the next group when the synced write is asked for.
      const claimed = store.claim(digest, { resource, dialect: 'x402' })
      const settled = store.settled(digest, {
        payer: `0x${'a'.repeat(64)}`,
        amount: 20_000n,
        resource,
        dialect: 'x402',
        network: 'sui:mainnet',
        asset: '0x2::usdc::USDC',
        settledAt: new Date(),
      })
      expect(await store.oweRefund(digest, 'upstream failed')).toMatchObject({
        status: 'applied',
        record: { state: 'refund_due' },
      })
      await Promise.all([claimed, settled])
      await store.close()
    } finally {
      rmSync(folder, { recursive: true, force: true })
    }
  })

  test('refuses a table name that is not a plain identifier', () => {
    expect(() => createSqliteStore({ database: ':memory:', table: 'x; DROP TABLE y' })).toThrow(
      expect.objectContaining({ code: 'invalid_config' }),
    )
  })
})
