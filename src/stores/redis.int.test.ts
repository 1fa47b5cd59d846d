import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { describePaymentStoreContract, randomDigest, serviceUrl, uniqueName } from './contract.js'
import { createRedisStore } from './redis.js'

const url = serviceUrl('REDIS_URL')

/** Deletes every key under `prefix`. */
async function deletePrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0'
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500)
    cursor = next
    if (keys.length > 0) await redis.del(...keys)
  } while (cursor !== '0')
}

describe.skipIf(url === undefined)('redis store (skipped when REDIS_URL is not set)', () => {
  let admin: Redis
  beforeAll(() => {
    admin = new Redis(url!)
  })
  afterAll(async () => {
    await admin.quit()
  })

  describePaymentStoreContract('redis (URL)', () => {
    const keyPrefix = `${uniqueName('tg_test')}:`
    return {
      open: (options) => createRedisStore({ ...options, connection: url!, keyPrefix }),
      cleanup: () => deletePrefix(admin, keyPrefix),
    }
  })

  describePaymentStoreContract('redis (caller-owned client)', () => {
    const keyPrefix = `${uniqueName('tg_test')}:`
    return {
      open: (options) => createRedisStore({ ...options, connection: admin, keyPrefix }),
      cleanup: () => deletePrefix(admin, keyPrefix),
    }
  })

  test('keys live under the prefix, and the scripts are reloaded after SCRIPT FLUSH', async () => {
    const keyPrefix = `${uniqueName('tg_test')}:`
    const store = createRedisStore({ connection: admin, keyPrefix })
    try {
      const digest = randomDigest()
      await store.claim(digest, { resource: 'https://r/', dialect: 'mpp' })
      expect(await admin.hget(`${keyPrefix}payment:${digest}`, 'state')).toBe('claimed')
      await admin.script('FLUSH')
      const pending = await store.markPending(digest)
      expect(pending.status === 'applied' && pending.record.state).toBe('pending')
      expect(await admin.zscore(`${keyPrefix}pending`, digest)).not.toBeNull()
    } finally {
      await store.close()
      expect(admin.status).toBe('ready')
      await deletePrefix(admin, keyPrefix)
    }
  })
})
