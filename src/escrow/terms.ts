/**
 * Escrow terms: what a seller's 402 publishes as `extra.escrow` when a job must be paid through an
 * escrowed job instead of instantly, and the hash that binds a funded job to those terms.
 *
 * @module
 */

import { isValidSuiAddress, normalizeSuiAddress, toHex } from '@mysten/sui/utils'
import { sha256 } from '@noble/hashes/sha2.js'
import { z } from 'zod'

const address = z
  .string()
  .max(66)
  .refine((a) => isValidSuiAddress(normalizeSuiAddress(a)), 'not a Sui address')
  .transform((a) => normalizeSuiAddress(a))

/** Longest review window a job may ask for (30 days), as the ledger module enforces. */
export const MAX_REVIEW_MS = 30 * 24 * 3_600_000

/**
 * The wire schema of escrow terms (`extra.escrow` of a 402, the gateway's job offers). Sizes are
 * bounded; amounts are decimal strings of base units.
 */
export const EscrowTermsSchema = z
  .object({
    /** The package holding the `escrow` module. */
    package: address,
    /** The shared `EscrowConfig` object (fee rate, treasury). */
    config: address,
    /** Who delivers and is paid. */
    seller: address,
    /** The budget in base units (what the buyer locks). */
    amount: z.string().regex(/^[1-9]\d{0,19}$/),
    /** The coin type locked (the network's USDC). */
    asset: z.string().min(3).max(200),
    /** The fee rate in basis points the seller expects the job to carry. */
    feeBps: z.number().int().min(0).max(10_000),
    /** The delivery deadline, ms since the epoch (the ledger's clock). */
    deliverByMs: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
    /** How long the buyer has to accept or reject a delivery, in ms. */
    reviewMs: z.number().int().positive().max(MAX_REVIEW_MS),
    /** What the job is for: the hex SHA-256 of the offer (bound into the job at funding). */
    terms: z.string().regex(/^[0-9a-f]{64}$/),
    /** Where the buyer tells the seller the job id once funded (optional). */
    jobUrl: z.string().url().max(2048).optional(),
  })
  .strict()

/** Escrow terms, validated (addresses normalised). */
export type EscrowTerms = z.infer<typeof EscrowTermsSchema>

/**
 * The hex SHA-256 of an offer's description: what a job's `terms` field commits to.
 *
 * @param offer - any JSON-serialisable description of the work (keys are sorted before hashing).
 * @example
 * const terms = termsHash({ service: 'translate', document: 'sha256:…' })
 */
export function termsHash(offer: unknown): string {
  return toHex(sha256(new TextEncoder().encode(canonicalJson(offer))))
}

/** The hex SHA-256 of delivered bytes: the 32-byte commitment `deliver` posts. */
export function deliveryHash(content: Uint8Array | string): string {
  return toHex(sha256(typeof content === 'string' ? new TextEncoder().encode(content) : content))
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`
  }
  return JSON.stringify(value ?? null)
}
