/**
 * Signing in to the owner's console with a Sui wallet. The page asks for a nonce for an address; the
 * gateway keeps it (single use, short-lived) and answers the exact text to sign as a Sui personal
 * message:
 *
 * ```
 * gw.example wants you to sign in to the Tollgate console with your Sui account:
 * 0x<64 hex>
 *
 * URI: https://gw.example/console
 * Nonce: <32 hex>
 * Issued At: 2026-11-27T12:00:00.000Z
 * Expiration Time: 2026-11-27T12:05:00.000Z
 * ```
 *
 * The gateway rebuilds that text from its own row (never from the page), verifies the wallet's
 * signature over it for that address (`@mysten/sui/verify`), then consumes the nonce — once, atomic
 * across processes, refused after its expiry. A sign-in is a row of the relational store
 * (`console_sign_ins`), found by the SHA-256 of a random token that only the browser holds, in an
 * HttpOnly cookie; signing out deletes the row.
 *
 * @module
 */
import { createHash, randomBytes } from 'node:crypto'
import type { ClientWithCoreApi } from '@mysten/sui/client'
import { normalizeSuiAddress } from '@mysten/sui/utils'
import { verifyPersonalMessageSignature } from '@mysten/sui/verify'
import type { Kysely } from 'kysely'
import { toBigint } from '../db/database.js'
import type { GatewaySchema } from '../db/schema.js'

/** What the sign-in message names besides the nonce and times. */
export type SignInMessageFields = {
  /** The gateway's host (with its port, when not the default), e.g. `gw.example`. */
  domain: string
  /** The console's URL, e.g. `https://gw.example/console`. */
  uri: string
  /** The signer's address, normalised. */
  address: string
  nonce: string
  issuedAtMs: number
  expiresAtMs: number
}

/**
 * The exact text an owner signs to sign in (see the module documentation).
 *
 * @example
 * ```ts
 * const text = signInMessage({ domain: 'gw.example', uri: 'https://gw.example/console', address, nonce, issuedAtMs, expiresAtMs })
 * ```
 */
export function signInMessage(fields: SignInMessageFields): string {
  return [
    `${fields.domain} wants you to sign in to the Tollgate console with your Sui account:`,
    fields.address,
    '',
    `URI: ${fields.uri}`,
    `Nonce: ${fields.nonce}`,
    `Issued At: ${new Date(fields.issuedAtMs).toISOString()}`,
    `Expiration Time: ${new Date(fields.expiresAtMs).toISOString()}`,
  ].join('\n')
}

/** Why a sign-in is refused. */
export type SignInRefusal = 'unknown_nonce' | 'nonce_used' | 'nonce_expired' | 'invalid_signature'

/** A signed-in owner. */
export type SignedIn = { address: string; expiresAtMs: number }

/** Options of {@link createSignIns}. */
export type SignInsOptions = {
  /** The console's public base URL (its origin names the domain and URI of the message). */
  publicBaseUrl: string
  /** How long a nonce may be signed and used. Default 5 minutes. */
  nonceTtlMs?: number | undefined
  /** How long a sign-in lasts. Default 1 hour. Security: how long a stolen cookie is worth anything. */
  signInTtlMs?: number | undefined
  /**
   * Nonces outstanding (issued, unused, unexpired) at most, all addresses together; past it,
   * `prepare` answers `full`. Default 10 000. Security: the bound on the rows anonymous callers can
   * make the gateway keep.
   */
  maxOutstandingNonces?: number | undefined
  /**
   * A full node the signatures of zkLogin accounts are checked with (`verifyZkLoginSignature`);
   * without it only key-pair and multisig accounts can sign in.
   */
  client?: ClientWithCoreApi | undefined
  /** Clock, ms. Default `Date.now`. */
  now?: (() => number) | undefined
}

/** The console's sign-ins. */
export type SignIns = {
  /**
   * A new nonce for `address` and the exact message to sign, or `full` when the outstanding nonces
   * are at their cap. Expired nonces and sign-ins are deleted first.
   */
  prepare(
    address: string,
  ): Promise<
    | { status: 'prepared'; nonce: string; message: string; expiresAtMs: number }
    | { status: 'full'; retryAfterMs: number }
  >
  /**
   * Verifies `signature` over the message of `nonce` by the address it was issued to, consumes the
   * nonce, and records a sign-in. `token` goes in the cookie and nowhere else. Nothing is consumed
   * when the signature does not hold.
   */
  signIn(input: {
    nonce: string
    signature: string
  }): Promise<
    | { status: 'signed_in'; token: string; address: string; expiresAtMs: number }
    | { status: 'refused'; reason: SignInRefusal }
  >
  /** The sign-in a cookie's token names, unless it expired or was signed out. */
  find(token: string): Promise<SignedIn | undefined>
  /** Ends the sign-in (deletes its row). */
  signOut(token: string): Promise<void>
}

const tokenPattern = /^[A-Za-z0-9_-]{43}$/
const noncePattern = /^[0-9a-f]{32}$/

function tokenHash(token: string): string {
  return createHash('sha256').update(token).digest('hex')
}

/**
 * The sign-ins over the gateway's relational store.
 *
 * @example
 * ```ts
 * const signIns = createSignIns(database.db, { publicBaseUrl: 'https://gw.example' })
 * const prepared = await signIns.prepare(address) // the wallet signs prepared.message
 * ```
 */
export function createSignIns(db: Kysely<GatewaySchema>, options: SignInsOptions): SignIns {
  const now = options.now ?? Date.now
  const nonceTtl = options.nonceTtlMs ?? 5 * 60_000
  const signInTtl = options.signInTtlMs ?? 60 * 60_000
  const maxOutstanding = options.maxOutstandingNonces ?? 10_000
  const origin = new URL(options.publicBaseUrl)
  const domain = origin.host
  const uri = `${origin.origin}/console`

  async function purge(nowMs: number): Promise<void> {
    // Nonces are kept one lifetime past expiry, so a late signer is told `nonce_expired`.
    await db
      .deleteFrom('console_nonces')
      .where('expires_at_ms', '<', BigInt(nowMs - nonceTtl))
      .execute()
    await db.deleteFrom('console_sign_ins').where('expires_at_ms', '<', BigInt(nowMs)).execute()
  }

  return {
    async prepare(signer) {
      const address = normalizeSuiAddress(signer)
      const nowMs = now()
      await purge(nowMs)
      const outstanding = await db
        .selectFrom('console_nonces')
        .select((eb) => eb.fn.countAll<string | number | bigint>().as('count'))
        .where('used_at_ms', 'is', null)
        .where('expires_at_ms', '>', BigInt(nowMs))
        .executeTakeFirst()
      if (Number(outstanding?.count ?? 0) >= maxOutstanding) {
        return { status: 'full', retryAfterMs: nonceTtl }
      }
      const nonce = randomBytes(16).toString('hex')
      const expiresAtMs = nowMs + nonceTtl
      await db
        .insertInto('console_nonces')
        .values({
          nonce,
          address,
          issued_at_ms: BigInt(nowMs),
          expires_at_ms: BigInt(expiresAtMs),
          used_at_ms: null,
        })
        .execute()
      const message = signInMessage({
        domain,
        uri,
        address,
        nonce,
        issuedAtMs: nowMs,
        expiresAtMs,
      })
      return { status: 'prepared', nonce, message, expiresAtMs }
    },

    async signIn(input) {
      if (!noncePattern.test(input.nonce)) return { status: 'refused', reason: 'unknown_nonce' }
      const row = await db
        .selectFrom('console_nonces')
        .selectAll()
        .where('nonce', '=', input.nonce)
        .executeTakeFirst()
      if (row === undefined) return { status: 'refused', reason: 'unknown_nonce' }
      const message = signInMessage({
        domain,
        uri,
        address: row.address,
        nonce: row.nonce,
        issuedAtMs: Number(toBigint(row.issued_at_ms)),
        expiresAtMs: Number(toBigint(row.expires_at_ms)),
      })
      try {
        await verifyPersonalMessageSignature(new TextEncoder().encode(message), input.signature, {
          address: row.address,
          ...(options.client === undefined ? {} : { client: options.client }),
        })
      } catch {
        return { status: 'refused', reason: 'invalid_signature' }
      }
      const nowMs = now()
      const consumed = await db
        .updateTable('console_nonces')
        .set({ used_at_ms: BigInt(nowMs) })
        .where('nonce', '=', input.nonce)
        .where('used_at_ms', 'is', null)
        .where('expires_at_ms', '>', BigInt(nowMs))
        .executeTakeFirst()
      if (consumed.numUpdatedRows !== 1n) {
        // Read after the failed update: a race only changes which reason is given.
        const after = await db
          .selectFrom('console_nonces')
          .select('used_at_ms')
          .where('nonce', '=', input.nonce)
          .executeTakeFirst()
        const reason =
          after === undefined
            ? 'nonce_expired'
            : after.used_at_ms !== null
              ? 'nonce_used'
              : 'nonce_expired'
        return { status: 'refused', reason }
      }
      const token = randomBytes(32).toString('base64url')
      const expiresAtMs = nowMs + signInTtl
      await db
        .insertInto('console_sign_ins')
        .values({
          token_hash: tokenHash(token),
          address: row.address,
          created_at_ms: BigInt(nowMs),
          expires_at_ms: BigInt(expiresAtMs),
        })
        .execute()
      return { status: 'signed_in', token, address: row.address, expiresAtMs }
    },

    async find(token) {
      if (!tokenPattern.test(token)) return undefined
      const row = await db
        .selectFrom('console_sign_ins')
        .select(['address', 'expires_at_ms'])
        .where('token_hash', '=', tokenHash(token))
        .executeTakeFirst()
      if (row === undefined) return undefined
      const expiresAtMs = Number(toBigint(row.expires_at_ms))
      return expiresAtMs > now() ? { address: row.address, expiresAtMs } : undefined
    },

    async signOut(token) {
      if (!tokenPattern.test(token)) return
      await db.deleteFrom('console_sign_ins').where('token_hash', '=', tokenHash(token)).execute()
    },
  }
}
