/**
 * Where reviews are kept: a small interface (so the storage can move onto another relational
 * layer) and its SQLite implementation (better-sqlite3, one file in the gateway's data folder).
 * One review per purchase: the purchase id is the primary key.
 *
 * @module
 */
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import { PaymentError } from 'tollgate'

/** A stored review. */
export type Review = {
  /** The purchase reviewed: a job's object id, or a paid call's settlement digest. */
  purchaseId: string
  kind: 'job' | 'call'
  buyer: string
  seller: string
  /** 1 to 5 stars. */
  rating: number
  /** At most 2000 characters; may be empty. */
  comment: string
  createdAtMs: number
}

/** Review storage. */
export type ReviewStore = {
  /** Adds a review; `duplicate` when the purchase already has one (nothing changes then). */
  add(review: Review): Promise<{ status: 'added' } | { status: 'duplicate' }>
  get(purchaseId: string): Promise<Review | undefined>
  /** A seller's reviews, newest first. */
  listBySeller(seller: string, options?: { limit?: number }): Promise<Review[]>
  close(): Promise<void>
}

type Row = {
  purchase_id: string
  kind: 'job' | 'call'
  buyer: string
  seller: string
  rating: number
  comment: string
  created_at_ms: number
}

const fromRow = (r: Row): Review => ({
  purchaseId: r.purchase_id,
  kind: r.kind,
  buyer: r.buyer,
  seller: r.seller,
  rating: r.rating,
  comment: r.comment,
  createdAtMs: r.created_at_ms,
})

/**
 * Opens (creating) the SQLite review store.
 *
 * @param options.file - the database file (`<DATA_DIR>/reviews.db`), or `:memory:`.
 * @param options.table - table name. Default `tollgate_reviews`.
 */
export function createSqliteReviewStore(options: { file: string; table?: string }): ReviewStore {
  const table = options.table ?? 'tollgate_reviews'
  if (!/^[a-z_][a-z0-9_]{0,40}$/.test(table)) {
    throw new PaymentError('invalid_config', 'invalid review table name')
  }
  if (options.file !== ':memory:') mkdirSync(dirname(options.file), { recursive: true })
  const db = new Database(options.file, { timeout: 5000 })
  db.pragma('journal_mode = WAL')
  db.exec(`CREATE TABLE IF NOT EXISTS ${table} (
    purchase_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('job', 'call')),
    buyer TEXT NOT NULL,
    seller TEXT NOT NULL,
    rating INTEGER NOT NULL CHECK (rating BETWEEN 1 AND 5),
    comment TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL
  )`)
  db.exec(`CREATE INDEX IF NOT EXISTS ${table}_seller ON ${table} (seller, created_at_ms)`)
  const insert = db.prepare(
    `INSERT INTO ${table} (purchase_id, kind, buyer, seller, rating, comment, created_at_ms)
     VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (purchase_id) DO NOTHING`,
  )
  const select = db.prepare(`SELECT * FROM ${table} WHERE purchase_id = ?`)
  const bySeller = db.prepare(
    `SELECT * FROM ${table} WHERE seller = ? ORDER BY created_at_ms DESC LIMIT ?`,
  )
  return {
    async add(r) {
      const { changes } = insert.run(
        r.purchaseId,
        r.kind,
        r.buyer,
        r.seller,
        r.rating,
        r.comment,
        r.createdAtMs,
      )
      return changes === 1 ? { status: 'added' } : { status: 'duplicate' }
    },
    async get(purchaseId) {
      const row = select.get(purchaseId) as Row | undefined
      return row ? fromRow(row) : undefined
    },
    async listBySeller(seller, { limit = 50 } = {}) {
      return (bySeller.all(seller, Math.min(Math.max(1, limit), 500)) as Row[]).map(fromRow)
    },
    async close() {
      db.close()
    },
  }
}
