/**
 * The embedded blob store: a local folder. Names are 256 random bits (base64url) plus an extension,
 * so a URL cannot be guessed; blobs older than the retention time are not served and are deleted by
 * {@link LocalBlobStore.sweep}.
 *
 * @module
 */
import { randomBytes } from 'node:crypto'
import { mkdir, readdir, readFile, rename, rm, stat, utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { BlobStore, StoredBlob } from './blobStore.js'
import { extensionOf, extensionTypes } from './blobStore.js'

/** Options of {@link createLocalBlobStore}. */
export type LocalBlobStoreOptions = {
  /** Folder the blobs live in (created when missing). */
  directory: string
  /** Public URL prefix the gateway serves the folder under, e.g. `https://gw.example/blobs`. */
  publicBaseUrl: string
  /** How long a blob is served, in milliseconds. Default 24 hours. */
  retentionMs?: number | undefined
  /** Largest blob accepted, in bytes. Default 64 MiB. */
  maxBytes?: number | undefined
  /** Clock, for tests. Default `Date.now`. */
  now?: (() => number) | undefined
}

/** A stored blob read back. */
export type BlobContent = { bytes: Uint8Array<ArrayBuffer>; contentType: string }

/** The local-folder blob store. */
export type LocalBlobStore = BlobStore & {
  /** The blob named `name` (the last path segment of its URL), or `undefined` (unknown, expired, bad name). */
  get(name: string): Promise<BlobContent | undefined>
  /**
   * A `Response` for `GET <publicBaseUrl>/<name>`: the bytes with their content type, `nosniff` and a
   * cache lifetime no longer than the remaining retention; 404 when absent or expired.
   */
  serve(name: string): Promise<Response>
  /** Deletes every expired blob; answers how many were deleted. */
  sweep(): Promise<number>
}

const namePattern = /^[A-Za-z0-9_-]{43}\.([a-z0-9]{2,4})$/

/**
 * Creates the local-folder blob store.
 *
 * @example
 * ```ts
 * const blobs = createLocalBlobStore({ directory: '.data/blobs', publicBaseUrl: 'http://127.0.0.1:4020/blobs' })
 * const { url } = await blobs.put(png, 'image/png')
 * ```
 */
export function createLocalBlobStore(options: LocalBlobStoreOptions): LocalBlobStore {
  const retentionMs = options.retentionMs ?? 24 * 60 * 60 * 1000
  const maxBytes = options.maxBytes ?? 64 * 1024 * 1024
  const now = options.now ?? Date.now
  const base = options.publicBaseUrl.replace(/\/+$/, '')
  let ready: Promise<unknown> | undefined
  const ensureDir = () => {
    ready ??= mkdir(options.directory, { recursive: true })
    return ready
  }

  async function fresh(name: string): Promise<{ path: string; ageMs: number } | undefined> {
    if (!namePattern.test(name)) return undefined
    const path = join(options.directory, name)
    try {
      const info = await stat(path)
      const ageMs = now() - info.mtimeMs
      if (ageMs > retentionMs) {
        await rm(path, { force: true })
        return undefined
      }
      return { path, ageMs }
    } catch {
      return undefined
    }
  }

  return {
    async put(bytes, contentType): Promise<StoredBlob> {
      if (bytes.byteLength > maxBytes) {
        throw new RangeError(
          `blob of ${bytes.byteLength} bytes is above the ${maxBytes}-byte limit`,
        )
      }
      await ensureDir()
      const name = `${randomBytes(32).toString('base64url')}.${extensionOf(contentType)}`
      const path = join(options.directory, name)
      const temporary = `${path}.part`
      await writeFile(temporary, bytes, { flag: 'wx' })
      const at = new Date(now())
      await utimes(temporary, at, at)
      await rename(temporary, path)
      return { url: `${base}/${name}` }
    },

    async get(name) {
      const found = await fresh(name)
      if (!found) return undefined
      const bytes = await readFile(found.path).catch(() => undefined)
      if (!bytes) return undefined
      const extension = namePattern.exec(name)?.[1] ?? 'bin'
      return {
        bytes: new Uint8Array(bytes),
        contentType: extensionTypes[extension] ?? 'application/octet-stream',
      }
    },

    async serve(name) {
      const found = await fresh(name)
      const blob = found ? await this.get(name) : undefined
      if (!found || !blob) {
        return new Response('not found', { status: 404, headers: { 'content-type': 'text/plain' } })
      }
      const maxAge = Math.max(0, Math.floor((retentionMs - found.ageMs) / 1000))
      return new Response(blob.bytes, {
        status: 200,
        headers: {
          'content-type': blob.contentType,
          'content-length': String(blob.bytes.byteLength),
          'cache-control': `private, max-age=${maxAge}`,
          'x-content-type-options': 'nosniff',
          'content-security-policy': "default-src 'none'",
        },
      })
    },

    async sweep() {
      await ensureDir()
      let removed = 0
      for (const name of await readdir(options.directory)) {
        const path = join(options.directory, name)
        const info = await stat(path).catch(() => undefined)
        if (!info?.isFile()) continue
        if (now() - info.mtimeMs > retentionMs) {
          await rm(path, { force: true })
          removed++
        }
      }
      return removed
    },
  }
}
