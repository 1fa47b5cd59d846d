/**
 * The OpenAPI 3.1.0 document of the gateway (API version 1.0.0), generated from the catalog: every
 * priced operation is a `POST` with its request-body schema from the zod shape, responses 200 and 402
 * only, and `x-payment-info` (docs/marketplace.md, "Discovery for agents").
 *
 * @module
 */
import { type Catalog, catalogTags, entries, operationIdOf, priceText } from '../catalog/catalog.js'
import { jobPaths } from '../jobs/openapi.js'
import { marketplacePaths } from '../marketplace/openapi.js'
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
  components?: { securitySchemes: Record<string, Record<string, unknown>> }
}

/** Operations served beside the catalog (the private inference API), merged into the document. */
export type ExtraOperations = {
  paths: OpenApiDocument['paths']
  securitySchemes?: Record<string, Record<string, unknown>> | undefined
}

const tagDescriptions: Record<string, string> = {
  ai: 'AI models: chat, embeddings, generation',
  media: 'Images, audio and transcription',
  web: 'Web pages and sites',
  data: 'Structured data: extraction, weather, maps, markets, news',
  search: 'Search engines',
  communication: 'E-mail',
  messaging: 'Push notifications',
  translation: 'Machine translation',
  compute: 'Running code',
  commerce: 'Printed mail and addresses',
  finance: 'Exchange rates',
  security: 'URL and file reputation',
  utility: 'Short links and image compression',
}

/**
 * Generates the OpenAPI document. `extra` adds operations served beside the catalog (the private
 * inference API's `/v1/…` paths) and their security schemes.
 *
 * @example
 * ```ts
 * const doc = openApiDocument(catalog, { publicBaseUrl, payTo, network: 'sui:mainnet', asset })
 * ```
 */
export function openApiDocument(
  catalog: Catalog,
  options: DiscoveryOptions,
  extra?: ExtraOperations,
): OpenApiDocument {
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
    const parameters = Object.entries(endpoint.pathParams ?? {}).map(([name, param]) => ({
      name,
      in: 'path',
      required: true,
      description: param.description,
      schema: { type: 'string', pattern: param.pattern.source },
      example: param.example,
    }))
    item.post = {
      ...common,
      ...(parameters.length === 0 ? {} : { parameters }),
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
  if (options.jobs) Object.assign(paths, jobPaths())
  if (options.marketplace) Object.assign(paths, marketplacePaths())
  for (const [path, item] of Object.entries(extra?.paths ?? {})) {
    paths[path] = { ...paths[path], ...item }
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
    tags: [
      ...catalogTags.map((name) => ({ name, description: tagDescriptions[name] ?? name })),
      ...(options.jobs
        ? [{ name: 'jobs', description: 'Escrowed agent-to-agent jobs and their reviews' }]
        : []),
      ...(options.marketplace
        ? [{ name: 'marketplace', description: 'Seller listings and signed catalog mutations' }]
        : []),
    ],
    paths,
    ...(extra?.securitySchemes === undefined
      ? {}
      : { components: { securitySchemes: extra.securitySchemes } }),
  }
}
