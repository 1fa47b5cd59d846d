/**
 * A channel store in Redis (see `channelStore.ts` for the rules), for seller processes on several
 * hosts. Each channel is a hash, each hold a hash plus an entry in a sorted set of lease ends; every
 * step is one Lua script, so it is atomic, and answers the channel as it left it: one round trip
 * per step. Amounts stay exact: they are added with `HINCRBY`
 * (64-bit integers) and compared as decimal strings, never as Lua numbers (doubles). The hash keeps
 * `headroom = highest − spent − held` itself, so a hold compares one field.
 *
 * @module
 */
import { createHash } from 'node:crypto'
import type { Redis } from 'ioredis'
import {
  type ChannelPhase,
  type ChannelRecord,
  type ChannelStore,
  checkPart,
  checkStoredAmount,
  type HoldPart,
  type HoldResult,
  insufficient,
  type SpendResult,
  type VoucherAcceptance,
} from './channelStore.js'

/** Compares two non-negative decimal strings exactly: -1, 0 or 1. */
const compare = `
local function cmp(a, b)
  if #a ~= #b then return #a < #b and -1 or 1 end
  if a == b then return 0 end
  return a < b and -1 or 1
end
`

/** The channel's fields a script answers with, after its status (in the order of `fields`). */
const record = `
local function record(key)
  return redis.call('HMGET', key, 'payer', 'payee', 'coin_type', 'signer', 'deposit', 'settled',
    'highest', 'highest_signature', 'spent', 'held', 'units', 'state')
end
`

/**
 * KEYS: channel, its set of accepted amounts, and with a hold: the hold, the leases. ARGV:
 * cumulative, signature, and with a hold: amount, hold id, lease end, channel id. The headroom
 * grows by `cumulative − highest` as two exact integer additions. Answers the status, the hold's
 * status ('' without one), then the channel's fields.
 */
const acceptSource = `${compare}${record}
if redis.call('EXISTS', KEYS[1]) == 0 then return {'unknown'} end
local c = redis.call('HMGET', KEYS[1], 'state', 'deposit', 'highest')
local function answer(status, hold) return {status, hold, unpack(record(KEYS[1]))} end
if c[1] ~= 'open' then return answer('not_open', '') end
if cmp(ARGV[1], c[2]) > 0 then return answer('over_deposit', '') end
if redis.call('SADD', KEYS[2], ARGV[1]) == 0 then return answer('same', '') end
if cmp(ARGV[1], c[3]) > 0 then
  redis.call('HSET', KEYS[1], 'highest', ARGV[1], 'highest_signature', ARGV[2])
  redis.call('HINCRBY', KEYS[1], 'headroom', ARGV[1])
  if c[3] ~= '0' then redis.call('HINCRBY', KEYS[1], 'headroom', '-' .. c[3]) end
end
if ARGV[3] == nil then return answer('accepted', '') end
if cmp(redis.call('HGET', KEYS[1], 'headroom'), ARGV[3]) < 0 then
  return answer('accepted', 'insufficient')
end
redis.call('HINCRBY', KEYS[1], 'headroom', '-' .. ARGV[3])
redis.call('HINCRBY', KEYS[1], 'held', ARGV[3])
redis.call('HSET', KEYS[3], 'channel', ARGV[6], 'amount', ARGV[3])
redis.call('ZADD', KEYS[4], ARGV[5], ARGV[4])
return answer('accepted', 'held')
`

/** KEYS[1] channel. ARGV: amount. Answers the status, then the channel's fields. */
const spendSource = `${compare}${record}
if redis.call('EXISTS', KEYS[1]) == 0 then return {'unknown'} end
local c = redis.call('HMGET', KEYS[1], 'state', 'headroom')
if c[1] ~= 'open' then return {'not_open', unpack(record(KEYS[1]))} end
if cmp(c[2], ARGV[1]) < 0 then return {'insufficient', unpack(record(KEYS[1]))} end
redis.call('HINCRBY', KEYS[1], 'headroom', '-' .. ARGV[1])
redis.call('HINCRBY', KEYS[1], 'spent', ARGV[1])
redis.call('HINCRBY', KEYS[1], 'units', 1)
return {'spent', unpack(record(KEYS[1]))}
`

/**
 * KEYS: channel, hold, leases. ARGV: amount, hold id, lease end, channel id. Answers the status,
 * then the channel's fields.
 */
const holdSource = `${compare}${record}
if redis.call('EXISTS', KEYS[1]) == 0 then return {'unknown'} end
local c = redis.call('HMGET', KEYS[1], 'state', 'headroom')
if c[1] ~= 'open' then return {'not_open', unpack(record(KEYS[1]))} end
if cmp(c[2], ARGV[1]) < 0 then return {'insufficient', unpack(record(KEYS[1]))} end
redis.call('HINCRBY', KEYS[1], 'headroom', '-' .. ARGV[1])
redis.call('HINCRBY', KEYS[1], 'held', ARGV[1])
redis.call('HSET', KEYS[2], 'channel', ARGV[4], 'amount', ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[2])
return {'held', unpack(record(KEYS[1]))}
`

/**
 * KEYS: hold, leases. ARGV: hold id, spend (1/0), channel key prefix, and for a part of the hold:
 * its amount and units (the rest goes back to the headroom), when the answer is 1, the channel's id
 * and then its fields. Nothing changes (0) when the hold is gone or holds less than the part.
 */
const dropSource = `${compare}${record}
local h = redis.call('HMGET', KEYS[1], 'channel', 'amount')
if not h[1] then return 0 end
if ARGV[4] and cmp(h[2], ARGV[4]) < 0 then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
local channel = ARGV[3] .. h[1]
redis.call('HINCRBY', channel, 'held', '-' .. h[2])
if ARGV[2] == '1' then
  local spend = ARGV[4] or h[2]
  redis.call('HINCRBY', channel, 'spent', spend)
  redis.call('HINCRBY', channel, 'units', ARGV[5] or 1)
  if spend ~= h[2] then
    redis.call('HINCRBY', channel, 'headroom', h[2])
    if spend ~= '0' then redis.call('HINCRBY', channel, 'headroom', '-' .. spend) end
  end
else
  redis.call('HINCRBY', channel, 'headroom', h[2])
end
if ARGV[4] then return {1, h[1], unpack(record(channel))} end
return 1
`

/** KEYS: leases. ARGV: now, hold key prefix, channel key prefix. */
const lapseSource = `
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1], 'LIMIT', 0, 500)
for _, id in ipairs(ids) do
  local key = ARGV[2] .. id
  local h = redis.call('HMGET', key, 'channel', 'amount')
  redis.call('ZREM', KEYS[1], id)
  if h[1] then
    redis.call('DEL', key)
    local channel = ARGV[3] .. h[1]
    redis.call('HINCRBY', channel, 'held', '-' .. h[2])
    redis.call('HINCRBY', channel, 'headroom', h[2])
  end
end
return #ids
`

/**
 * KEYS[1] channel. ARGV: deposit or '', settled or '', state or ''. Answers the channel's fields
 * after the change (none for a channel not tracked).
 */
const observeSource = `${compare}${record}
if redis.call('EXISTS', KEYS[1]) == 0 then return {} end
local c = redis.call('HMGET', KEYS[1], 'deposit', 'settled', 'state')
if ARGV[1] ~= '' and cmp(ARGV[1], c[1]) > 0 then redis.call('HSET', KEYS[1], 'deposit', ARGV[1]) end
if ARGV[2] ~= '' and cmp(ARGV[2], c[2]) > 0 then redis.call('HSET', KEYS[1], 'settled', ARGV[2]) end
local order = { open = 0, closing = 1, closed = 2 }
if ARGV[3] ~= '' and order[ARGV[3]] > order[c[3]] then redis.call('HSET', KEYS[1], 'state', ARGV[3]) end
return record(KEYS[1])
`

/**
 * KEYS: channel, the set of every channel id. ARGV: the id, then the fields (the channel created
 * only when absent). Answers the channel's fields as they are after it.
 */
const trackSource = `${record}
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], unpack(ARGV, 2))
  redis.call('SADD', KEYS[2], ARGV[1])
end
return record(KEYS[1])
`

type Script = { source: string; sha: string }
const script = (source: string): Script => ({
  source,
  sha: createHash('sha1').update(source).digest('hex'),
})
const scripts = {
  track: script(trackSource),
  accept: script(acceptSource),
  hold: script(holdSource),
  spend: script(spendSource),
  drop: script(dropSource),
  lapse: script(lapseSource),
  observe: script(observeSource),
}

/** Options of {@link createRedisChannelStore}. */
export type RedisChannelStoreOptions = {
  /** An ioredis client (left open by `close()`). */
  client: Redis
  /** Prefix of every key. Default `tollgate:`. */
  keyPrefix?: string | undefined
}

const fields = [
  'payer',
  'payee',
  'coin_type',
  'signer',
  'deposit',
  'settled',
  'highest',
  'highest_signature',
  'spent',
  'held',
  'units',
  'state',
] as const

/** A channel store in Redis; see the module's description. */
export function createRedisChannelStore(options: RedisChannelStoreOptions): ChannelStore {
  const redis = options.client
  const prefix = `${options.keyPrefix ?? 'tollgate:'}`
  const channelPrefix = `${prefix}channel:`
  const holdPrefix = `${prefix}hold:`
  const leases = `${prefix}hold-leases`

  async function run(s: Script, keys: string[], args: string[]): Promise<unknown> {
    try {
      return await redis.evalsha(s.sha, keys.length, ...keys, ...args)
    } catch (error) {
      if (!String((error as Error)?.message).includes('NOSCRIPT')) throw error
      return redis.eval(s.source, keys.length, ...keys, ...args)
    }
  }

  async function get(channelId: string): Promise<ChannelRecord | undefined> {
    return recordOf(channelId, await redis.hmget(`${channelPrefix}${channelId}`, ...fields))
  }

  /** The channel from its fields (in the order of `fields`), or undefined when it has none. */
  function recordOf(
    channelId: string,
    values: readonly (string | null | undefined)[],
  ): ChannelRecord | undefined {
    if (values[0] === null || values[0] === undefined) return undefined
    const [
      payer,
      payee,
      coinType,
      signer,
      deposit,
      settled,
      highest,
      sig,
      spent,
      held,
      units,
      state,
    ] = values.map((v) => v ?? '')
    return {
      channelId,
      payer: payer as string,
      payee: payee as string,
      coinType: coinType as string,
      signer: signer as string,
      deposit: BigInt(deposit as string),
      settled: BigInt(settled as string),
      highest: BigInt(highest as string),
      highestSignature: sig as string,
      spent: BigInt(spent as string),
      held: BigInt(held as string),
      units: BigInt(units as string),
      state: state as ChannelPhase,
    }
  }

  /**
   * Gives a hold back, with `spend` of it (the whole of it: `true`) moved into `spent`: the script's
   * answer (see `dropSource`).
   */
  const drop = (holdId: string, spend: HoldPart | boolean) =>
    run(
      scripts.drop,
      [`${holdPrefix}${holdId}`, leases],
      [
        holdId,
        spend === false ? '0' : '1',
        channelPrefix,
        ...(typeof spend === 'boolean' ? [] : [spend.amount.toString(), spend.units.toString()]),
      ],
    )

  return {
    async track(opened) {
      checkStoredAmount(opened.deposit, 'deposit')
      checkStoredAmount(opened.settled, 'settled amount')
      const values = (await run(
        scripts.track,
        [`${channelPrefix}${opened.channelId}`, `${prefix}channels`],
        [
          opened.channelId,
          ...['payer', opened.payer, 'payee', opened.payee, 'coin_type', opened.coinType],
          ...['signer', opened.signer, 'deposit', opened.deposit.toString()],
          ...['settled', opened.settled.toString(), 'highest', '0', 'highest_signature', ''],
          ...['spent', '0', 'held', '0', 'units', '0', 'headroom', '0', 'state', 'open'],
        ],
      )) as string[]
      return recordOf(opened.channelId, values) as ChannelRecord
    },
    get,
    async list(state) {
      const ids = await redis.smembers(`${prefix}channels`)
      const found = await Promise.all(ids.map(get))
      return found.filter((c): c is ChannelRecord => c?.state === state)
    },
    async acceptVoucher(channelId, cumulative, signature, hold): Promise<VoucherAcceptance> {
      checkStoredAmount(cumulative, 'voucher amount')
      if (hold !== undefined) checkStoredAmount(hold.amount, 'price')
      const key = `${channelPrefix}${channelId}`
      const [status, held, ...values] = (await run(
        scripts.accept,
        [
          key,
          `${key}:vouchers`,
          ...(hold === undefined ? [] : [`${holdPrefix}${hold.holdId}`, leases]),
        ],
        [
          cumulative.toString(),
          signature,
          ...(hold === undefined
            ? []
            : [hold.amount.toString(), hold.holdId, String(hold.leaseUntil), channelId]),
        ],
      )) as string[]
      const channel = recordOf(channelId, values)
      if (status === 'unknown' || channel === undefined) return { status: 'unknown' }
      if (status !== 'accepted') {
        return { status: status as 'same' | 'over_deposit' | 'not_open', channel }
      }
      if (hold === undefined) return { status: 'accepted', channel }
      return {
        status: 'accepted',
        channel,
        hold:
          held === 'held'
            ? { status: 'held', holdId: hold.holdId, channel }
            : insufficient(channel, hold.amount),
      }
    },
    async hold(channelId, amount, holdId, leaseUntil): Promise<HoldResult> {
      checkStoredAmount(amount, 'price')
      const [status, ...values] = (await run(
        scripts.hold,
        [`${channelPrefix}${channelId}`, `${holdPrefix}${holdId}`, leases],
        [amount.toString(), holdId, String(leaseUntil), channelId],
      )) as string[]
      const channel = recordOf(channelId, values)
      if (status === 'unknown' || channel === undefined) return { status: 'unknown' }
      if (status === 'held') return { status: 'held', holdId, channel }
      if (status === 'not_open') return { status: 'not_open', channel }
      return insufficient(channel, amount)
    },
    async spend(channelId, amount): Promise<SpendResult> {
      checkStoredAmount(amount, 'price')
      const [status, ...values] = (await run(
        scripts.spend,
        [`${channelPrefix}${channelId}`],
        [amount.toString()],
      )) as string[]
      const channel = recordOf(channelId, values)
      if (status === 'unknown' || channel === undefined) return { status: 'unknown' }
      if (status === 'spent') return { status: 'spent', channel }
      if (status === 'not_open') return { status: 'not_open', channel }
      return insufficient(channel, amount)
    },
    commit: async (holdId) => Number(await drop(holdId, true)) === 1,
    async settleHold(holdId, part) {
      checkPart(part)
      const answer = await drop(holdId, part)
      if (!Array.isArray(answer)) return undefined
      const [, channelId, ...values] = answer as string[]
      return recordOf(channelId as string, values)
    },
    release: async (holdId) => Number(await drop(holdId, false)) === 1,
    async releaseLapsed(now) {
      let total = 0
      for (;;) {
        const count = Number(
          await run(scripts.lapse, [leases], [String(now), holdPrefix, channelPrefix]),
        )
        total += count
        if (count < 500) return total
      }
    },
    async observe(channelId, facts) {
      if (facts.deposit !== undefined) checkStoredAmount(facts.deposit, 'deposit')
      if (facts.settled !== undefined) checkStoredAmount(facts.settled, 'settled amount')
      const values = (await run(
        scripts.observe,
        [`${channelPrefix}${channelId}`],
        [facts.deposit?.toString() ?? '', facts.settled?.toString() ?? '', facts.state ?? ''],
      )) as string[]
      return recordOf(channelId, values)
    },
    async close() {},
  }
}
