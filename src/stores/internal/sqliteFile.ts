/**
 * Opening the SQLite store's file and the durability of its commits: WAL journal, and
 * `synchronous = NORMAL` unless asked for `FULL`, with single commits synced on demand.
 *
 * @module
 */
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'

/**
 * Opens (creating its folder) a database file for the store: WAL journal, the busy timeout, and
 * `synchronous` NORMAL (default) or FULL.
 */
export function openSqliteFile(
  path: string,
  options: { busyTimeoutMs?: number | undefined; synchronous?: 'normal' | 'full' | undefined },
): Database.Database {
  if (path !== ':memory:' && path !== '') mkdirSync(dirname(path), { recursive: true })
  const db = new Database(path, { timeout: options.busyTimeoutMs ?? 5000 })
  db.pragma('journal_mode = WAL')
  db.pragma(options.synchronous === 'full' ? 'synchronous = FULL' : 'synchronous = NORMAL')
  return db
}

/**
 * Runs `commit` (one transaction) with `synchronous = FULL`, so that it is on stable storage when it
 * returns, then goes back to NORMAL. The pragma cannot change inside a transaction: call it outside.
 */
export function syncedCommit<T>(db: Database.Database, commit: () => T): T {
  db.pragma('synchronous = FULL')
  try {
    return commit()
  } finally {
    db.pragma('synchronous = NORMAL')
  }
}
