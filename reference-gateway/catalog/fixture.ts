/**
 * A generated catalog of the spec's full size (41 services, 89 paid endpoints): the default catalog
 * plus deterministic synthetic services on the real families and shapes. A test fixture for routing
 * and discovery at full size.
 *
 * @module
 */
import type { Catalog, FamilyId, PaidEndpoint, Service, Tag, UpstreamMapping } from './catalog.js'
import { paidEntries } from './catalog.js'
import { defaultCatalog } from './default.js'
import type { Shape } from './shapes.js'
import * as shape from './shapes.js'

type Template = {
  family: FamilyId
  suffix: string
  shape: Shape
  price: string
  tags: readonly Tag[]
  summary: string
  upstream: UpstreamMapping
}

const templates: readonly Template[] = [
  {
    family: 'openai-compatible',
    suffix: 'v1/chat/completions',
    shape: shape.chat,
    price: '0.020000',
    tags: ['ai'],
    summary: 'Chat',
    upstream: { operation: 'chat', defaults: { model: 'stub-chat' } },
  },
  {
    family: 'openai',
    suffix: 'v1/embeddings',
    shape: shape.embed,
    price: '0.010000',
    tags: ['ai', 'media'],
    summary: 'Embeddings',
    upstream: { operation: 'embeddings' },
  },
  {
    family: 'firecrawl',
    suffix: 'v1/scrape',
    shape: shape.url,
    price: '0.030000',
    tags: ['web', 'data'],
    summary: 'Scrape a page',
    upstream: { operation: 'scrape' },
  },
  {
    family: 'brave',
    suffix: 'v1/web/search',
    shape: shape.query,
    price: '0.005000',
    tags: ['search'],
    summary: 'Web search',
    upstream: { operation: 'search', params: { kind: 'web' } },
  },
  {
    family: 'gemini',
    suffix: 'v1beta/models/gen-1.0',
    shape: shape.contents,
    price: '0.025000',
    tags: ['ai'],
    summary: 'Generation',
    upstream: { operation: 'generateContent', params: { model: 'gen-1.0' } },
  },
  {
    family: 'fal',
    suffix: 'models/image-1',
    shape: shape.imageTier,
    price: '0.080000',
    tags: ['ai', 'media'],
    summary: 'Image generation',
    upstream: { operation: 'image', params: { model: 'stub/image-1' } },
  },
  {
    family: 'resend',
    suffix: 'v1/emails',
    shape: shape.email,
    price: '0.001000',
    tags: ['communication'],
    summary: 'Send an email',
    upstream: { operation: 'send' },
  },
  {
    family: 'anthropic',
    suffix: 'v1/messages',
    shape: shape.messages,
    price: '1.250000',
    tags: ['ai'],
    summary: 'Messages',
    upstream: { operation: 'messages' },
  },
]

/** Options of {@link generateCatalog}. */
export type GenerateCatalogOptions = {
  /** Number of services. Default 41 (the spec's size). */
  services?: number | undefined
  /** Number of paid endpoints. Default 89 (the spec's size). */
  endpoints?: number | undefined
  /** Upstream base URL of the synthetic services. Default `http://127.0.0.1:9/synthetic`. */
  baseUrl?: string | undefined
}

/**
 * Generates a catalog of the given size (default: the spec's 41 services, 89 paid endpoints): the
 * default catalog first, then synthetic services `svc-12`, `svc-13`, … each on one family/shape
 * template from a fixed rotation, with one or more endpoints. Deterministic.
 *
 * @example
 * ```ts
 * const catalog = generateCatalog() // 41 services, 89 paid endpoints
 * ```
 */
export function generateCatalog(options: GenerateCatalogOptions = {}): Catalog {
  const base = defaultCatalog()
  const wantServices = options.services ?? 41
  const wantEndpoints = options.endpoints ?? 89
  const baseUrl = options.baseUrl ?? 'http://127.0.0.1:9/synthetic'
  const extraServices = wantServices - base.services.length
  const extraEndpoints = wantEndpoints - paidEntries(base).length
  if (extraServices < 0 || extraEndpoints < extraServices) {
    throw new RangeError(
      `generateCatalog: needs at least ${base.services.length} services and one extra endpoint per extra service`,
    )
  }
  const services: Service[] = [...base.services]
  for (let i = 0; i < extraServices; i++) {
    const number = base.services.length + i + 1
    const segment = `svc-${number}`
    const template = templates[i % templates.length] as Template
    const count =
      Math.floor(extraEndpoints / extraServices) + (i < extraEndpoints % extraServices ? 1 : 0)
    const endpoints: PaidEndpoint[] = Array.from({ length: count }, (_, k) => ({
      kind: 'paid',
      method: 'POST',
      path: `/${segment}/e${k + 1}/${template.suffix}`,
      shape: template.shape,
      price: template.price,
      tags: template.tags,
      summary: `${template.summary} (${segment}, #${k + 1})`,
      upstream: template.upstream,
    }))
    services.push({
      segment,
      name: `Synthetic service ${number}`,
      summary: 'Generated for full-size routing and discovery tests',
      tags: template.tags,
      family: template.family,
      upstream: { baseUrl: `${baseUrl}/${segment}`, credential: 'SYNTHETIC_API_KEY' },
      endpoints,
    })
  }
  return { services }
}
