/**
 * Helpers for the upstream tests: an in-memory blob store, and decoding a body nock captured.
 *
 * @module
 */
import type { HostResolver } from 'tollgate/node'
import type { BlobStore } from '../blobs/blobStore.js'

/**
 * Resolves every media host name to one public address, so the SSRF guard lets a download through
 * to nock (which answers it: `nock.disableNetConnect()` keeps it from leaving the machine).
 */
export const publicResolver: HostResolver = async () => [{ address: '93.184.215.14' }]

/** An in-memory blob store that remembers what was put. */
export function memoryBlobs(): BlobStore & {
  items: { url: string; bytes: Uint8Array; contentType: string }[]
} {
  const items: { url: string; bytes: Uint8Array; contentType: string }[] = []
  return {
    items,
    async put(bytes, contentType) {
      const url = `https://gw.test/blobs/${items.length + 1}`
      items.push({ url, bytes: new Uint8Array(bytes), contentType })
      return { url }
    },
  }
}

/** The bytes of a body as nock hands it over (hex for binary bodies, text otherwise). */
export function capturedBytes(body: unknown): Uint8Array<ArrayBuffer> {
  const text = typeof body === 'string' ? body : JSON.stringify(body)
  const buffer =
    /^[0-9a-f]+$/i.test(text) && text.length % 2 === 0
      ? Buffer.from(text, 'hex')
      : Buffer.from(text, 'utf8')
  return new Uint8Array(buffer)
}

/** Parses a multipart/form-data body nock captured. */
export async function capturedForm(body: unknown, contentType: string): Promise<FormData> {
  return new Response(capturedBytes(body), { headers: { 'content-type': contentType } }).formData()
}
