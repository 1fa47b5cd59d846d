/**
 * The Redis payment store (ioredis): for several gateway processes on several hosts. Each record is a
 * hash; the claim and every transition are one Lua script each, so they are atomic on the server
 * (the claim inserts only when the key does not exist, like `SET NX`, and also hands out expired
 * leases). Sorted sets index refunds due, pending payments, settled payments by the end of their
 * serve lease and claimed payments by the end of their claim lease (both for the lease sweeper), and
 * finished records (for pruning); a hash keeps the counts
 * per state.
 *
 * Durability is Redis's: enable AOF (`appendonly yes`, `appendfsync everysec` or `always`) when
 * payment records must survive a Redis restart. For Redis Cluster, use a key prefix with a hash tag
 * (`{tollgate}:`) so that one record and the indexes live in the same slot.
 *
 * `ioredis` is an optional peer dependency: install it to use this module.
 *
 * @module
 */
import { createHash } from 'node:crypto'
import { Redis } from 'ioredis'
import {
  type ApplyResult,
  type ClaimOutcome,
  createStore,
  type StoreEngine,
} from './internal/core.js'
import { columns, type Row, rowFrom, rowFromPairs } from './internal/row.js'
import type { PaymentState, PaymentStore, StoreOptions } from './types.js'

/** Options of {@link createRedisStore}. */
export type RedisStoreOptions = StoreOptions & {
  /** A `redis://` URL, or an ioredis client (left open by `close()`). */
  connection: string | Redis
  /** Prefix of every key. Default: `tollgate:`. */
  keyPrefix?: string | undefined
  /**
   * Called with connection errors of a client the store opened (ioredis reconnects by itself).
   * Default: ignored (a command that cannot run still rejects).
   */
  onError?: ((error: Error) => void) | undefined
}

// KEYS: record, counts, settled, claimed. ARGV: now, claimUntil, serveUntil, resource, then the new
// record's field/value pairs.
const claimScript = `
local state = redis.call('HGET', KEYS[1], 'state')
if not state then
  for i = 5, #ARGV, 2 do
    if ARGV[i + 1] ~= '' then redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
  end
  redis.call('HINCRBY', KEYS[2], 'claimed', 1)
  redis.call('ZADD', KEYS[4], ARGV[2], redis.call('HGET', KEYS[1], 'digest'))
  return {'claimed'}
end
local lease = tonumber(redis.call('HGET', KEYS[1], 'lease_until') or '0')
local now = tonumber(ARGV[1])
if state == 'claimed' and lease <= now then
  local fields = {resource = true, dialect = true, claimed_at = true, updated_at = true}
  for i = 5, #ARGV, 2 do
    if fields[ARGV[i]] then redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
  end
  redis.call('HSET', KEYS[1], 'lease_until', ARGV[2])
  redis.call('ZADD', KEYS[4], ARGV[2], redis.call('HGET', KEYS[1], 'digest'))
  return {'claimed'}
end
if state == 'settled' and lease <= now and redis.call('HGET', KEYS[1], 'resource') == ARGV[4] then
  redis.call('HSET', KEYS[1], 'lease_until', ARGV[3])
  redis.call('ZADD', KEYS[3], ARGV[3], redis.call('HGET', KEYS[1], 'digest'))
  return {'settled_unserved', redis.call('HGETALL', KEYS[1])}
end
return {'taken', redis.call('HGETALL', KEYS[1])}
`

// KEYS: record, counts, pending, refund_due, finished, settled (by lease end), claimed (by lease end).
// ARGV: digest, allowed states (space separated), new state ('' deletes), guard field, guard values
// (space separated), then field/value pairs ('' value deletes the field).
const applyScript = `
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return {'missing'} end
local allowed = false
for s in string.gmatch(ARGV[2], '%S+') do if s == state then allowed = true end end
if not allowed then return {'conflict', state, '0'} end
if ARGV[4] ~= '' then
  local current = redis.call('HGET', KEYS[1], ARGV[4])
  if current then
    local ok = false
    for v in string.gmatch(ARGV[5], '%S+') do if v == current then ok = true end end
    if not ok then return {'conflict', state, '1'} end
  end
end
redis.call('HINCRBY', KEYS[2], state, -1)
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
redis.call('ZREM', KEYS[5], ARGV[1])
redis.call('ZREM', KEYS[6], ARGV[1])
redis.call('ZREM', KEYS[7], ARGV[1])
local to = ARGV[3]
if to == '' then
  redis.call('DEL', KEYS[1])
  return {'ok'}
end
for i = 6, #ARGV, 2 do
  if ARGV[i + 1] == '' then redis.call('HDEL', KEYS[1], ARGV[i])
  else redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
end
redis.call('HSET', KEYS[1], 'state', to)
redis.call('HINCRBY', KEYS[2], to, 1)
if to == 'pending' then
  redis.call('ZADD', KEYS[3], redis.call('HGET', KEYS[1], 'updated_at'), ARGV[1])
elseif to == 'refund_due' then
  redis.call('ZADD', KEYS[4], redis.call('HGET', KEYS[1], 'refund_owed_at'), ARGV[1])
elseif to == 'settled' then
  redis.call('ZADD', KEYS[6], tonumber(redis.call('HGET', KEYS[1], 'lease_until') or '0'), ARGV[1])
elseif to == 'claimed' then
  redis.call('ZADD', KEYS[7], tonumber(redis.call('HGET', KEYS[1], 'lease_until') or '0'), ARGV[1])
elseif to == 'served' or to == 'refunded' or to == 'rejected' then
  redis.call('ZADD', KEYS[5], redis.call('HGET', KEYS[1], 'updated_at'), ARGV[1])
end
return {'ok', redis.call('HGETALL', KEYS[1])}
`

// KEYS: counts, finished, then one record key per digest. ARGV: cutoff, then the digests.
const pruneScript = `
local deleted = 0
for i = 2, #ARGV do
  local key = KEYS[i + 1]
  local state = redis.call('HGET', key, 'state')
  local updated = tonumber(redis.call('HGET', key, 'updated_at') or '0')
  if not state then
    redis.call('ZREM', KEYS[2], ARGV[i])
  elseif (state == 'served' or state == 'refunded' or state == 'rejected') and updated < tonumber(ARGV[1]) then
    redis.call('DEL', key)
    redis.call('ZREM', KEYS[2], ARGV[i])
    redis.call('HINCRBY', KEYS[1], state, -1)
    deleted = deleted + 1
  end
end
return deleted
`

type Script = { source: string; sha: string }

function script(source: string): Script {
  return { source, sha: createHash('sha1').update(source).digest('hex') }
}

const scripts = {
  claim: script(claimScript),
  apply: script(applyScript),
  prune: script(pruneScript),
}

const pruneBatch = 500

/**
 * Creates a payment store in Redis.
 *
 * @param options - the connection (URL or client), the key prefix, and the shared
 *   {@link StoreOptions}.
 * @example
 * ```ts
 * import { createRedisStore } from 'tollgate/stores/redis'
 * const store = createRedisStore({ connection: process.env.REDIS_URL! })
 * ```
 */
export function createRedisStore(options: RedisStoreOptions): PaymentStore {
  const owned = typeof options.connection === 'string'
  const redis =
    typeof options.connection === 'string'
      ? new Redis(options.connection, { lazyConnect: false, maxRetriesPerRequest: 3 })
      : options.connection
  if (owned) redis.on('error', (error: Error) => options.onError?.(error))
  const prefix = options.keyPrefix ?? 'tollgate:'
  const keys = {
    record: (digest: string) => `${prefix}payment:${digest}`,
    counts: `${prefix}counts`,
    pending: `${prefix}pending`,
    refundDue: `${prefix}refund_due`,
    finished: `${prefix}finished`,
    settled: `${prefix}settled`,
    claimed: `${prefix}claimed`,
  }

  async function evaluate(
    s: Script,
    keyList: string[],
    args: (string | number)[],
  ): Promise<unknown> {
    try {
      return await redis.evalsha(s.sha, keyList.length, ...keyList, ...args)
    } catch (error) {
      if (!String((error as Error)?.message).includes('NOSCRIPT')) throw error
      return redis.eval(s.source, keyList.length, ...keyList, ...args)
    }
  }

  function pairs(values: Partial<Row>): string[] {
    const list: string[] = []
    for (const [field, value] of Object.entries(values)) {
      list.push(field, value === null || value === undefined ? '' : String(value))
    }
    return list
  }

  async function rows(digests: string[]): Promise<Row[]> {
    if (digests.length === 0) return []
    const pipeline = redis.pipeline()
    for (const digest of digests) pipeline.hgetall(keys.record(digest))
    const results = (await pipeline.exec()) ?? []
    const found: Row[] = []
    for (const [error, value] of results) {
      if (error) throw error
      const raw = value as Record<string, string>
      if (raw.state !== undefined) found.push(rowFrom(raw))
    }
    return found
  }

  const engine: StoreEngine = {
    async claim(row, times): Promise<ClaimOutcome> {
      const fields: Partial<Row> = {}
      for (const column of columns) fields[column] = row[column] as never
      const reply = (await evaluate(
        scripts.claim,
        [keys.record(row.digest), keys.counts, keys.settled, keys.claimed],
        [times.now, times.claimUntil, times.serveUntil, row.resource, ...pairs(fields)],
      )) as [string, unknown[]?]
      if (reply[0] === 'claimed') return { status: 'claimed' }
      const current = rowFromPairs(reply[1] ?? [])
      return reply[0] === 'settled_unserved'
        ? { status: 'settled_unserved', row: current }
        : { status: 'taken', row: current }
    },

    async apply(digest, transition): Promise<ApplyResult> {
      const reply = (await evaluate(
        scripts.apply,
        [
          keys.record(digest),
          keys.counts,
          keys.pending,
          keys.refundDue,
          keys.finished,
          keys.settled,
          keys.claimed,
        ],
        [
          digest,
          transition.from.join(' '),
          transition.to ?? '',
          transition.guard?.column ?? '',
          transition.guard?.absentOr.join(' ') ?? '',
          ...pairs(transition.set),
        ],
      )) as [string, ...unknown[]]
      if (reply[0] === 'missing') return { status: 'missing' }
      if (reply[0] === 'conflict') {
        return { status: 'conflict', state: reply[1] as PaymentState, guard: reply[2] === '1' }
      }
      const after = reply[1] as unknown[] | undefined
      return { status: 'ok', row: after === undefined ? undefined : rowFromPairs(after) }
    },

    async get(digest) {
      const [row] = await rows([digest])
      return row
    },

    async list(state, limit) {
      const index = state === 'refund_due' ? keys.refundDue : keys.pending
      const digests = await redis.zrange(index, '0', String(limit - 1))
      return (await rows(digests)).filter((row) => row.state === state)
    },

    async listLapsed(state, endedBy, limit) {
      const digests = await redis.zrangebyscore(
        state === 'claimed' ? keys.claimed : keys.settled,
        '-inf',
        String(endedBy),
        'LIMIT',
        0,
        limit,
      )
      return (await rows(digests)).filter(
        (row) => row.state === state && (row.lease_until === null || row.lease_until <= endedBy),
      )
    },

    async counts() {
      const raw = await redis.hgetall(keys.counts)
      const counts: Partial<Record<PaymentState, number>> = {}
      for (const [state, n] of Object.entries(raw)) counts[state as PaymentState] = Number(n)
      return counts
    },

    async prune(cutoff) {
      let deleted = 0
      for (;;) {
        const digests = await redis.zrangebyscore(
          keys.finished,
          '-inf',
          `(${cutoff}`,
          'LIMIT',
          0,
          pruneBatch,
        )
        if (digests.length === 0) return deleted
        const batch = Number(
          await evaluate(
            scripts.prune,
            [keys.counts, keys.finished, ...digests.map(keys.record)],
            [cutoff, ...digests],
          ),
        )
        deleted += batch
        if (digests.length < pruneBatch || batch === 0) return deleted
      }
    },

    async close() {
      if (owned) await redis.quit()
    },
  }

  return createStore(engine, options)
}

/** The session channel books on Redis (see `Session.ChannelStore`), for sellers on several hosts. */
export {
  createRedisChannelStore,
  type RedisChannelStoreOptions,
} from '../session/redisChannelStore.js'
