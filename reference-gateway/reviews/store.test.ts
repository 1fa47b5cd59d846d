import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { createSqliteReviewStore, type Review } from './store.js'

const folder = mkdtempSync(join(tmpdir(), 'tollgate-reviews-'))
afterAll(() => rmSync(folder, { recursive: true, force: true }))

const review = (purchaseId: string, createdAtMs: number, rating = 4): Review => ({
  purchaseId,
  kind: 'job',
  buyer: '0xb',
  seller: '0x5',
  rating,
  comment: 'fine',
  createdAtMs,
})

describe('the SQLite review store', () => {
  it('keeps one review per purchase, across reopening, and lists a seller’s newest first', async () => {
    const file = join(folder, 'reviews.db')
    const store = createSqliteReviewStore({ file })
    expect(await store.add(review('0x1', 1))).toEqual({ status: 'added' })
    expect(await store.add(review('0x1', 2, 1))).toEqual({ status: 'duplicate' })
    expect(await store.add(review('0x2', 3, 5))).toEqual({ status: 'added' })
    await store.close()
    const reopened = createSqliteReviewStore({ file })
    expect(await reopened.get('0x1')).toEqual(review('0x1', 1))
    expect((await reopened.listBySeller('0x5')).map((r) => r.purchaseId)).toEqual(['0x2', '0x1'])
    expect(await reopened.get('0x3')).toBeUndefined()
    await reopened.close()
  })

  it('refuses a rating outside 1..5 at the storage level too', async () => {
    const store = createSqliteReviewStore({ file: ':memory:' })
    await expect(store.add(review('0x9', 1, 7))).rejects.toThrow()
    await store.close()
  })
})
