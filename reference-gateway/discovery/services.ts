/**
 * `/api/services`: the catalog as JSON for programs — services, endpoints, prices (decimal and base
 * units), tags, request schemas and example bodies.
 *
 * @module
 */
import { type Catalog, operationIdOf, priceOf, priceText } from '../catalog/catalog.js'
import { baseOf, type DiscoveryOptions, jsonSchemaOf } from './options.js'

/** One endpoint in `/api/services`. */
export type ServiceEndpointListing = {
  method: 'POST' | 'GET'
  path: string
  url: string
  operationId: string
  summary: string
  tags: string[]
  /** `null` for a free endpoint. */
  price: string | null
  /** Base units, `null` for a free endpoint. */
  amount: string | null
  shape?: string
  inputSchema?: Record<string, unknown>
  example?: Record<string, unknown>
}

/** One service in `/api/services`. */
export type ServiceListing = {
  segment: string
  name: string
  summary: string
  tags: string[]
  endpoints: ServiceEndpointListing[]
}

/** The `/api/services` document. */
export type ServicesDocument = {
  network: string
  asset: string
  payTo: string
  protocols: ['mpp', 'x402']
  totals: { services: number; endpoints: number; paidEndpoints: number }
  services: ServiceListing[]
}

/**
 * Generates the `/api/services` document.
 *
 * @example
 * ```ts
 * const doc = servicesDocument(catalog, { publicBaseUrl, payTo, network: 'sui:mainnet', asset })
 * ```
 */
export function servicesDocument(catalog: Catalog, options: DiscoveryOptions): ServicesDocument {
  const base = baseOf(options)
  const services = catalog.services.map((service) => ({
    segment: service.segment,
    name: service.name,
    summary: service.summary,
    tags: [...service.tags],
    endpoints: service.endpoints.map((endpoint): ServiceEndpointListing => {
      const common = {
        method: endpoint.method,
        path: endpoint.path,
        url: `${base}${endpoint.path}`,
        operationId: operationIdOf(endpoint.path),
        summary: endpoint.summary,
        tags: [...endpoint.tags],
      }
      if (endpoint.kind === 'free') return { ...common, price: null, amount: null }
      return {
        ...common,
        price: priceText(endpoint),
        amount: priceOf(endpoint).toString(),
        shape: endpoint.shape.name,
        inputSchema: jsonSchemaOf(endpoint.shape),
        example: { ...endpoint.shape.example },
      }
    }),
  }))
  const all = services.flatMap((s) => s.endpoints)
  return {
    network: options.network,
    asset: options.asset,
    payTo: options.payTo,
    protocols: ['mpp', 'x402'],
    totals: {
      services: services.length,
      endpoints: all.length,
      paidEndpoints: all.filter((e) => e.price !== null).length,
    },
    services,
  }
}
