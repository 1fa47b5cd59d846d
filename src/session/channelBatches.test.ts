import type pg from 'pg'
import { describe, expect, it } from 'vitest'
import { createChannelBatches } from './channelBatches.js'

/**
 * A pool that answers each statement with its text as the one row, after a turn of the event loop
 * (so that writes can queue behind it), and records what ran where: alone (`pool`) or on a lent
 * connection (`client N`).
 */
function fakePool(failOn?: string) {
  const log: string[] = []
  let lent = 0
  const answer = async (where: string, text: string) => {
    await new Promise((resolve) => setTimeout(resolve, 1))
    log.push(`${where}: ${text}`)
    if (text === failOn) throw new Error(`${text} failed`)
    return { rows: [{ text }] }
  }
  const pool = {
    query: (query: string | { text: string }) =>
      answer('pool', typeof query === 'string' ? query : query.text),
    async connect() {
      const where = `client ${++lent}`
      return {
        query: (query: string | { text: string }) =>
          answer(where, typeof query === 'string' ? query : query.text),
        release: () => log.push(`${where}: released`),
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

  it('fails every write of a batch that fails, and rolls it back', async () => {
    const { pool, log } = fakePool('COMMIT')
    const write = createChannelBatches(pool)
    const results = await Promise.allSettled(['a', 'b', 'c'].map((t) => write('ch', statement(t))))
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected'])
    expect(log).toContain('client 1: ROLLBACK')
    // The channel takes writes again afterwards.
    await expect(write('ch', statement('d'))).resolves.toEqual([{ text: 'd' }])
  })
})
