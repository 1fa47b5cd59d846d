import type Database from 'better-sqlite3'
import { expectTypeOf, test } from 'vitest'
import type { SqliteDatabase, SqliteStoreOptions } from './sqlite.js'

test('an open better-sqlite3 Database is accepted where the store takes one', () => {
  expectTypeOf<Database.Database>().toExtend<SqliteDatabase>()
  expectTypeOf<{ database: Database.Database }>().toExtend<SqliteStoreOptions>()
})
