/**
 * What the runtime offers beyond the Web standards, found at load and never imported (the core
 * loads on any Web-standard runtime): Node's own crypto module and the global `Buffer`. Each user
 * keeps a Web-standard path for runtimes without them, giving the same bytes.
 *
 * @module
 * @internal
 */

/**
 * Node's own crypto module when the runtime is Node (fetched with `process.getBuiltinModule`):
 * its Ed25519 and HMAC run on the calling thread, where Web Crypto hands each to the thread pool
 * and back.
 */
export const nodeCrypto = (
  globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }
).process?.getBuiltinModule?.('node:crypto') as typeof import('node:crypto') | undefined

/** The part of Node's `Buffer` the core uses. */
export type NativeBuffer = {
  from(value: string | Uint8Array, encoding?: 'base64' | 'base64url' | 'utf8' | 'hex'): NativeBytes
  from(buffer: ArrayBufferLike, offset: number, length: number): NativeBytes
}

/** A `Buffer`'s bytes, as the core reads them. */
export type NativeBytes = Uint8Array<ArrayBuffer> & {
  toString(encoding: 'base64' | 'base64url' | 'hex'): string
}

/** The runtime's global `Buffer` (Node, Bun), when it has one. */
export const nativeBuffer = (globalThis as { Buffer?: NativeBuffer }).Buffer
