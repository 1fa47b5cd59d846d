/**
 * Signed catalog mutations (spec 4.5). A seller asks for a nonce for one body, signs the message
 * below as a Sui personal message with its agent address, and sends body, nonce and signature:
 *
 * ```
 * Tollgate catalog mutation v1
 * nonce: <nonce>
 * sha256: <hex SHA-256 of the body, canonical JSON (RFC 8785)>
 * ```
 *
 * Nonces are single-use, expire, and are bound to the address, the action and the body hash.
 *
 * @module
 */
import { createHash, randomBytes } from 'node:crypto'
import { normalizeSuiAddress } from '@mysten/sui/utils'
import { verifyPersonalMessageSignature } from '@mysten/sui/verify'
import canonicalize from 'canonicalize'
import type { MarketplaceStore, NonceRefusal } from './store.js'

/** The fixed first line of every signed catalog message. */
export const mutationPrefix = 'Tollgate catalog mutation v1\n'

/** The actions a nonce may be issued for. */
export type MutationAction = 'submit' | 'service' | 'review'

/** Hex SHA-256 of a body's canonical JSON (RFC 8785). */
export function bodySha256(body: unknown): string {
  const json = canonicalize(body)
  if (json === undefined) throw new TypeError('the body cannot be serialised as JSON')
  return createHash('sha256').update(json).digest('hex')
}

/** The exact text to sign for `nonce` and a body whose hash is `sha256`. */
export function mutationMessage(nonce: string, sha256: string): string {
  return `${mutationPrefix}nonce: ${nonce}\nsha256: ${sha256}`
}

/** Why a signed mutation is refused. */
export type MutationRefusal = NonceRefusal | 'invalid_signature'

/** Options of {@link createMutationSigner}. */
export type MutationSignerOptions = {
  store: MarketplaceStore
  /** How long a nonce may be used. Default 5 minutes. */
  nonceTtlMs?: number | undefined
  /** Clock, ms. Default `Date.now`. */
  now?: (() => number) | undefined
}

/** Issues nonces and checks signed mutations. */
export type MutationSigner = {
  /** A new nonce for `address` to sign `action` over `body`, and the exact message to sign. */
  prepare(input: { address: string; action: MutationAction; body: unknown }): Promise<{
    nonce: string
    message: string
    sha256: string
    expiresAt: string
  }>
  /**
   * Checks the signature over the message of `nonce` and `body` by `address`, then consumes the
   * nonce (once). Nothing is consumed when the signature does not hold.
   */
  verify(input: {
    address: string
    action: MutationAction
    body: unknown
    nonce: string
    signature: string
  }): Promise<{ ok: true } | { ok: false; reason: MutationRefusal }>
}

/**
 * The signer of catalog mutations over the marketplace store.
 *
 * @example
 * ```ts
 * const signer = createMutationSigner({ store })
 * const { nonce, message } = await signer.prepare({ address, action: 'submit', body })
 * ```
 */
export function createMutationSigner(options: MutationSignerOptions): MutationSigner {
  const now = options.now ?? Date.now
  const ttl = options.nonceTtlMs ?? 5 * 60_000
  return {
    async prepare(input) {
      const nonce = randomBytes(16).toString('hex')
      const sha256 = bodySha256(input.body)
      const expiresAtMs = now() + ttl
      await options.store.issueNonce({
        nonce,
        address: normalizeSuiAddress(input.address),
        action: input.action,
        bodyHash: sha256,
        expiresAtMs,
      })
      return {
        nonce,
        message: mutationMessage(nonce, sha256),
        sha256,
        expiresAt: new Date(expiresAtMs).toISOString(),
      }
    },
    async verify(input) {
      const address = normalizeSuiAddress(input.address)
      const sha256 = bodySha256(input.body)
      try {
        await verifyPersonalMessageSignature(
          new TextEncoder().encode(mutationMessage(input.nonce, sha256)),
          input.signature,
          { address },
        )
      } catch {
        return { ok: false, reason: 'invalid_signature' }
      }
      return options.store.consumeNonce({
        nonce: input.nonce,
        address,
        action: input.action,
        bodyHash: sha256,
        nowMs: now(),
      })
    },
  }
}
