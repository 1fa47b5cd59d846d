import type pg from 'pg'
import { describe, expect, it } from 'vitest'
import { createChannelBatches } from './channelBatches.js'

/**
 * A pool that answers each statement with its text as the one row, after a turn of the event loop
 * (so that writes can queue behind it), and records what ran where: alone (`pool`) or on a lent
 * connection (`client N`).
 */
function fakePool(failOn?: string, pipeline = false) {
  const log: string[] = []
  let lent = 0
  /**
   * Answers as PostgreSQL would: in a transaction, a statement after a failed one fails too, and
   * the COMMIT that ends it rolls it back (answered `ROLLBACK`).
   */
  const answer = async (where: string, text: string, state = { open: false, aborted: false }) => {
    await new Promise((resolve) => setTimeout(resolve, 1))
    if (text === 'BEGIN') state.open = true
    if (text === 'ROLLBACK') {
      log.push(`${where}: ROLLBACK`)
      state.open = state.aborted = false
      return { rows: [], command: 'ROLLBACK' }
    }
    if (text === 'COMMIT' && state.aborted) {
      log.push(`${where}: COMMIT (rolled back)`)
      state.open = state.aborted = false
      return { rows: [], command: 'ROLLBACK' }
    }
    log.push(`${where}: ${text}`)
    if (state.aborted) throw new Error('current transaction is aborted')
    if (text === failOn) {
      if (state.open) state.aborted = true
      throw new Error(`${text} failed`)
    }
    if (text === 'COMMIT') state.open = false
    return { rows: [{ text }], command: text.split(' ')[0] }
  }
  const pool = {
    query: (query: string | { text: string }) =>
      answer('pool', typeof query === 'string' ? query : query.text),
    async connect() {
      const where = `client ${++lent}`
      const state = { open: false, aborted: false }
      return {
        pipeline,
        query: (query: string | { text: string }) =>
          answer(where, typeof query === 'string' ? query : query.text, state),
        release: (error?: unknown) => log.push(`${where}: ${error ? 'destroyed' : 'released'}`),
      }
    },
  } as unknown as Pick<pg.Pool, 'query' | 'connect'>
  return { pool, log }
}

const statement = (text: string) => ({ text, values: [] })

describe('group commit per channel', () => {
  it('runs a write alone at once, and the ones that came meanwhile together, in order, in one transaction', async () => {
    const { pool, log } = fakePool()
    const write = createChannelBatches(pool)
    const answers = await Promise.all(['a', 'b', 'c', 'd'].map((t) => write('ch', statement(t))))
    expect(answers).toEqual(['a', 'b', 'c', 'd'].map((text) => [{ text }]))
    expect(log).toEqual([
      'pool: a',
      'client 1: BEGIN',
      'client 1: b',
      'client 1: c',
      'client 1: d',
      'client 1: COMMIT',
      'client 1: released',
    ])
  })

  it('runs writes that merge, next to each other in a batch, as one statement answering each', async () => {
    const { pool, log } = fakePool()
    const write = createChannelBatches(pool)
    const merge = {
      key: 'spend 7',
      statement: (count: number) => statement(`spend 7 x${count}`),
      split: (rows: Record<string, unknown>[], count: number) =>
        Array.from({ length: count }, (_, i) => [{ ...rows[0], i }]),
    }
    const spend = () => write('ch', { ...statement('spend 7'), merge })
    const answers = await Promise.all([
      write('ch', statement('a')),
      spend(),
      spend(),
      spend(),
      write('ch', statement('b')),
      spend(),
      write('ch', { ...statement('spend 8'), merge: { ...merge, key: 'spend 8' } }),
    ])
    expect(log).toEqual([
      'pool: a',
      'client 1: BEGIN',
      'client 1: spend 7 x3',
      'client 1: b',
      'client 1: spend 7',
      'client 1: spend 8',
      'client 1: COMMIT',
      'client 1: released',
    ])
    expect(answers.slice(1, 4)).toEqual([0, 1, 2].map((i) => [{ text: 'spend 7 x3', i }]))
    // A run of one runs as it is, and is answered its own rows.
    expect(answers[5]).toEqual([{ text: 'spend 7' }])
  })

  it('never puts two channels in one transaction', async () => {
    const { pool, log } = fakePool()
    const write = createChannelBatches(pool)
    await Promise.all([
      write('x', statement('x1')),
      write('y', statement('y1')),
      write('x', statement('x2')),
      write('y', statement('y2')),
    ])
    // Each channel's second write waited for its first only, and ran alone.
    expect(log.filter((line) => line.startsWith('client'))).toEqual([])
    expect(log.sort()).toEqual(['pool: x1', 'pool: x2', 'pool: y1', 'pool: y2'])
  })

  it('fails every write of a batch with a failed statement, and rolls it back', async () => {
    const { pool, log } = fakePool('c')
    const write = createChannelBatches(pool)
    const results = await Promise.allSettled(
      ['a', 'b', 'c', 'd'].map((t) => write('ch', statement(t))),
    )
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'rejected'])
    // Sent one at a time: nothing after the failed statement but the ROLLBACK.
    expect(log).toEqual([
      'pool: a',
      'client 1: BEGIN',
      'client 1: b',
      'client 1: c',
      'client 1: ROLLBACK',
      'client 1: destroyed',
    ])
    // The channel takes writes again afterwards.
    await expect(write('ch', statement('e'))).resolves.toEqual([{ text: 'e' }])
  })

  it('fails every write of a pipelined batch with a failed statement, which its COMMIT rolled back', async () => {
    const { pool, log } = fakePool('c', true)
    const write = createChannelBatches(pool)
    const results = await Promise.allSettled(
      ['a', 'b', 'c', 'd'].map((t) => write('ch', statement(t))),
    )
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'rejected'])
    expect(log).toContain('client 1: COMMIT (rolled back)')
    expect(log.at(-1)).toBe('client 1: destroyed')
  })

  it('fails every write of a batch whose COMMIT fails, and gives its connection up', async () => {
    const { pool, log } = fakePool('COMMIT')
    const write = createChannelBatches(pool)
    const results = await Promise.allSettled(['a', 'b', 'c'].map((t) => write('ch', statement(t))))
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected'])
    expect(log.at(-1)).toBe('client 1: destroyed')
  })

  it('sends a batch without waiting for each answer on a pipelining pool: one round trip', async () => {
    const { pool, log } = fakePool(undefined, true)
    const sent: string[] = []
    /** What had been sent when the batch's first answer (its BEGIN's) came. */
    let sentByFirstAnswer: string[] = []
    const connect = pool.connect.bind(pool)
    ;(pool as { connect: unknown }).connect = async () => {
      const client = (await connect()) as unknown as {
        query: (q: string | { text: string }) => Promise<unknown>
      }
      const query = client.query
      client.query = (q) => {
        const text = typeof q === 'string' ? q : q.text
        sent.push(text)
        return query(q).then((answer) => {
          if (text === 'BEGIN') sentByFirstAnswer = [...sent]
          return answer
        })
      }
      return client
    }
    const write = createChannelBatches(pool)
    const first = write('ch', statement('a'))
    const rest = ['b', 'c'].map((t) => write('ch', statement(t)))
    await first
    await Promise.all(rest)
    // The batch's statements were all handed to the connection before its first answer came.
    expect(sentByFirstAnswer).toEqual(['BEGIN', 'b', 'c', 'COMMIT'])
    expect(log).toEqual([
      'pool: a',
      'client 1: BEGIN',
      'client 1: b',
      'client 1: c',
      'client 1: COMMIT',
      'client 1: released',
    ])
  })
})
