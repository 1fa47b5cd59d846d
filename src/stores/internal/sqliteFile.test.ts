import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { openSqliteFile, syncedCommit } from './sqliteFile.js'

const folder = mkdtempSync(join(tmpdir(), 'tollgate-sqlite-file-'))
afterAll(() => rmSync(folder, { recursive: true, force: true }))

/** SQLite's codes: 1 = NORMAL, 2 = FULL. */
const synchronousOf = (db: ReturnType<typeof openSqliteFile>) =>
  db.pragma('synchronous', { simple: true })

describe('the SQLite store file', () => {
  it('opens in WAL mode with NORMAL commits by default and FULL on request, creating its folder', () => {
    const normal = openSqliteFile(join(folder, 'a', 'b', 'normal.db'), {})
    expect(normal.pragma('journal_mode', { simple: true })).toBe('wal')
    expect(synchronousOf(normal)).toBe(1)
    const full = openSqliteFile(join(folder, 'full.db'), { synchronous: 'full' })
    expect(synchronousOf(full)).toBe(2)
    normal.close()
    full.close()
  })

  it('syncs one commit on demand and goes back to NORMAL, also when the commit throws', () => {
    const db = openSqliteFile(join(folder, 'synced.db'), {})
    db.exec('CREATE TABLE t (x INTEGER)')
    const insert = db.transaction(() => {
      db.prepare('INSERT INTO t VALUES (1)').run()
      return synchronousOf(db)
    })
    expect(syncedCommit(db, () => insert.immediate())).toBe(2)
    expect(synchronousOf(db)).toBe(1)
    expect(() =>
      syncedCommit(db, () => {
        throw new Error('the commit failed')
      }),
    ).toThrow('the commit failed')
    expect(synchronousOf(db)).toBe(1)
    expect(db.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 1 })
    db.close()
  })
})
