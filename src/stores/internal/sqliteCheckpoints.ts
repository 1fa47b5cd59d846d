/**
 * WAL checkpoints off the event loop. SQLite's automatic checkpoint runs inside the commit that
 * crosses its threshold (1 000 pages): it copies the log into the database and, with `synchronous
 * = NORMAL`, syncs both files — on a common disk a few milliseconds, at worst tens, during which
 * the whole process (every request it serves) waits. Measured on the channel store: 1 % of commits
 * took 1–29 ms and made up three quarters of all the time spent committing.
 *
 * So a file opened by the store has its automatic checkpoint turned off, and one worker thread per
 * process (started at the first file, never keeping the process alive) holds a connection of its
 * own to each such file and runs a `PASSIVE` checkpoint on it every {@link checkpointIntervalMs}:
 * it never waits for readers or writers, and the log stays about as short as SQLite keeps it itself.
 * When no worker can run, or when it fails, the files keep (or get back) SQLite's own checkpoint.
 *
 * @module
 */
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import type Database from 'better-sqlite3'

/** How often the worker checkpoints each file, ms. */
export const checkpointIntervalMs = 100

/** SQLite's own threshold, restored when the worker is gone. */
const sqliteDefaultPages = 1000

/** The worker: a connection per file (counted by its openers), a `PASSIVE` checkpoint each turn. */
const workerSource = `
const { parentPort, workerData } = require('node:worker_threads')
const Database = require(workerData.module)
const files = new Map()
parentPort.on('message', (message) => {
  if (message.open !== undefined) {
    const file = files.get(message.open)
    if (file !== undefined) file.count++
    else {
      try {
        files.set(message.open, { db: new Database(message.open, { fileMustExist: true, timeout: 0 }), count: 1 })
      } catch {}
    }
  } else if (message.close !== undefined) {
    const file = files.get(message.close)
    if (file !== undefined && --file.count === 0) {
      files.delete(message.close)
      try { file.db.close() } catch {}
    }
  }
})
setInterval(() => {
  for (const { db } of files.values()) {
    try { db.pragma('wal_checkpoint(PASSIVE)') } catch {}
  }
}, workerData.intervalMs)
`

/** The worker, `null` once it cannot run (its files then checkpoint themselves). */
let worker: Worker | null | undefined
/** The connections whose automatic checkpoint is off, to turn back on if the worker fails. */
const handed = new Set<Database.Database>()

/** The checkpoint worker, started at the first call; undefined when none can run. */
function checkpointer(): Worker | undefined {
  if (worker === undefined) {
    try {
      // The worker loads the same better-sqlite3 as this module (resolved as the CommonJS build
      // or the ES module resolves it).
      const module =
        typeof require === 'function' && typeof require.resolve === 'function'
          ? require.resolve('better-sqlite3')
          : fileURLToPath(import.meta.resolve('better-sqlite3'))
      const started = new Worker(workerSource, {
        eval: true,
        workerData: { module, intervalMs: checkpointIntervalMs },
      })
      started.unref()
      const fail = () => {
        worker = null
        for (const db of handed) {
          if (db.open) db.pragma(`wal_autocheckpoint = ${sqliteDefaultPages}`)
        }
        handed.clear()
      }
      started.once('error', fail)
      started.once('exit', fail)
      worker = started
    } catch {
      worker = null
    }
  }
  return worker ?? undefined
}

/**
 * Hands the checkpoints of `db` (a WAL file at `path`) to the process's checkpoint worker; see the
 * module's description. `db.close()` tells the worker to let the file go. A private in-memory
 * database is left as it is.
 */
export function checkpointInBackground(db: Database.Database, path: string): void {
  if (path === '' || path === ':memory:' || path.startsWith('file:')) return
  const runner = checkpointer()
  if (runner === undefined) return
  const file = resolve(path)
  db.pragma('wal_autocheckpoint = 0')
  handed.add(db)
  runner.postMessage({ open: file })
  const close = db.close.bind(db)
  db.close = () => {
    if (handed.delete(db)) worker?.postMessage({ close: file })
    return close()
  }
}
