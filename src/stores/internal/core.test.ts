import { describe, expect, it } from 'vitest'
import { createStore, type StoreEngine, type Transition } from './core.js'

/** An engine that records every transition asked of it and knows no payment. */
function recordingEngine() {
  const asked: Transition[] = []
  const engine: StoreEngine = {
    claim: () => Promise.reject(new Error('not used')),
    async apply(_digest, transition) {
      asked.push(transition)
      return { status: 'missing' }
    },
    get: async () => undefined,
    list: async () => [],
    listLapsed: async () => [],
    counts: async () => ({}),
    prune: async () => 0,
    close: async () => {},
  }
  return { engine, asked }
}

const digest = '8pqpTeaapRRSd8HJv4qJTssytC3xZP6MF3b4adnszKgL'

describe('store transitions', () => {
  it('ask for a durable write exactly where money leaves the seller next', async () => {
    const { engine, asked } = recordingEngine()
    const store = createStore(engine)
    const attempts = [
      store.served(digest),
      store.oweRefund(digest, 'the handler failed'),
      store.recordRefundTransaction(digest, { refundDigest: digest, txBytes: 'AAAA' }),
      store.oweRefundLapsed(digest, new Date(0), 'the serve lease lapsed'),
      store.release(digest),
    ]
    for (const attempt of attempts) {
      expect(await attempt).toEqual({ status: 'conflict', state: undefined, reason: 'state' })
    }
    expect(asked.map((t) => [t.operation, t.durable === true])).toEqual([
      [expect.stringMatching(/serve/), false],
      ['owe a refund', true],
      ['record the refund transaction', true],
      ['owe a refund for a lapsed lease', true],
      [expect.any(String), false],
    ])
  })
})

/** An engine whose every step fails with `error`, as a broken backend does. */
function failingEngine(error: unknown): StoreEngine {
  const fail = () => Promise.reject(error)
  return {
    claim: fail,
    apply: fail,
    get: fail,
    list: fail,
    listLapsed: fail,
    counts: fail,
    prune: fail,
    close: fail,
  }
}

/** A Node socket error, as `net.connect` makes it. */
function socketError(code: string): Error {
  return Object.assign(new Error(`connect ${code} 127.0.0.1:5432`), { code, errno: -111 })
}

describe('a failing backend', () => {
  const meta = { resource: 'https://api.example/v1', dialect: 'x402' } as const
  const unavailable: [string, unknown][] = [
    ['a refused connection', socketError('ECONNREFUSED')],
    ['a reset connection', socketError('ECONNRESET')],
    [
      'every address refused (AggregateError)',
      Object.assign(new AggregateError([socketError('ECONNREFUSED')], ''), {
        code: 'ECONNREFUSED',
      }),
    ],
    ['a busy SQLite file', Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' })],
    [
      'PostgreSQL shutting down',
      Object.assign(new Error('terminating connection'), { code: '57P01' }),
    ],
    [
      'PostgreSQL with too many connections',
      Object.assign(new Error('sorry, too many clients'), { code: '53300' }),
    ],
    ['a dropped PostgreSQL connection', new Error('Connection terminated unexpectedly')],
    [
      'ioredis out of retries',
      Object.assign(new Error('Reached the max retries per request limit'), {
        name: 'MaxRetriesPerRequestError',
      }),
    ],
    ['a closed ioredis connection', new Error('Connection is closed.')],
  ]
  for (const [what, error] of unavailable) {
    it(`answers store_error 503 for ${what}, with the driver's error as cause`, async () => {
      const store = createStore(failingEngine(error))
      const failure = await store.claim(digest, meta).then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(failure).toMatchObject({
        name: 'PaymentError',
        code: 'store_error',
        status: 503,
        details: { operation: 'claim' },
      })
      expect((failure as Error).cause).toBe(error)
    })
  }

  const broken: [string, unknown][] = [
    [
      'a missing table',
      Object.assign(new Error('no such table: payments'), { code: 'SQLITE_ERROR' }),
    ],
    [
      'a missing PostgreSQL table',
      Object.assign(new Error('relation "x" does not exist'), { code: '42P01' }),
    ],
    ['a programming error', new TypeError("Cannot read properties of undefined (reading 'x')")],
    ['a thrown string', 'boom'],
  ]
  for (const [what, error] of broken) {
    it(`answers store_error 500 for ${what}`, async () => {
      const store = createStore(failingEngine(error))
      await expect(store.settled(digest, settlement)).rejects.toMatchObject({
        code: 'store_error',
        status: 500,
        details: { operation: 'mark settled' },
      })
      await expect(store.served(digest)).rejects.toMatchObject({ code: 'store_error', status: 500 })
      await expect(store.get(digest)).rejects.toMatchObject({ code: 'store_error', status: 500 })
    })
  }

  it('never puts the driver message (hosts, users) into the error message', async () => {
    const error = socketError('ECONNREFUSED')
    const store = createStore(failingEngine(error))
    const failure = (await store.counts().catch((e: unknown) => e)) as Error
    expect(failure.message).not.toContain('127.0.0.1')
  })
})

const settlement = {
  payer: `0x${'ab'.repeat(32)}`,
  amount: 1n,
  resource: 'https://api.example/v1',
  dialect: 'x402',
  network: 'sui:mainnet',
  asset: '0x2::usdc::USDC',
  settledAt: new Date(0),
} as const
