/**
 * Signed catalog mutations (docs/marketplace.md). A seller asks for a nonce for one body, signs the message
 * below as a Sui personal message with its agent address, and sends body, nonce and signature:
 *
 * ```
 * Tollgate catalog mutation v1
 * nonce: <nonce>
 * sha256: <hex SHA-256 of the body, canonical JSON (RFC 8785)>
 * ```
 *
 * Nonces are single-use, expire, and are bound to the address, the action and the body hash. At
 * most `maxOutstandingNonces` are outstanding at once, and expired ones are deleted.
 *
 * @module
 */
import { createHash, randomBytes } from 'node:crypto'
import { isValidSuiAddress, normalizeSuiAddress } from '@mysten/sui/utils'
import { verifyPersonalMessageSignature } from '@mysten/sui/verify'
import canonicalize from 'canonicalize'
import { z } from 'zod'
import type { MarketplaceStore, NonceRefusal } from './store.js'

/** The fixed first line of every signed catalog message. */
export const mutationPrefix = 'Tollgate catalog mutation v1\n'

/** A Sui address as sent (at most 66 characters), normalised to its long form. */
export const suiAddressSchema = z
  .string()
  .max(66)
  .refine((a) => isValidSuiAddress(normalizeSuiAddress(a)), 'not a Sui address')
  .transform((a) => normalizeSuiAddress(a))

/**
 * The schema of a signed mutation as posted: the signer's address, the nonce it was issued, the
 * signature of {@link mutationMessage}, and the body (checked by `body`).
 */
export function signedMutationSchema<Body extends z.ZodType>(body: Body) {
  return z
    .object({
      address: suiAddressSchema,
      nonce: z.string().regex(/^[0-9a-f]{32}$/),
      signature: z.string().min(1).max(4096),
      body,
    })
    .strict()
}

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
  /**
   * Nonces outstanding (issued, unused, unexpired) at most, all addresses together; past it,
   * `prepare` answers `full` until some are used or expire. Default 10 000. Security: the bound on
   * the rows anonymous callers can make the gateway keep (each one is free to ask for).
   */
  maxOutstandingNonces?: number | undefined
  /** Clock, ms. Default `Date.now`. */
  now?: (() => number) | undefined
}

/** Issues nonces and checks signed mutations. */
export type MutationSigner = {
  /**
   * A new nonce for `address` to sign `action` over `body`, and the exact message to sign; or
   * `full` when the outstanding nonces are at their cap (retry after `retryAfterMs`). Nonces that
   * expired more than one lifetime ago are deleted first.
   */
  prepare(input: {
    address: string
    action: MutationAction
    body: unknown
  }): Promise<
    | { status: 'prepared'; nonce: string; message: string; sha256: string; expiresAt: string }
    | { status: 'full'; retryAfterMs: number }
  >
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
 * const prepared = await signer.prepare({ address, action: 'submit', body })
 * if (prepared.status === 'prepared') sign(prepared.message)
 * ```
 */
export function createMutationSigner(options: MutationSignerOptions): MutationSigner {
  const now = options.now ?? Date.now
  const ttl = options.nonceTtlMs ?? 5 * 60_000
  const maxOutstanding = options.maxOutstandingNonces ?? 10_000
  return {
    async prepare(input) {
      const nonce = randomBytes(16).toString('hex')
      const sha256 = bodySha256(input.body)
      const nowMs = now()
      // Kept one lifetime past expiry, so a late signer is still told `nonce_expired`.
      await options.store.purgeNonces(nowMs - ttl)
      const expiresAtMs = nowMs + ttl
      const issued = await options.store.issueNonce({
        nonce,
        address: normalizeSuiAddress(input.address),
        action: input.action,
        bodyHash: sha256,
        expiresAtMs,
        nowMs,
        maxOutstanding,
      })
      if (issued.status === 'full') return { status: 'full', retryAfterMs: ttl }
      return {
        status: 'prepared',
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
