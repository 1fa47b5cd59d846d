import pg from 'pg'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { describePaymentStoreContract, randomDigest, serviceUrl, uniqueName } from './contract.js'
import { createPostgresStore, migratePostgresStore } from './postgres.js'

const url = serviceUrl('DATABASE_URL')

describe.skipIf(url === undefined)('postgres store (skipped when DATABASE_URL is not set)', () => {
  let admin: pg.Pool
  beforeAll(() => {
    admin = new pg.Pool({ connectionString: url, max: 4 })
  })
  afterAll(async () => {
    await admin.end()
  })

  describePaymentStoreContract('postgres (URL, own schema)', () => {
    const schema = uniqueName('tg_test')
    return {
      open: (options) => createPostgresStore({ ...options, connection: url!, schema }),
      cleanup: async () => {
        await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
      },
    }
  })

  describePaymentStoreContract('postgres (caller-owned pool, custom table)', () => {
    const table = uniqueName('tg_test')
    return {
      open: (options) => createPostgresStore({ ...options, connection: admin, table }),
      cleanup: async () => {
        await admin.query(`DROP TABLE IF EXISTS public."${table}"`)
      },
    }
  })

  test('the migration is idempotent and safe when run by many processes at once', async () => {
    const schema = uniqueName('tg_test')
    try {
      await Promise.all(Array.from({ length: 6 }, () => migratePostgresStore(admin, { schema })))
      await migratePostgresStore(admin, { schema })
      const store = createPostgresStore({ connection: admin, schema, migrate: false })
      const digest = randomDigest()
      expect(await store.claim(digest, { resource: 'https://r/', dialect: 'x402' })).toEqual({
        status: 'claimed',
      })
      const { rows } = await admin.query(
        `SELECT state FROM "${schema}".tollgate_payments WHERE digest = $1`,
        [digest],
      )
      expect(rows).toEqual([{ state: 'claimed' }])
      await store.close()
    } finally {
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    }
  })

  test('a dropped idle connection goes to onError, and the next query reconnects', async () => {
    const schema = uniqueName('tg_test')
    const connection = `${url}${url!.includes('?') ? '&' : '?'}application_name=${schema}`
    const errors: Error[] = []
    const store = createPostgresStore({
      connection,
      schema,
      poolSize: 1,
      onError: (error) => errors.push(error),
    })
    try {
      const digest = randomDigest()
      await store.claim(digest, { resource: 'https://r/', dialect: 'x402' })
      const killed = await admin.query(
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1',
        [schema],
      )
      expect(killed.rowCount).toBe(1)
      for (let i = 0; i < 100 && errors.length === 0; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      expect(errors.length).toBeGreaterThan(0)
      expect((await store.get(digest))?.state).toBe('claimed')
    } finally {
      await store.close()
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    }
  })

  test('refuses a schema or table name that is not a plain identifier', () => {
    expect(() => createPostgresStore({ connection: admin, schema: 'a"; DROP' })).toThrow(
      expect.objectContaining({ code: 'invalid_config' }),
    )
  })
})
