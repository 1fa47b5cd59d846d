/**
 * `/.well-known/x402.json`: every paid resource with the x402 payment requirement a buyer will be
 * asked for (without the per-challenge `extra.challengeId`), plus links to the other documents.
 *
 * @module
 */
import { type Catalog, paidEntries, priceOf, priceText } from '../catalog/catalog.js'
import { baseOf, type DiscoveryOptions, defaultTitle } from './options.js'

/** One payment requirement as listed in the manifest (x402 v1 `accepts[]` entry). */
export type ManifestRequirement = {
  scheme: 'exact'
  network: string
  maxAmountRequired: string
  resource: string
  description: string
  mimeType: 'application/json'
  payTo: string
  maxTimeoutSeconds: number
  asset: string
}

/** One paid resource of the manifest. */
export type ManifestResource = {
  resource: string
  method: 'POST'
  description: string
  tags: string[]
  price: string
  accepts: ManifestRequirement[]
}

/** The x402 manifest. */
export type X402Manifest = {
  x402Version: 1
  name: string
  network: string
  asset: string
  payTo: string
  documents: { openapi: string; services: string; llms: string }
  resources: ManifestResource[]
}

/**
 * Generates the x402 manifest.
 *
 * @example
 * ```ts
 * const manifest = x402Manifest(catalog, { publicBaseUrl, payTo, network: 'sui:mainnet', asset })
 * ```
 */
export function x402Manifest(catalog: Catalog, options: DiscoveryOptions): X402Manifest {
  const base = baseOf(options)
  return {
    x402Version: 1,
    name: options.title ?? defaultTitle,
    network: options.network,
    asset: options.asset,
    payTo: options.payTo,
    documents: {
      openapi: `${base}/openapi.json`,
      services: `${base}/api/services`,
      llms: `${base}/llms.txt`,
    },
    resources: paidEntries(catalog).map(({ endpoint }) => {
      const resource = `${base}${endpoint.path}`
      return {
        resource,
        method: 'POST',
        description: endpoint.summary,
        tags: [...endpoint.tags],
        price: priceText(endpoint),
        accepts: [
          {
            scheme: 'exact',
            network: options.network,
            maxAmountRequired: priceOf(endpoint).toString(),
            resource,
            description: endpoint.summary,
            mimeType: 'application/json',
            payTo: options.payTo,
            maxTimeoutSeconds: options.maxTimeoutSeconds ?? 60,
            asset: options.asset,
          },
        ],
      }
    }),
  }
}
