/**
 * Opening the SQLite store's file and the durability of its commits: WAL journal, and
 * `synchronous = NORMAL` unless asked for `FULL`, with single commits synced on demand.
 *
 * @module
 */
import { mkdirSync, statSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import { checkpointInBackground } from './sqliteCheckpoints.js'

/**
 * Opens (creating its folder) a database file for the store: WAL journal, the busy timeout,
 * `synchronous` NORMAL (default) or FULL, and its checkpoints run by a worker thread instead of
 * inside a commit (`sqliteCheckpoints.ts`).
 */
export function openSqliteFile(
  path: string,
  options: { busyTimeoutMs?: number | undefined; synchronous?: 'normal' | 'full' | undefined },
): Database.Database {
  if (path !== ':memory:' && path !== '') createFolder(dirname(path))
  const busyTimeoutMs = options.busyTimeoutMs ?? 5000
  const db = new Database(path, { timeout: busyTimeoutMs })
  retryWhileBusy(() => db.pragma('journal_mode = WAL'), busyTimeoutMs)
  db.pragma(options.synchronous === 'full' ? 'synchronous = FULL' : 'synchronous = NORMAL')
  checkpointInBackground(db, path)
  return db
}

/**
 * Creates `folder` and its missing parents one at a time, from the nearest one that exists: a
 * bounded number of steps, where `mkdirSync(…, { recursive: true })` loops without end under a
 * parent that cannot hold folders (`/proc` on Node 20). Throws the first failure (`ENOENT`,
 * `EACCES`, `ENOTDIR` for a file in the way).
 */
function createFolder(folder: string): void {
  const missing: string[] = []
  for (let current = folder; statSync(current, { throwIfNoEntry: false }) === undefined; ) {
    missing.unshift(current)
    if (dirname(current) === current) break
    current = dirname(current)
  }
  for (const path of missing) {
    try {
      mkdirSync(path)
    } catch (error) {
      // Another process made it first.
      if ((error as { code?: unknown }).code !== 'EEXIST') throw error
    }
  }
}

const pause = new Int32Array(new SharedArrayBuffer(4))

/**
 * Runs `step` again while it fails with `SQLITE_BUSY`, for at most `timeoutMs`, pausing `pauseMs`
 * between tries. Needed for the switch to WAL: when several processes open a new file at once, two
 * of them can each hold the shared lock the other must see gone, and SQLite then answers one of
 * them `SQLITE_BUSY` at once instead of waiting out the busy timeout (seen about once in 400
 * processes started ten at a time on one new file).
 */
export function retryWhileBusy<T>(step: () => T, timeoutMs: number, pauseMs = 5): T {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      return step()
    } catch (error) {
      const code = (error as { code?: unknown } | null)?.code
      const busy = typeof code === 'string' && code.startsWith('SQLITE_BUSY')
      if (!busy || Date.now() >= deadline) throw error
      Atomics.wait(pause, 0, 0, pauseMs)
    }
  }
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

/** Runs steps in shared commits: see {@link groupCommit}. */
export type GroupCommit = {
  /** Runs `step` in the next group's transaction; settles once that transaction committed. */
  <T>(step: () => T): Promise<T>
  /** Commits the waiting group now (before a step that must not wait behind it, or overtake it). */
  flush(): void
}

/**
 * Group commit: steps asked for in the same turn of the event loop run one after another in ONE
 * `BEGIN IMMEDIATE` transaction, and every caller's promise settles once that transaction has
 * committed. Each step sees the effects of the steps before it, as if they had committed one by one
 * in that order; what changes is that a burst of payments pays for one commit (its write lock, WAL
 * write and system calls) instead of one each. A step alone waits one `setImmediate` for company.
 *
 * Each step must be synchronous better-sqlite3 work wrapped in `db.transaction` (directly or by a
 * function it calls): inside the group's transaction that makes it a savepoint, so a step that
 * throws undoes only itself and rejects only its caller.
 */
export function groupCommit(db: Database.Database): GroupCommit {
  type Waiting = {
    step: () => unknown
    resolve: (value: unknown) => void
    reject: (error: unknown) => void
    outcome?: { ok: true; value: unknown } | { ok: false; error: unknown }
  }
  let waiting: Waiting[] = []
  const runAll = db.transaction((group: Waiting[]) => {
    for (const item of group) {
      try {
        item.outcome = { ok: true, value: item.step() }
      } catch (error) {
        item.outcome = { ok: false, error }
      }
    }
  })
  const flush = () => {
    if (waiting.length === 0) return
    const group = waiting
    waiting = []
    try {
      runAll.immediate(group)
    } catch (error) {
      // The group's own transaction failed (the file is busy, the disk is full…): nothing of it
      // was committed, so every step fails.
      for (const item of group) item.reject(error)
      return
    }
    for (const item of group) {
      const outcome = item.outcome
      if (outcome?.ok === true) item.resolve(outcome.value)
      else item.reject(outcome?.error)
    }
  }
  const run = <T>(step: () => T) =>
    new Promise<T>((resolve, reject) => {
      if (waiting.length === 0) setImmediate(flush)
      waiting.push({ step, resolve: resolve as (value: unknown) => void, reject })
    })
  return Object.assign(run, { flush })
}
