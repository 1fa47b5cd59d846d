import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { describe, expect, test } from 'vitest'
import { describePaymentStoreContract } from './contract.js'
import { createSqliteStore } from './sqlite.js'

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

  test('refuses a table name that is not a plain identifier', () => {
    expect(() => createSqliteStore({ database: ':memory:', table: 'x; DROP TABLE y' })).toThrow(
      expect.objectContaining({ code: 'invalid_config' }),
    )
  })
})
