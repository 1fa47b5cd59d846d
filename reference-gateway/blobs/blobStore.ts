/**
 * Blob storage for media results (generated images, speech, music). Upstream answers that carry
 * media are stored here and returned to the buyer as `{ url }` entries. The embedded default is a
 * local folder served by the gateway ({@link createLocalBlobStore}); any store with the same `put`
 * (an S3-compatible bucket, say) can take its place.
 *
 * @module
 */

/** Where a stored blob can be fetched. */
export type StoredBlob = { url: string }

/** A place to put media bytes and get back a URL for them. */
export type BlobStore = {
  /**
   * Stores `bytes` and answers the public URL under which they will be served (unguessable; valid
   * for the store's retention time).
   */
  put(bytes: Uint8Array, contentType: string): Promise<StoredBlob>
}

/** File extensions of the media types the gateway stores, by content type. */
export const mediaExtensions: Readonly<Record<string, string>> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/webp': 'webp',
  'image/gif': 'gif',
  'audio/mpeg': 'mp3',
  'audio/mp3': 'mp3',
  'audio/wav': 'wav',
  'audio/x-wav': 'wav',
  'audio/ogg': 'ogg',
  'audio/opus': 'opus',
  'audio/flac': 'flac',
  'audio/aac': 'aac',
  'video/mp4': 'mp4',
  'application/octet-stream': 'bin',
}

/** Content type served for each stored extension. */
export const extensionTypes: Readonly<Record<string, string>> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  webp: 'image/webp',
  gif: 'image/gif',
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  ogg: 'audio/ogg',
  opus: 'audio/opus',
  flac: 'audio/flac',
  aac: 'audio/aac',
  mp4: 'video/mp4',
  bin: 'application/octet-stream',
}

/** The extension a blob of `contentType` is stored under (`bin` for anything unknown). */
export function extensionOf(contentType: string): string {
  const base = contentType.split(';')[0]?.trim().toLowerCase() ?? ''
  return mediaExtensions[base] ?? 'bin'
}
