/**
 * WAL checkpoints off the event loop. SQLite's automatic checkpoint runs inside the commit that
 * crosses its threshold (1 000 pages): it copies the log into the database and, with `synchronous
 * = NORMAL`, syncs both files — on a common disk a few milliseconds, at worst tens, during which
 * the whole process (every request it serves) waits. Measured on the channel store: 1 % of commits
 * took 1–29 ms and made up three quarters of all the time spent committing.
 *
 * So a file opened by the store has its automatic checkpoint turned off, and one worker thread per
 * process (started at the first file, never keeping the process alive) holds a connection of its
 * own to each such file. Every {@link checkpointIntervalMs} it reads the file's wal-index header
 * (the first 136 bytes of its `-shm` file, laid out as SQLite's WAL format documents: the log's
 * last frame at byte 16, the frames already copied at byte 96) and runs a `PASSIVE` checkpoint
 * when the log holds SQLite's own threshold of frames not yet copied: it never waits for readers
 * or writers, and the log stays as long as SQLite keeps it itself. Not sooner: once a checkpoint
 * has copied the whole log, the next commit starts the log again from its beginning and syncs its
 * new header — on the committing thread, about a millisecond, at worst several. Checkpointing every
 * turn put that sync into a commit every turn (a metered answer's voucher write took 1.1 ms
 * instead of 0.36, `docs/benchmarks.md`). A header it cannot read (no `-shm` file, another layout)
 * is checkpointed every turn, as before. When no worker can run, or when it fails, the files keep
 * (or get back) SQLite's own checkpoint.
 *
 * @module
 */
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import type Database from 'better-sqlite3'

/** How often the worker looks at each file's log, ms. */
export const checkpointIntervalMs = 100

/** SQLite's own threshold (pages of log), restored when the worker is gone. */
const sqliteDefaultPages = 1000

/**
 * The worker: a connection per file (counted by its openers); each turn, a `PASSIVE` checkpoint of
 * each file whose log holds `pages` frames not yet copied, or whose wal-index header it cannot read
 * (see the module's description).
 */
const workerSource = `
const { parentPort, workerData } = require('node:worker_threads')
const { openSync, readSync, closeSync } = require('node:fs')
const { endianness } = require('node:os')
const Database = require(workerData.module)
const files = new Map()
const header = Buffer.alloc(136)
parentPort.on('message', (message) => {
  if (message.open !== undefined) {
    const file = files.get(message.open)
    if (file !== undefined) file.count++
    else {
      try {
        files.set(message.open, { db: new Database(message.open, { fileMustExist: true, timeout: 0 }), count: 1, shm: undefined })
      } catch {}
    }
  } else if (message.close !== undefined) {
    const file = files.get(message.close)
    if (file !== undefined && --file.count === 0) {
      files.delete(message.close)
      try { file.db.close() } catch {}
      if (file.shm !== undefined) try { closeSync(file.shm) } catch {}
    }
  }
})
const little = endianness() === 'LE'
const u32 = (at) => (little ? header.readUInt32LE(at) : header.readUInt32BE(at))
/**
 * The frames of the file's log not yet copied: its last valid frame (byte 16 of the header) less
 * the frames backfilled (byte 96). Undefined when the header cannot be read, is not initialised or
 * of the documented version (3007000), or was caught mid-change (its two copies differ).
 */
function waiting(path, file) {
  try {
    if (file.shm === undefined) file.shm = openSync(path + '-shm', 'r')
    if (readSync(file.shm, header, 0, header.length, 0) < header.length) return undefined
  } catch {
    return undefined
  }
  if (u32(0) !== 3007000 || header[12] !== 1 || header.compare(header, 48, 96, 0, 48) !== 0) {
    return undefined
  }
  return Math.max(0, u32(16) - u32(96))
}
setInterval(() => {
  for (const [path, file] of files) {
    const frames = waiting(path, file)
    if (frames !== undefined && frames < workerData.pages) continue
    try { file.db.pragma('wal_checkpoint(PASSIVE)') } catch {}
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
        workerData: { module, intervalMs: checkpointIntervalMs, pages: sqliteDefaultPages },
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
