import { describe, expect, it } from 'vitest'
import { createTurns } from './turns.js'

describe('turns', () => {
  it('runs the tasks of one key one at a time, in order, and those of other keys meanwhile', async () => {
    const turns = createTurns<string>()
    const log: string[] = []
    const task = (name: string, ms: number) => async () => {
      log.push(`${name} starts`)
      await new Promise((resolve) => setTimeout(resolve, ms))
      log.push(`${name} ends`)
      return name
    }
    const results = await Promise.all([
      turns('a', task('a1', 20)),
      turns('a', task('a2', 1)),
      turns('b', task('b1', 5)),
    ])
    expect(results).toEqual(['a1', 'a2', 'b1'])
    expect(log.indexOf('a2 starts')).toBeGreaterThan(log.indexOf('a1 ends'))
    expect(log.indexOf('b1 starts')).toBeLessThan(log.indexOf('a1 ends'))
  })

  it('runs the next task after one that failed, which fails alone', async () => {
    const turns = createTurns<string>()
    const failed = turns('a', async () => {
      throw new Error('refused')
    })
    const next = turns('a', async () => 'ran')
    await expect(failed).rejects.toThrow('refused')
    await expect(next).resolves.toBe('ran')
  })
})
