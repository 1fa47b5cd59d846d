/**
 * The relational store's migrations, in code (Kysely's `Migrator` with an in-code provider): run at
 * every start, each applied once, serialised by Kysely's migration lock so that several gateway
 * processes may start together.
 *
 * @module
 */
import { type Kysely, type Migration, type MigrationProvider, SqliteAdapter, sql } from 'kysely'
import { searchTextOf } from '../marketplace/searchWords.js'

/** The migrations by name; names sort in the order they apply. */
export const migrations: Readonly<Record<string, Migration>> = {
  '2026_11_23_001_inference_keys': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('inference_keys')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('hash', 'text', (c) => c.notNull().unique())
        .addColumn('hint', 'text', (c) => c.notNull())
        .addColumn('name', 'text')
        .addColumn('credit', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('revoked_at', 'text')
        .addCheckConstraint('inference_keys_credit_not_negative', sql`credit >= 0`)
        .execute()
      await db.schema
        .createTable('inference_ledger')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('key_id', 'text', (c) => c.notNull().references('inference_keys.id'))
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('amount', 'bigint', (c) => c.notNull())
        .addColumn('model', 'text')
        .addColumn('reference', 'text', (c) => c.unique())
        .addColumn('prompt_tokens', 'integer')
        .addColumn('completion_tokens', 'integer')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute()
      await db.schema
        .createIndex('inference_ledger_key')
        .on('inference_ledger')
        .columns(['key_id', 'created_at'])
        .execute()
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('inference_ledger').execute()
      await db.schema.dropTable('inference_keys').execute()
    },
  },
  '2026_11_23_002_marketplace': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('marketplace_listings')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('seller', 'text', (c) => c.notNull())
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('method', 'text', (c) => c.notNull())
        .addColumn('probe_body', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull())
        .addColumn('tags', 'text', (c) => c.notNull())
        .addColumn('network', 'text', (c) => c.notNull())
        .addColumn('asset', 'text', (c) => c.notNull())
        .addColumn('price', 'bigint', (c) => c.notNull())
        .addColumn('pay_to', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('consecutive_failures', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('next_probe_at_ms', 'bigint', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addUniqueConstraint('marketplace_listings_endpoint', ['seller', 'method', 'url'])
        .addCheckConstraint('marketplace_listings_price_not_negative', sql`price >= 0`)
        .execute()
      await db.schema
        .createIndex('marketplace_listings_state')
        .on('marketplace_listings')
        .columns(['state', 'next_probe_at_ms'])
        .execute()
      await db.schema
        .createTable('marketplace_probes')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('listing_id', 'text', (c) =>
          c.notNull().references('marketplace_listings.id').onDelete('cascade'),
        )
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('passed', 'integer', (c) => c.notNull())
        .addColumn('failed_gate', 'text')
        .addColumn('message', 'text', (c) => c.notNull())
        .addColumn('probed_at', 'text', (c) => c.notNull())
        .execute()
      await db.schema
        .createIndex('marketplace_probes_listing')
        .on('marketplace_probes')
        .columns(['listing_id', 'probed_at'])
        .execute()
      await db.schema
        .createTable('marketplace_nonces')
        .addColumn('nonce', 'text', (c) => c.primaryKey())
        .addColumn('address', 'text', (c) => c.notNull())
        .addColumn('action', 'text', (c) => c.notNull())
        .addColumn('body_hash', 'text', (c) => c.notNull())
        .addColumn('expires_at_ms', 'bigint', (c) => c.notNull())
        .addColumn('used_at_ms', 'bigint')
        .execute()
      await db.schema
        .createTable('marketplace_leases')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('holder', 'text', (c) => c.notNull())
        .addColumn('expires_at_ms', 'bigint', (c) => c.notNull())
        .execute()
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('marketplace_leases').execute()
      await db.schema.dropTable('marketplace_nonces').execute()
      await db.schema.dropTable('marketplace_probes').execute()
      await db.schema.dropTable('marketplace_listings').execute()
    },
  },
  '2026_11_23_003_aci_receipts': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('aci_sessions')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('model', 'text', (c) => c.notNull())
        .addColumn('nonce', 'text', (c) => c.notNull())
        .addColumn('workload_id', 'text', (c) => c.notNull())
        .addColumn('keyset_digest', 'text', (c) => c.notNull())
        .addColumn('measurement', 'text', (c) => c.notNull())
        .addColumn('tcb_status', 'text', (c) => c.notNull())
        .addColumn('attested_at_ms', 'bigint', (c) => c.notNull())
        .addColumn('stale_at_ms', 'bigint', (c) => c.notNull())
        .addColumn('report', 'text', (c) => c.notNull())
        .addColumn('policy', 'text', (c) => c.notNull())
        .execute()
      await db.schema
        .createTable('aci_receipts')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('model', 'text', (c) => c.notNull())
        .addColumn('session_id', 'text', (c) => c.notNull().references('aci_sessions.id'))
        .addColumn('key_id', 'text', (c) => c.notNull())
        .addColumn('receipt', 'text', (c) => c.notNull())
        .addColumn('request_hash', 'text', (c) => c.notNull())
        .addColumn('response_hash', 'text', (c) => c.notNull())
        .addColumn('gateway_receipt', 'text')
        .addColumn('stored_at', 'text', (c) => c.notNull())
        .execute()
      await db.schema
        .createTable('aci_signing_keys')
        .addColumn('kid', 'text', (c) => c.primaryKey())
        .addColumn('public_jwk', 'text', (c) => c.notNull())
        .addColumn('private_jwk', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute()
      await db.schema
        .createTable('aci_anchors')
        .addColumn('receipt_id', 'text', (c) => c.primaryKey())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('wire_hash', 'text', (c) => c.notNull())
        .addColumn('workload_id', 'text', (c) => c.notNull())
        .addColumn('served_at_ms', 'bigint', (c) => c.notNull())
        .addColumn('tx_bytes', 'text')
        .addColumn('signature', 'text')
        .addColumn('digest', 'text')
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('next_attempt_at_ms', 'bigint', (c) => c.notNull())
        .addColumn('lease_holder', 'text')
        .addColumn('lease_until_ms', 'bigint', (c) => c.notNull())
        .addColumn('anchored_at', 'text')
        .execute()
      await db.schema
        .createIndex('aci_anchors_due')
        .on('aci_anchors')
        .columns(['state', 'next_attempt_at_ms'])
        .execute()
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('aci_anchors').execute()
      await db.schema.dropTable('aci_signing_keys').execute()
      await db.schema.dropTable('aci_receipts').execute()
      await db.schema.dropTable('aci_sessions').execute()
    },
  },
  '2026_11_23_010_listing_input_schema': {
    async up(db: Kysely<unknown>) {
      // The JSON Schema of a listed endpoint's request body (discovery shows it); null when the
      // seller gave none.
      await db.schema.alterTable('marketplace_listings').addColumn('input_schema', 'text').execute()
      // The catalog's pages: listed endpoints, newest first.
      await db.schema
        .createIndex('marketplace_listings_catalog')
        .on('marketplace_listings')
        .columns(['state', 'created_at', 'id'])
        .execute()
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropIndex('marketplace_listings_catalog').execute()
      await db.schema.alterTable('marketplace_listings').dropColumn('input_schema').execute()
    },
  },
  '2026_11_23_011_marketplace_reviews': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('marketplace_reviews')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('seller', 'text', (c) => c.notNull())
        .addColumn('buyer', 'text', (c) => c.notNull())
        // One review per purchase, also when two arrive at once.
        .addColumn('purchase', 'text', (c) => c.notNull().unique())
        .addColumn('rating', 'integer', (c) => c.notNull())
        .addColumn('text', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addCheckConstraint('marketplace_reviews_rating', sql`rating between 1 and 5`)
        .execute()
      await db.schema
        .createIndex('marketplace_reviews_seller')
        .on('marketplace_reviews')
        .columns(['seller', 'created_at'])
        .execute()
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('marketplace_reviews').execute()
    },
  },
  '2026_11_23_012_marketplace_activity': {
    async up(db: Kysely<unknown>) {
      await db.schema
        .createTable('marketplace_activity')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('source', 'text', (c) => c.notNull())
        // Each payment once, also when two processes record it at once.
        .addColumn('digest', 'text', (c) => c.notNull().unique())
        .addColumn('seller', 'text', (c) => c.notNull())
        .addColumn('buyer', 'text', (c) => c.notNull())
        .addColumn('amount', 'bigint', (c) => c.notNull())
        .addColumn('asset', 'text', (c) => c.notNull())
        .addColumn('resource', 'text')
        .addColumn('at_ms', 'bigint', (c) => c.notNull())
        .addColumn('recorded_ms', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema
        .createIndex('marketplace_activity_at')
        .on('marketplace_activity')
        .columns(['at_ms', 'id'])
        .execute()
      await db.schema
        .createIndex('marketplace_activity_recorded')
        .on('marketplace_activity')
        .columns(['recorded_ms', 'id'])
        .execute()
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropTable('marketplace_activity').execute()
    },
  },
  '2026_11_25_013_anchor_gateway_receipt': {
    async up(db: Kysely<unknown>) {
      // The anchor commits the gateway's receipt too (its sha256); rows queued before: none.
      await db.schema
        .alterTable('aci_anchors')
        .addColumn('gateway_receipt_hash', 'text', (c) => c.notNull().defaultTo(''))
        .execute()
    },
    async down(db: Kysely<unknown>) {
      await db.schema.alterTable('aci_anchors').dropColumn('gateway_receipt_hash').execute()
    },
  },
  '2026_11_26_014_review_value': {
    async up(db: Kysely<unknown>) {
      // What each reviewed purchase paid: a review counts from a minimum value and weighs by it.
      // Reviews written before have no value recorded (0): they stay listed but do not count.
      await db.schema
        .alterTable('marketplace_reviews')
        .addColumn('value', 'bigint', (c) => c.notNull().defaultTo(0))
        .execute()
      await db.schema
        .createIndex('marketplace_reviews_seller_buyer')
        .on('marketplace_reviews')
        .columns(['seller', 'buyer', 'created_at'])
        .execute()
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropIndex('marketplace_reviews_seller_buyer').execute()
      await db.schema.alterTable('marketplace_reviews').dropColumn('value').execute()
    },
  },
  '2026_11_26_015_activity_pairs': {
    async up(db: Kysely<unknown>) {
      // The wash-trading mark looks up the same pair the other way round.
      await db.schema
        .createIndex('marketplace_activity_pair')
        .on('marketplace_activity')
        .columns(['seller', 'buyer'])
        .execute()
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropIndex('marketplace_activity_pair').execute()
    },
  },
  '2026_11_26_016_marketplace_nonces_expiry': {
    async up(db: Kysely<unknown>) {
      // Outstanding nonces are counted, and expired ones purged, by their expiry.
      await db.schema
        .createIndex('marketplace_nonces_expiry')
        .on('marketplace_nonces')
        .columns(['expires_at_ms'])
        .execute()
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropIndex('marketplace_nonces_expiry').execute()
    },
  },
  '2026_11_27_017_console': {
    async up(db: Kysely<unknown>) {
      // A key's owner: the Sui address that made it in the console (or that the operator named).
      await db.schema.alterTable('inference_keys').addColumn('owner', 'text').execute()
      await db.schema
        .createIndex('inference_keys_owner')
        .on('inference_keys')
        .columns(['owner', 'created_at'])
        .execute()
      // The console's one-time sign-in nonces, and its sign-ins (the cookie holds the token; the
      // row is found by the token's SHA-256).
      await db.schema
        .createTable('console_nonces')
        .addColumn('nonce', 'text', (c) => c.primaryKey())
        .addColumn('address', 'text', (c) => c.notNull())
        .addColumn('issued_at_ms', 'bigint', (c) => c.notNull())
        .addColumn('expires_at_ms', 'bigint', (c) => c.notNull())
        .addColumn('used_at_ms', 'bigint')
        .execute()
      await db.schema
        .createIndex('console_nonces_expiry')
        .on('console_nonces')
        .columns(['expires_at_ms'])
        .execute()
      await db.schema
        .createTable('console_sign_ins')
        .addColumn('token_hash', 'text', (c) => c.primaryKey())
        .addColumn('address', 'text', (c) => c.notNull())
        .addColumn('created_at_ms', 'bigint', (c) => c.notNull())
        .addColumn('expires_at_ms', 'bigint', (c) => c.notNull())
        .execute()
      await db.schema
        .createIndex('console_sign_ins_expiry')
        .on('console_sign_ins')
        .columns(['expires_at_ms'])
        .execute()
      // The keyed call a confidential answer's receipt belongs to (its ledger entry), so that the
      // console lists a key's receipts; null for keyless answers and receipts stored before.
      await db.schema.alterTable('aci_receipts').addColumn('call_id', 'text').execute()
      await db.schema
        .createIndex('aci_receipts_call')
        .on('aci_receipts')
        .column('call_id')
        .execute()
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropIndex('aci_receipts_call').execute()
      await db.schema.alterTable('aci_receipts').dropColumn('call_id').execute()
      await db.schema.dropTable('console_sign_ins').execute()
      await db.schema.dropTable('console_nonces').execute()
      await db.schema.dropIndex('inference_keys_owner').execute()
      await db.schema.alterTable('inference_keys').dropColumn('owner').execute()
    },
  },
  '2026_11_27_018_marketplace_search': {
    async up(db: Kysely<unknown>) {
      // Catalog search by words (searchWords.ts): each listing's distinct words, kept beside it
      // and indexed — an FTS5 table on SQLite (kept in step by triggers), a GIN index over the
      // 'simple' text search configuration (no stemming) on PostgreSQL.
      await db.schema
        .alterTable('marketplace_listings')
        .addColumn('search_text', 'text', (c) => c.notNull().defaultTo(''))
        .execute()
      const rows = await sql<{
        id: string
        name: string
        description: string
        tags: string
        url: string
      }>`
        SELECT id, name, description, tags, url FROM marketplace_listings`.execute(db)
      for (const row of rows.rows) {
        const tags = JSON.parse(row.tags) as string[]
        await sql`UPDATE marketplace_listings SET search_text = ${searchTextOf({ ...row, tags })} WHERE id = ${row.id}`.execute(
          db,
        )
      }
      if (db.getExecutor().adapter instanceof SqliteAdapter) {
        await sql`CREATE VIRTUAL TABLE marketplace_listings_fts USING fts5(id UNINDEXED, search_text, tokenize = 'unicode61 remove_diacritics 0')`.execute(
          db,
        )
        await sql`INSERT INTO marketplace_listings_fts (id, search_text) SELECT id, search_text FROM marketplace_listings`.execute(
          db,
        )
        await sql`CREATE TRIGGER marketplace_listings_fts_insert AFTER INSERT ON marketplace_listings BEGIN
  INSERT INTO marketplace_listings_fts (id, search_text) VALUES (new.id, new.search_text);
END`.execute(db)
        await sql`CREATE TRIGGER marketplace_listings_fts_update AFTER UPDATE OF search_text ON marketplace_listings BEGIN
  DELETE FROM marketplace_listings_fts WHERE id = old.id;
  INSERT INTO marketplace_listings_fts (id, search_text) VALUES (new.id, new.search_text);
END`.execute(db)
        await sql`CREATE TRIGGER marketplace_listings_fts_delete AFTER DELETE ON marketplace_listings BEGIN
  DELETE FROM marketplace_listings_fts WHERE id = old.id;
END`.execute(db)
      } else {
        await sql`CREATE INDEX marketplace_listings_search ON marketplace_listings USING gin (to_tsvector('simple', search_text))`.execute(
          db,
        )
      }
    },
    async down(db: Kysely<unknown>) {
      if (db.getExecutor().adapter instanceof SqliteAdapter) {
        await sql`DROP TRIGGER marketplace_listings_fts_insert`.execute(db)
        await sql`DROP TRIGGER marketplace_listings_fts_update`.execute(db)
        await sql`DROP TRIGGER marketplace_listings_fts_delete`.execute(db)
        await sql`DROP TABLE marketplace_listings_fts`.execute(db)
      } else {
        await sql`DROP INDEX marketplace_listings_search`.execute(db)
      }
      await db.schema.alterTable('marketplace_listings').dropColumn('search_text').execute()
    },
  },
  '2026_11_27_019_marketplace_search_vector': {
    async up(db: Kysely<unknown>) {
      // PostgreSQL: the words as a stored tsvector, indexed. Matching the stored vector costs
      // nothing per row when the planner walks another index (the newest-first order) instead of
      // the text index, where computing to_tsvector for every row it reads did.
      if (db.getExecutor().adapter instanceof SqliteAdapter) return
      await sql`ALTER TABLE marketplace_listings ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (to_tsvector('simple', search_text)) STORED`.execute(
        db,
      )
      await sql`CREATE INDEX marketplace_listings_search_vector ON marketplace_listings USING gin (search_vector)`.execute(
        db,
      )
      await sql`DROP INDEX marketplace_listings_search`.execute(db)
    },
    async down(db: Kysely<unknown>) {
      if (db.getExecutor().adapter instanceof SqliteAdapter) return
      await sql`CREATE INDEX marketplace_listings_search ON marketplace_listings USING gin (to_tsvector('simple', search_text))`.execute(
        db,
      )
      await sql`DROP INDEX marketplace_listings_search_vector`.execute(db)
      await sql`ALTER TABLE marketplace_listings DROP COLUMN search_vector`.execute(db)
    },
  },
  '2026_11_27_020_marketplace_catalog_indexes': {
    async up(db: Kysely<unknown>) {
      // PostgreSQL only: SQLite's FTS5 table is written at once, and its tag filter stays a LIKE
      // over the tags' JSON text (same results: a tag is one [a-z0-9-] word, matched quoted).
      // SQLite, with no statistics, would also walk a price index for any filter, in price order,
      // reading the table out of order.
      if (db.getExecutor().adapter instanceof SqliteAdapter) return
      // The highest-price filter finds its matches (to count them) by price, not by reading the
      // catalog until enough pass.
      await db.schema
        .createIndex('marketplace_listings_price')
        .on('marketplace_listings')
        .columns(['state', 'price'])
        .execute()
      // The text index is written at once rather than through GIN's pending list: until a VACUUM
      // merged that list, every search read all of it (all 10 000 rows of a freshly filled catalog)
      // and the planner priced the index out. Listings change rarely; searches are what must be
      // cheap.
      await sql`ALTER INDEX marketplace_listings_search_vector SET (fastupdate = off)`.execute(db)
      await sql`SELECT gin_clean_pending_list('marketplace_listings_search_vector'::regclass)`.execute(
        db,
      )
      // Tags as a stored jsonb array with a GIN index: `tag_set @> '["weather"]'` matches one
      // whole element, as the quoted LIKE did, through an index.
      await sql`ALTER TABLE marketplace_listings ADD COLUMN tag_set jsonb GENERATED ALWAYS AS (tags::jsonb) STORED`.execute(
        db,
      )
      await sql`CREATE INDEX marketplace_listings_tag_set ON marketplace_listings USING gin (tag_set jsonb_path_ops) WITH (fastupdate = off)`.execute(
        db,
      )
    },
    async down(db: Kysely<unknown>) {
      if (db.getExecutor().adapter instanceof SqliteAdapter) return
      await db.schema.dropIndex('marketplace_listings_price').execute()
      await sql`DROP INDEX marketplace_listings_tag_set`.execute(db)
      await sql`ALTER TABLE marketplace_listings DROP COLUMN tag_set`.execute(db)
      await sql`ALTER INDEX marketplace_listings_search_vector RESET (fastupdate)`.execute(db)
    },
  },
  '2026_11_28_021_inference_reservations': {
    async up(db: Kysely<unknown>) {
      // A keyed call reserves the most it can cost, then settles at its actual tokens: the
      // reservation, and the lease after which a crashed process's reservation is given back.
      await db.schema.alterTable('inference_ledger').addColumn('reserved', 'bigint').execute()
      await db.schema.alterTable('inference_ledger').addColumn('lease_until_ms', 'bigint').execute()
      await db.schema
        .createIndex('inference_ledger_lease')
        .on('inference_ledger')
        .columns(['state', 'lease_until_ms'])
        .execute()
    },
    async down(db: Kysely<unknown>) {
      await db.schema.dropIndex('inference_ledger_lease').execute()
      await db.schema.alterTable('inference_ledger').dropColumn('lease_until_ms').execute()
      await db.schema.alterTable('inference_ledger').dropColumn('reserved').execute()
    },
  },
}

/** The in-code migration provider. */
export const migrationProvider: MigrationProvider = {
  getMigrations: async () => ({ ...migrations }),
}
