import { mkdtemp, readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { createLocalBlobStore } from './local.js'

const dirs: string[] = []
async function folder() {
  const dir = await mkdtemp(join(tmpdir(), 'tollgate-blobs-'))
  dirs.push(dir)
  return dir
}
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true })
})

describe('local blob store', () => {
  it('stores bytes under an unguessable URL and serves them back with their type', async () => {
    const store = createLocalBlobStore({
      directory: await folder(),
      publicBaseUrl: 'http://gw.test/blobs/',
    })
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 1, 2, 3])
    const a = await store.put(png, 'image/png')
    const b = await store.put(png, 'image/png')
    expect(a.url).toMatch(/^http:\/\/gw\.test\/blobs\/[A-Za-z0-9_-]{43}\.png$/)
    expect(a.url).not.toBe(b.url)
    const name = a.url.split('/').pop() as string
    const response = await store.serve(name)
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('image/png')
    expect(response.headers.get('x-content-type-options')).toBe('nosniff')
    expect(new Uint8Array(await response.arrayBuffer())).toEqual(png)
    const mp3 = await store.put(new Uint8Array([1]), 'audio/mpeg; charset=binary')
    expect(mp3.url).toMatch(/\.mp3$/)
  })

  it('refuses names that are not its own (path tricks, guesses)', async () => {
    const dir = await folder()
    const store = createLocalBlobStore({ directory: dir, publicBaseUrl: 'http://gw.test/blobs' })
    await store.put(new Uint8Array([1]), 'image/png')
    for (const name of ['../etc/passwd', '..%2f..%2fx', 'a.png', `${'A'.repeat(43)}.png`, '']) {
      expect(await store.get(name)).toBeUndefined()
      expect((await store.serve(name)).status).toBe(404)
    }
  })

  it('stops serving after the retention time and sweeps expired blobs', async () => {
    let clock = Date.parse('2026-01-01T00:00:00Z')
    const dir = await folder()
    const store = createLocalBlobStore({
      directory: dir,
      publicBaseUrl: 'http://gw.test/blobs',
      retentionMs: 60_000,
      now: () => clock,
    })
    const old = await store.put(new Uint8Array([1]), 'image/png')
    clock += 30_000
    const young = await store.put(new Uint8Array([2]), 'image/png')
    const oldName = old.url.split('/').pop() as string
    const youngName = young.url.split('/').pop() as string
    expect((await store.serve(oldName)).headers.get('cache-control')).toBe('private, max-age=30')
    clock += 40_000
    expect(await store.get(oldName)).toBeUndefined()
    expect(await store.get(youngName)).toBeDefined()
    expect(await store.sweep()).toBe(0) // the expired one was already removed on read
    clock += 60_000
    expect(await store.sweep()).toBe(1)
    expect(await readdir(dir)).toEqual([])
  })

  it('rejects blobs above the size limit', async () => {
    const store = createLocalBlobStore({
      directory: await folder(),
      publicBaseUrl: 'http://gw.test/b',
      maxBytes: 4,
    })
    await expect(store.put(new Uint8Array(5), 'image/png')).rejects.toThrow(RangeError)
  })
})
