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
      store.release(digest),
    ]
    for (const attempt of attempts) await expect(attempt).rejects.toThrow(/no payment is recorded/)
    expect(asked.map((t) => [t.operation, t.durable === true])).toEqual([
      [expect.stringMatching(/serve/), false],
      ['owe a refund', true],
      ['record the refund transaction', true],
      [expect.any(String), false],
    ])
  })
})
