import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { sql } from 'kysely'
import { afterAll, describe, expect, it } from 'vitest'
import { openDatabase } from './database.js'

const folder = mkdtempSync(join(tmpdir(), 'tollgate-gateway-db-'))
afterAll(() => rmSync(folder, { recursive: true, force: true }))

describe('the gateway database on SQLite', () => {
  it('takes the write lock when a transaction begins, so another process waits instead of failing', async () => {
    const file = join(folder, 'immediate.db')
    const gateway = await openDatabase({ kind: 'sqlite', file })
    const other = new Database(file, { timeout: 0 })
    try {
      const tryWrite = () => {
        try {
          other.exec('BEGIN IMMEDIATE')
          other.exec('ROLLBACK')
          return 'wrote'
        } catch (error) {
          return (error as { code?: string }).code
        }
      }
      expect(tryWrite()).toBe('wrote')
      const seen = await gateway.db.transaction().execute(async (trx) => {
        // Only a read so far: a DEFERRED transaction would not hold the write lock yet.
        await sql`select 1`.execute(trx)
        return tryWrite()
      })
      expect(seen).toBe('SQLITE_BUSY')
      expect(tryWrite()).toBe('wrote')
    } finally {
      other.close()
      await gateway.close()
    }
  })

  it('opens a file already brought up to date without applying anything again', async () => {
    const file = join(folder, 'twice.db')
    const first = await openDatabase({ kind: 'sqlite', file })
    const count = async (db: typeof first.db) =>
      Number(
        (await sql<{ n: number }>`select count(*) as n from gateway_migrations`.execute(db)).rows[0]
          ?.n,
      )
    const applied = await count(first.db)
    await first.close()
    const again = await openDatabase({ kind: 'sqlite', file })
    expect(applied).toBeGreaterThan(0)
    expect(await count(again.db)).toBe(applied)
    await again.close()
  })
})
