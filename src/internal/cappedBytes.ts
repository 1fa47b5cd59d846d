/**
 * The one byte counter behind every capped body read: chunks kept until their total passes a cap,
 * then joined once. `readCappedStream` (a Web stream) and `readNodeBody` (a Node request's
 * events) are both built on it.
 *
 * @module
 */

/** Chunks gathered under a byte cap (see {@link cappedBytes}). */
export type CappedBytes = {
  /**
   * Keeps a chunk (also the one that passes the cap) and says whether the total is still within
   * the cap; once it is not, the caller stops reading.
   */
  push(chunk: Uint8Array): boolean
  /** Bytes kept so far. */
  readonly size: number
  /** The kept chunks as one array (a single chunk is returned as it is, not copied). */
  bytes(): Uint8Array
}

/** A byte collector that stops accepting once more than `maxBytes` were pushed. */
export function cappedBytes(maxBytes: number): CappedBytes {
  const chunks: Uint8Array[] = []
  let size = 0
  return {
    push(chunk) {
      chunks.push(chunk)
      size += chunk.byteLength
      return size <= maxBytes
    },
    get size() {
      return size
    },
    bytes() {
      if (chunks.length === 1) return chunks[0] as Uint8Array
      const whole = new Uint8Array(size)
      let offset = 0
      for (const chunk of chunks) {
        whole.set(chunk, offset)
        offset += chunk.byteLength
      }
      return whole
    },
  }
}
