/**
 * Stateless challenge ids: HMAC-SHA256 keys (rotation: the first signs, all verify), the id input
 * (`mppx`'s `realm|method|intent|request|expires|digest|opaque`), expiry buckets, and constant-time
 * comparison.
 *
 * HMAC on the calling thread: Node's own crypto module on Node (a few µs; a paid call checks one
 * id, a 402 makes one per method), else `@noble/hashes` (synchronous, the same on every runtime;
 * WebCrypto's is asynchronous), whose key's inner and outer pads are hashed once, when its ring is
 * prepared, and every MAC starts from a copy of that state. Both give the same bytes.
 *
 * @module
 * @internal
 */
import { hmac } from '@noble/hashes/hmac.js'
import { sha256 } from '@noble/hashes/sha2.js'
import { PaymentError } from '../errors.js'
import { bytesToBase64url, decodeBase64url } from './base64.js'
import { nodeCrypto } from './runtime.js'

/** A server secret: a string (its UTF-8 bytes are the key, as in `mppx`) or raw bytes. */
export type ChallengeSecret = string | Uint8Array

/** Smallest accepted secret, in bytes. */
export const minSecretBytes = 32

/** A challenge key: HMAC-SHA256 keyed with one secret — the runtime's key, or one ready to copy. */
export type MacKey =
  | { readonly native: import('node:crypto').KeyObject }
  | { readonly keyed: ReturnType<typeof hmac.create> }

type KeyRing = { readonly snapshot: readonly ChallengeSecret[]; readonly keys: readonly MacKey[] }

const utf8 = new TextEncoder()

/** Prepared keys per secret list (the caller's object; an engine asks once, when it is made). */
const rings = new WeakMap<readonly ChallengeSecret[], KeyRing>()

/**
 * The validated keys of a secret list, cached per list (re-validated if the list was changed).
 *
 * @throws {PaymentError} `invalid_secret` for an empty list, a missing secret (`undefined`, e.g. an
 *   unset environment variable) or one shorter than 32 bytes.
 */
export function keyRing(secrets: readonly ChallengeSecret[]): readonly MacKey[] {
  const cached = rings.get(secrets)
  if (cached !== undefined && sameList(cached.snapshot, secrets)) return cached.keys
  if (!Array.isArray(secrets) || secrets.length === 0) {
    throw new PaymentError('invalid_secret', 'At least one challenge secret is required.')
  }
  const keys = secrets.map((secret, index) => {
    // `[process.env.SECRET!]` with the variable unset: say which one is missing, not a TypeError.
    if (typeof secret !== 'string' && !(secret instanceof Uint8Array)) {
      throw new PaymentError(
        'invalid_secret',
        `Challenge secret #${index} is ${secret === undefined ? 'missing (undefined: is the environment variable it comes from set?)' : 'not a string or bytes'}.`,
        { details: { index, minBytes: minSecretBytes } },
      )
    }
    const key =
      typeof secret === 'string' ? utf8.encode(secret) : Uint8Array.from(secret as Uint8Array)
    if (key.length < minSecretBytes) {
      throw new PaymentError(
        'invalid_secret',
        `Challenge secret #${index} is shorter than ${minSecretBytes} bytes.`,
        { details: { index, minBytes: minSecretBytes } },
      )
    }
    return nodeCrypto === undefined
      ? { keyed: hmac.create(sha256, key) }
      : { native: nodeCrypto.createSecretKey(key) }
  })
  const ring = { snapshot: [...secrets], keys }
  rings.set(secrets, ring)
  return keys
}

function sameList(a: readonly ChallengeSecret[], b: readonly ChallengeSecret[]): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/** HMAC-SHA256 of `input` (as UTF-8) under `key`. */
export function mac(key: MacKey, input: string): Uint8Array {
  if ('native' in key && nodeCrypto !== undefined) {
    return nodeCrypto.createHmac('sha256', key.native).update(input, 'utf8').digest()
  }
  return (key as { keyed: ReturnType<typeof hmac.create> }).keyed
    .clone()
    .update(utf8.encode(input))
    .digest()
}

/** The id text of a MAC: base64url without padding (43 characters). */
export function idText(digest: Uint8Array): string {
  return bytesToBase64url(digest)
}

/** Decodes an id to its 32 MAC bytes, or `undefined` when it cannot be one of ours. */
export function idBytes(id: string): Uint8Array | undefined {
  if (id.length !== 43) return undefined
  const bytes = decodeBase64url(id)
  return bytes?.length === 32 ? bytes : undefined
}

/** Equality of two MACs in time that depends only on their length, never on their contents. */
export function sameMac(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  let difference = 0
  for (let i = 0; i < a.length; i++) difference |= (a[i] as number) ^ (b[i] as number)
  return difference === 0
}

/**
 * Expiry buckets: a challenge issued at `now` for a lifetime of `T` seconds expires at the last
 * multiple of the bucket size `B = max(1, ceil(T / 4))` at or before `now + T` (aligned down), so
 * its real lifetime is more than `T - B` and at most `T`: the expiry a buyer is shown (MPP
 * `expires`, x402 `maxTimeoutSeconds`) is the latest moment it is accepted. A verifier that is
 * given only the id (x402) tries the few bucket boundaries that could be a live expiry: those in
 * `(now, floor((now + T) / B) * B + B]` — the extra bucket absorbs clock skew of up to `B` seconds
 * between servers (a challenge issued by a server whose clock runs ahead).
 */
export function bucketSeconds(lifetimeSeconds: number): number {
  return Math.max(1, Math.ceil(lifetimeSeconds / 4))
}

/** The aligned expiry (Unix seconds) of a challenge issued at `nowMs`: never after `now + T`. */
export function alignedExpiry(nowMs: number, lifetimeSeconds: number): number {
  const bucket = bucketSeconds(lifetimeSeconds)
  return Math.floor((nowMs / 1000 + lifetimeSeconds) / bucket) * bucket
}

/**
 * Candidate expiries to try for an id given alone, most likely first: the expiry a challenge issued
 * now would get, then earlier live ones (issued up to one lifetime ago), then one bucket later
 * (clock skew between servers); and separately those that expired within the last lifetime (to
 * tell "expired" from "never issued"). A buyer who pays promptly costs one MAC.
 */
export function candidateExpiries(
  nowMs: number,
  lifetimeSeconds: number,
): { live: number[]; expired: number[] } {
  const bucket = bucketSeconds(lifetimeSeconds)
  const aligned = alignedExpiry(nowMs, lifetimeSeconds)
  const nowSeconds = nowMs / 1000
  const live: number[] = []
  const expired: number[] = []
  for (let e = aligned; e > nowSeconds - lifetimeSeconds - bucket; e -= bucket) {
    if (e > nowSeconds) live.push(e)
    else expired.push(e)
  }
  live.push(aligned + bucket)
  return { live, expired }
}

/** RFC 3339 text of a Unix time in whole seconds: `2026-01-01T00:00:00Z`. */
export function expiryText(unixSeconds: number): string {
  return new Date(unixSeconds * 1000).toISOString().replace('.000Z', 'Z')
}
