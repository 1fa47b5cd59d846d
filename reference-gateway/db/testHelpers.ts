/**
 * Test-only: the relational store's two engines for a test file — a SQLite file in a folder of its
 * own, and PostgreSQL in a schema of its own (skipped without `DATABASE_URL`; with
 * `CI_REQUIRE_SERVICES=1` a missing `DATABASE_URL` fails instead, through `serviceUrl`).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { serviceUrl, uniqueName } from '../../src/stores/contract.js'
import { type GatewayDatabase, openDatabase } from './database.js'

/** One engine of the relational store, as a test opens and cleans it. */
export type TestEngine = {
  name: 'SQLite' | 'PostgreSQL'
  /** True when the engine is not available here (PostgreSQL without `DATABASE_URL`). */
  skip: boolean
  /** Opens the store (again: every call opens one more connection to the same data). */
  open(): Promise<GatewayDatabase>
  /** Removes the data: the SQLite folder, the PostgreSQL schema. */
  cleanup(): Promise<void>
}

/** Both engines, their data named after `label` (a folder, a schema). */
export function testEngines(label: string): TestEngine[] {
  const databaseUrl = serviceUrl('DATABASE_URL')
  const folder = mkdtempSync(join(tmpdir(), `tollgate-${label}-`))
  const schema = uniqueName(label).toLowerCase()
  return [
    {
      name: 'SQLite',
      skip: false,
      open: () => openDatabase({ kind: 'sqlite', file: join(folder, 'gateway.db') }),
      cleanup: async () => rmSync(folder, { recursive: true, force: true }),
    },
    {
      name: 'PostgreSQL',
      skip: databaseUrl === undefined,
      open: () => openDatabase({ kind: 'postgres', url: databaseUrl as string, schema }),
      async cleanup() {
        const client = new pg.Client({ connectionString: databaseUrl })
        await client.connect()
        await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
        await client.end()
      },
    },
  ]
}
