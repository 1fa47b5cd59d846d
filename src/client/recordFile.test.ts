import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { hasCode } from '../errors.js'
import { createRecordFile } from './recordFile.js'

const schema = z.object({
  version: z.literal(1),
  items: z.array(z.object({ n: z.number().int() })).max(10),
})
const fileIn = () => join(mkdtempSync(join(tmpdir(), 'tollgate-records-')), 'nested', 'items.json')
const open = (
  file: string,
  extra: { cache?: boolean; prune?: (r: { n: number }[]) => { n: number }[] } = {},
) =>
  createRecordFile({ file, schema, key: 'items', unreadable: 'Cannot read the items.', ...extra })
const append = (n: number) => (items: { n: number }[]) => ({
  records: [...items, { n }],
  result: items.length,
})

describe('record file', () => {
  it('starts empty, writes owner-only through atomic saves, and serialises concurrent changes', async () => {
    const file = fileIn()
    const records = open(file)
    expect(await records.read()).toEqual([])
    const counts = await Promise.all([1, 2, 3].map((n) => records.update(append(n))))
    expect(counts).toEqual([0, 1, 2])
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({
      version: 1,
      items: [{ n: 1 }, { n: 2 }, { n: 3 }],
    })
    expect(statSync(file).mode & 0o777).toBe(0o600)
  })

  it('writes nothing when a change throws or returns no records', async () => {
    const file = fileIn()
    const records = open(file)
    await records.update(append(1))
    await expect(
      records.update(() => {
        throw new Error('refused')
      }),
    ).rejects.toThrow('refused')
    expect(await records.update(() => ({ result: 'read only' }))).toBe('read only')
    expect(await open(file).read()).toEqual([{ n: 1 }])
  })

  it('re-reads the file by default; with cache, keeps what it read and wrote', async () => {
    const file = fileIn()
    const shared = open(file)
    const cached = open(file, { cache: true })
    await cached.update(append(1))
    await shared.update(append(2))
    expect(await shared.read()).toEqual([{ n: 1 }, { n: 2 }])
    expect(await cached.read()).toEqual([{ n: 1 }])
  })

  it('prunes before each write', async () => {
    const file = fileIn()
    const records = open(file, { prune: (items) => items.filter((i) => i.n % 2 === 0) })
    for (const n of [1, 2, 3, 4]) await records.update(append(n))
    expect(await records.read()).toEqual([{ n: 2 }, { n: 4 }])
  })

  it('refuses an unreadable file with invalid_config rather than starting empty', async () => {
    for (const text of ['not json', '{"version":2,"items":[]}']) {
      const file = fileIn()
      await open(file).update(append(1))
      writeFileSync(file, text)
      const error = await open(file)
        .read()
        .then(
          () => undefined,
          (e: unknown) => e,
        )
      expect(hasCode(error, 'invalid_config')).toBe(true)
      expect((error as Error).message).toBe('Cannot read the items.')
    }
  })
})
