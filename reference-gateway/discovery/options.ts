/**
 * What every discovery document needs besides the catalog.
 *
 * @module
 */
import { z } from 'zod'
import type { Shape } from '../catalog/shapes.js'

/** Options of the discovery generators. */
export type DiscoveryOptions = {
  /** The gateway's public base URL, as buyers reach it (`https://gw.example`); no trailing slash needed. */
  publicBaseUrl: string
  /** Recipient address of every payment. */
  payTo: string
  /** Ledger network id, e.g. `sui:mainnet`. */
  network: string
  /** Fully qualified USDC coin type. */
  asset: string
  /** Name shown in the documents. Default `Tollgate gateway`. */
  title?: string | undefined
  /** Seconds a payment requirement stays valid. Default 60. */
  maxTimeoutSeconds?: number | undefined
  /** Whether the escrowed-job routes (`/v1/jobs`) are served (they join the OpenAPI document). */
  jobs?: boolean | undefined
  /**
   * Set when the ledger is the local emulator: the page and `llms.txt` say the payments are test
   * money and show how to pay this gateway (its ledger URL, a `tollgate pay` line).
   */
  testMoney?: { ledgerUrl: string } | undefined
  /** Whether the marketplace's signed routes (`/v1/agent/…`) are served (they join the document). */
  marketplace?: boolean | undefined
}

/** The default title of the discovery documents. */
export const defaultTitle = 'Tollgate gateway'

/** `publicBaseUrl` without trailing slashes. */
export function baseOf(options: DiscoveryOptions): string {
  return options.publicBaseUrl.replace(/\/+$/, '')
}

const schemaCache = new WeakMap<Shape, Record<string, unknown>>()

/**
 * The JSON Schema (2020-12, the OpenAPI 3.1 dialect) of a shape's request body, from its zod schema.
 * Cached per shape; callers get a fresh copy.
 */
export function jsonSchemaOf(shape: Shape): Record<string, unknown> {
  let schema = schemaCache.get(shape)
  if (!schema) {
    const { $schema: _dialect, ...rest } = z.toJSONSchema(shape.schema, {
      io: 'input',
      unrepresentable: 'any',
    }) as Record<string, unknown>
    schema = rest
    schemaCache.set(shape, schema)
  }
  return structuredClone(schema)
}
