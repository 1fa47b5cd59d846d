/**
 * The OpenAPI 3.1.0 document of the gateway (API version 1.0.0), generated from the catalog: every
 * priced operation is a `POST` with its request-body schema from the zod shape, responses 200 and 402
 * only, and `x-payment-info` (spec §2.4).
 *
 * @module
 */
import { type Catalog, catalogTags, entries, operationIdOf, priceText } from '../catalog/catalog.js'
import { baseOf, type DiscoveryOptions, defaultTitle, jsonSchemaOf } from './options.js'

/** The `x-payment-info` extension of a priced operation. */
export type PaymentInfo = {
  pricingMode: 'fixed'
  /** USDC decimal with 6 fractional digits (`"0.020000"`). */
  price: string
  protocols: ['mpp', 'x402']
  x402: { scheme: 'exact'; network: string; asset: string; payTo: string }
}

/** An OpenAPI document (loosely typed: it is generated, then validated in tests). */
export type OpenApiDocument = {
  openapi: '3.1.0'
  info: { title: string; version: '1.0.0'; description: string }
  servers: { url: string }[]
  tags: { name: string; description: string }[]
  paths: Record<string, Record<string, Record<string, unknown>>>
}

const tagDescriptions: Record<string, string> = {
  ai: 'AI models: chat, embeddings, generation',
  media: 'Images, audio and transcription',
  web: 'Web pages and sites',
  data: 'Structured data extraction',
  search: 'Search engines',
  communication: 'E-mail',
}

/**
 * Generates the OpenAPI document.
 *
 * @example
 * ```ts
 * const doc = openApiDocument(catalog, { publicBaseUrl, payTo, network: 'sui:mainnet', asset })
 * ```
 */
export function openApiDocument(catalog: Catalog, options: DiscoveryOptions): OpenApiDocument {
  const paths: OpenApiDocument['paths'] = {}
  for (const { endpoint } of entries(catalog)) {
    const common = {
      operationId: operationIdOf(endpoint.path),
      summary: endpoint.summary,
      tags: [...endpoint.tags],
    }
    const ok = {
      description: 'OK',
      content: { 'application/json': { schema: { type: 'object' } } },
    }
    const item = paths[endpoint.path] ?? {}
    paths[endpoint.path] = item
    if (endpoint.kind === 'free') {
      item.get = { ...common, responses: { '200': ok } }
      continue
    }
    const paymentInfo: PaymentInfo = {
      pricingMode: 'fixed',
      price: priceText(endpoint),
      protocols: ['mpp', 'x402'],
      x402: {
        scheme: 'exact',
        network: options.network,
        asset: options.asset,
        payTo: options.payTo,
      },
    }
    item.post = {
      ...common,
      description: `${endpoint.shape.description}. Price ${paymentInfo.price} USDC per call.`,
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: jsonSchemaOf(endpoint.shape),
            example: endpoint.shape.example,
          },
        },
      },
      responses: {
        '200': ok,
        '402': { description: 'Payment Required' },
      },
      'x-payment-info': paymentInfo,
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: options.title ?? defaultTitle,
      version: '1.0.0',
      description:
        'Paid endpoints in front of AI, web-data, search and e-mail APIs, paid per request in USDC ' +
        `on ${options.network} over HTTP 402 (x402 body or MPP header). No accounts, no API keys. ` +
        `Usage guide: ${baseOf(options)}/llms.txt`,
    },
    servers: [{ url: baseOf(options) }],
    tags: catalogTags.map((name) => ({ name, description: tagDescriptions[name] ?? name })),
    paths,
  }
}
