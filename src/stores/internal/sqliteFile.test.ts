import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { groupCommit, openSqliteFile, retryWhileBusy, syncedCommit } from './sqliteFile.js'

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

  it('retries a step SQLite answers SQLITE_BUSY at once, until the busy timeout, and nothing else', () => {
    const busy = Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' })
    let tries = 0
    const flaky = () => {
      tries += 1
      if (tries < 3) throw busy
      return 'wal'
    }
    expect(retryWhileBusy(flaky, 1_000, 1)).toBe('wal')
    expect(tries).toBe(3)

    const other = Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR' })
    tries = 0
    expect(() =>
      retryWhileBusy(() => {
        tries += 1
        throw other
      }, 1_000),
    ).toThrow(other)
    expect(tries).toBe(1)

    const started = Date.now()
    expect(() =>
      retryWhileBusy(() => {
        throw busy
      }, 30),
    ).toThrow(busy)
    expect(Date.now() - started).toBeGreaterThanOrEqual(30)
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

describe('group commit', () => {
  /** A WAL file with one table, its insert as a transaction (a savepoint inside a group). */
  function open(name: string) {
    const path = join(folder, name)
    const db = openSqliteFile(path, {})
    db.exec('CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)')
    const insert = db.transaction((k: string, v: number) => {
      db.prepare('INSERT INTO t VALUES (?, ?)').run(k, v)
      return v
    })
    const rows = () => db.prepare('SELECT k, v FROM t ORDER BY k').all()
    const walBytes = () => statSync(`${path}-wal`).size
    return { db, insert, rows, walBytes }
  }

  it('runs the steps of one turn in one commit, each seeing the ones before it', async () => {
    const { db, insert, walBytes } = open('group.db')
    const commit = groupCommit(db)
    const before = walBytes()
    const answers = await Promise.all([
      commit(() => insert('a', 1)),
      commit(() => insert('b', 2)),
      commit(() => db.prepare('SELECT count(*) AS n FROM t').get()),
    ])
    expect(answers).toEqual([1, 2, { n: 2 }])
    const grouped = walBytes() - before
    // The same three steps one turn after another: three commits, each appending its own frames.
    await commit(() => insert('c', 3))
    await commit(() => insert('d', 4))
    await commit(() => insert('e', 5))
    expect(walBytes() - before - grouped).toBeGreaterThanOrEqual(3 * grouped)
    db.close()
  })

  it('undoes and rejects only the step that throws', async () => {
    const { db, insert, rows } = open('group-throws.db')
    const commit = groupCommit(db)
    const outcomes = await Promise.allSettled([
      commit(() => insert('a', 1)),
      commit(() => insert('a', 2)), // the key is taken
      commit(() => insert('b', 3)),
    ])
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
    expect(rows()).toEqual([
      { k: 'a', v: 1 },
      { k: 'b', v: 3 },
    ])
    db.close()
  })

  it('commits the waiting steps at once on flush, and nothing when none waits', async () => {
    const { db, insert, rows } = open('group-flush.db')
    const commit = groupCommit(db)
    commit.flush()
    const pending = commit(() => insert('a', 1))
    expect(rows()).toEqual([])
    commit.flush()
    expect(rows()).toEqual([{ k: 'a', v: 1 }])
    await expect(pending).resolves.toBe(1)
    db.close()
  })

  it('rejects every step of a group whose transaction cannot start, and writes none', async () => {
    const { db, insert, rows } = open('group-busy.db')
    db.pragma('busy_timeout = 0')
    const other = openSqliteFile(join(folder, 'group-busy.db'), {})
    other.exec('BEGIN IMMEDIATE')
    const commit = groupCommit(db)
    const outcomes = await Promise.allSettled([
      commit(() => insert('a', 1)),
      commit(() => insert('b', 2)),
    ])
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected'])
    other.exec('ROLLBACK')
    expect(rows()).toEqual([])
    other.close()
    db.close()
  })
})
