/**
 * The catalog as data: services (a provider path segment, an upstream family, the upstream's base URL
 * and the configuration key of its credential) → endpoints (path, request shape, price, tags,
 * summary, and which operation of the family module serves it). Routes, discovery documents and
 * the catalog page are all generated from this one value.
 *
 * @module
 */
import { formatAmount, parseAmount } from 'tollgate'
import type { Shape } from './shapes.js'
import { validateBody } from './shapes.js'

/** Tags in use: the seed's six and those of the full catalog's other services. */
export const catalogTags = [
  'ai',
  'media',
  'web',
  'data',
  'search',
  'communication',
  'messaging',
  'translation',
  'compute',
  'commerce',
  'finance',
  'security',
  'utility',
] as const
/** A tag of a service or an endpoint. */
export type Tag = (typeof catalogTags)[number]

/** Upstream family modules (`reference-gateway/upstreams/<id>.ts`). */
export const familyIds = [
  'openai',
  'anthropic',
  'gemini',
  'fal',
  'firecrawl',
  'brave',
  'resend',
  'openai-compatible',
  'elevenlabs',
  'openweather',
  'googlemaps',
  'judge0',
  'lob',
  'coingecko',
  'alphavantage',
  'newsapi',
  'deepl',
  'exa',
  'jina',
  'serper',
  'screenshotone',
  'pdfshift',
  'qrserver',
  'replicate',
  'stability',
  'assemblyai',
  'hunter',
  'ipinfo',
  'google-translate',
  'serpapi',
  'pushover',
  'cohere',
  'virustotal',
  'exchangerate',
  'shortio',
  'tinify',
] as const
/** The id of an upstream family module. */
export type FamilyId = (typeof familyIds)[number]

/** Default request-body limit of a paid endpoint: 1 MiB. */
export const defaultMaxBodyBytes = 1024 * 1024

/** The per-call price cap of the catalog (gate d of docs/conformance.md): 5 USDC. */
export const catalogPriceCap = 5_000_000n

/** How an endpoint is served by its family module. */
export type UpstreamMapping = {
  /** Operation id in the family module (`chat`, `embeddings`, `run`, `search`, …). */
  readonly operation: string
  /** Fixed parameters of the operation (fal model slug, Gemini model, Brave search kind). */
  readonly params?: Readonly<Record<string, string>> | undefined
  /** Body fields filled in when the buyer leaves them out (e.g. a default `model`). */
  readonly defaults?: Readonly<Record<string, unknown>> | undefined
}

/** A path parameter (`{voiceId}` in a catalog path): what a value must look like, before payment. */
export type PathParam = {
  /** Whole-value pattern (anchored); a value that does not match is a 400 naming the parameter. */
  readonly pattern: RegExp
  readonly description: string
  /** A value that matches, for examples and discovery documents. */
  readonly example: string
}

/** A priced `POST` endpoint with a JSON body. */
export type PaidEndpoint = {
  readonly kind: 'paid'
  readonly method: 'POST'
  /**
   * Public path, starting with `/<segment>/`. A segment `{name}` is a path parameter (OpenAPI
   * syntax), described in {@link PaidEndpoint.pathParams}; its value reaches the family operation
   * in `params`.
   */
  readonly path: string
  /** The path parameters of {@link PaidEndpoint.path}, by name. */
  readonly pathParams?: Readonly<Record<string, PathParam>> | undefined
  /** The request shape the body is validated against before payment. */
  readonly shape: Shape
  /** Price per call as a USDC decimal string (`"0.020000"`); parse with `parseAmount`. */
  readonly price: string
  readonly tags: readonly Tag[]
  readonly summary: string
  readonly upstream: UpstreamMapping
  /** Body size limit in bytes (413 above it). Default {@link defaultMaxBodyBytes}. */
  readonly maxBodyBytes?: number | undefined
}

/** A free `GET` endpoint (e.g. the open-model list). */
export type FreeEndpoint = {
  readonly kind: 'free'
  readonly method: 'GET'
  readonly path: string
  readonly tags: readonly Tag[]
  readonly summary: string
  readonly upstream: UpstreamMapping
}

/** One endpoint of a service. */
export type Endpoint = PaidEndpoint | FreeEndpoint

/** An upstream provider published under one path segment. */
export type Service = {
  /** Provider path segment: a stable constant named after the public API family. */
  readonly segment: string
  readonly name: string
  readonly summary: string
  readonly tags: readonly Tag[]
  /** Which upstream family module speaks to it. */
  readonly family: FamilyId
  readonly upstream: {
    /** Base URL of the provider's API (overridable from configuration). */
    readonly baseUrl: string
    /**
     * Name of the configuration key holding the provider's credential; absent for a provider that
     * takes none (its family is `keyless`).
     */
    readonly credential?: string | undefined
  }
  readonly endpoints: readonly Endpoint[]
  /**
   * `inference`: the service is this gateway's own private inference API, served in process (its
   * paid route through the paywall, then the inference API's keyless call; its free route the
   * keyless model list). The upstream base URL is then unused. Default: the upstream family.
   */
  readonly servedBy?: 'inference' | undefined
}

/** The whole catalog. */
export type Catalog = { readonly services: readonly Service[] }

/** An endpoint together with its service. */
export type CatalogEntry<E extends Endpoint = Endpoint> = {
  readonly service: Service
  readonly endpoint: E
}

/** Every endpoint of the catalog with its service, in catalog order. */
export function entries(catalog: Catalog): CatalogEntry[] {
  return catalog.services.flatMap((service) =>
    service.endpoints.map((endpoint) => ({ service, endpoint })),
  )
}

/** Every priced endpoint of the catalog with its service, in catalog order. */
export function paidEntries(catalog: Catalog): CatalogEntry<PaidEndpoint>[] {
  return entries(catalog).filter(
    (entry): entry is CatalogEntry<PaidEndpoint> => entry.endpoint.kind === 'paid',
  )
}

/**
 * The OpenAPI `operationId` of a path: slashes and dots turned into hyphens, the leading hyphen
 * dropped (`/gemini/v1beta/models/gemini-2.5-flash` → `gemini-v1beta-models-gemini-2-5-flash`).
 */
export function operationIdOf(path: string): string {
  return path.replace(/[{}]/g, '').replace(/[/.]/g, '-').replace(/^-/, '')
}

const paramSegment = /^\{([A-Za-z][A-Za-z0-9]{0,39})\}$/

/** The names of a path's `{name}` parameters, in order. */
export function pathParamNames(path: string): string[] {
  return path
    .split('/')
    .map((segment) => paramSegment.exec(segment)?.[1])
    .filter((name): name is string => name !== undefined)
}

/** A catalog path as a Hono route (`{voiceId}` → `:voiceId`). */
export function routePathOf(path: string): string {
  return path
    .split('/')
    .map((segment) => segment.replace(paramSegment, ':$1'))
    .join('/')
}

/** A catalog path with each parameter replaced by its example value (for example requests). */
export function examplePathOf(endpoint: Endpoint): string {
  if (endpoint.kind !== 'paid' || endpoint.pathParams === undefined) return endpoint.path
  const params = endpoint.pathParams
  return endpoint.path
    .split('/')
    .map((segment) => {
      const name = paramSegment.exec(segment)?.[1]
      return name === undefined ? segment : encodeURIComponent(params[name]?.example ?? segment)
    })
    .join('/')
}

/**
 * Checks the path parameter values of a request against the endpoint's patterns: the first bad one
 * is named (its value never echoed).
 */
export function validatePathParams(
  endpoint: PaidEndpoint,
  values: Readonly<Record<string, string>>,
): { status: 'valid' } | { status: 'invalid'; field: string; message: string } {
  for (const [name, param] of Object.entries(endpoint.pathParams ?? {})) {
    const value = values[name]
    if (value === undefined || !param.pattern.test(value)) {
      return {
        status: 'invalid',
        field: name,
        message: `path parameter ${name}: ${param.description}`,
      }
    }
  }
  return { status: 'valid' }
}

/** The price of a paid endpoint in base units. */
export function priceOf(endpoint: PaidEndpoint): bigint {
  return parseAmount(endpoint.price)
}

/** The price of a paid endpoint as a USDC decimal with 6 fractional digits (`"0.020000"`). */
export function priceText(endpoint: PaidEndpoint): string {
  return formatAmount(priceOf(endpoint))
}

/**
 * A lookup of `METHOD path` → entry, for routing. Paths are matched exactly (no normalisation: a
 * path that is not byte-for-byte a catalog path is not a catalog route).
 */
export function indexCatalog(catalog: Catalog): ReadonlyMap<string, CatalogEntry> {
  const index = new Map<string, CatalogEntry>()
  for (const entry of entries(catalog)) {
    index.set(`${entry.endpoint.method} ${entry.endpoint.path}`, entry)
  }
  return index
}

/** Options of {@link withUpstreams}. */
export type WithUpstreamsOptions = {
  /** Base URL per service segment (e.g. from configuration, or the stub upstreams). */
  baseUrls: Readonly<Record<string, string>>
}

/** A copy of the catalog with the upstream base URLs of the named segments replaced. */
export function withUpstreams(catalog: Catalog, options: WithUpstreamsOptions): Catalog {
  return {
    services: catalog.services.map((service) => {
      const baseUrl = options.baseUrls[service.segment]
      return baseUrl === undefined
        ? service
        : { ...service, upstream: { ...service.upstream, baseUrl } }
    }),
  }
}

/** Result of {@link validateCatalog}. */
export type CatalogValidation = { status: 'valid' } | { status: 'invalid'; problems: string[] }

/** Options of {@link validateCatalog}. */
export type ValidateCatalogOptions = {
  /** Highest price per call, base units. Default {@link catalogPriceCap} (5 USDC). */
  maxPrice?: bigint | undefined
  /**
   * Operations each family module offers; when given, every endpoint's operation must exist in its
   * service's family.
   */
  operations?: Readonly<Partial<Record<FamilyId, readonly string[]>>> | undefined
}

const segmentPattern = /^[a-z0-9][a-z0-9-]{0,39}$/
const pathPattern =
  /^\/[a-z0-9][a-z0-9-]*(?:\/(?:[a-z0-9](?:[a-z0-9._-]*[a-z0-9])?|\{[A-Za-z][A-Za-z0-9]{0,39}\}))+$/
const credentialPattern = /^[A-Z][A-Z0-9_]*$/

/**
 * Checks a catalog before it is served: unique segments, paths and operation ids; paths under their
 * service's segment with only safe characters (no `..`, `//`, `%`, `:`, backslash or upper case, so
 * no two spellings reach one route); prices that parse, are positive and at most the cap; known tags
 * and families; examples that validate against their shapes; credential names that look like
 * configuration keys; base URLs that are http(s).
 *
 * @example
 * ```ts
 * const result = validateCatalog(defaultCatalog())
 * if (result.status === 'invalid') throw new Error(result.problems.join('\n'))
 * ```
 */
export function validateCatalog(
  catalog: Catalog,
  options: ValidateCatalogOptions = {},
): CatalogValidation {
  const maxPrice = options.maxPrice ?? catalogPriceCap
  const problems: string[] = []
  const segments = new Set<string>()
  const routes = new Set<string>()
  const operationIds = new Set<string>()
  const tagSet = new Set<string>(catalogTags)

  for (const service of catalog.services) {
    const where = `service "${service.segment}"`
    if (!segmentPattern.test(service.segment)) problems.push(`${where}: segment is not [a-z0-9-]`)
    if (segments.has(service.segment)) problems.push(`${where}: duplicate segment`)
    segments.add(service.segment)
    if (!(familyIds as readonly string[]).includes(service.family)) {
      problems.push(`${where}: unknown family "${service.family}"`)
    }
    if (!/^https?:\/\/[^/]/.test(service.upstream.baseUrl)) {
      problems.push(`${where}: upstream base URL is not http(s)`)
    }
    if (
      service.upstream.credential !== undefined &&
      !credentialPattern.test(service.upstream.credential)
    ) {
      problems.push(
        `${where}: credential "${service.upstream.credential}" is not a config key name`,
      )
    }
    if (service.name.trim() === '') problems.push(`${where}: empty name`)
    for (const tag of service.tags)
      if (!tagSet.has(tag)) problems.push(`${where}: unknown tag "${tag}"`)
    if (service.endpoints.length === 0) problems.push(`${where}: no endpoints`)

    for (const endpoint of service.endpoints) {
      const at = `${endpoint.method} ${endpoint.path}`
      if (
        !pathPattern.test(endpoint.path) ||
        endpoint.path.split('/').some((s) => /^\.+$/.test(s))
      ) {
        problems.push(`${at}: path has characters outside [a-z0-9._-] or an empty/dot segment`)
      }
      if (!endpoint.path.startsWith(`/${service.segment}/`)) {
        problems.push(`${at}: path is not under /${service.segment}/`)
      }
      if (routes.has(at)) problems.push(`${at}: duplicate route`)
      routes.add(at)
      const operationId = operationIdOf(endpoint.path)
      if (operationIds.has(operationId))
        problems.push(`${at}: duplicate operationId ${operationId}`)
      operationIds.add(operationId)
      if (endpoint.summary.trim() === '') problems.push(`${at}: empty summary`)
      if (endpoint.tags.length === 0) problems.push(`${at}: no tags`)
      for (const tag of endpoint.tags)
        if (!tagSet.has(tag)) problems.push(`${at}: unknown tag "${tag}"`)
      const known = options.operations?.[service.family]
      if (known && !known.includes(endpoint.upstream.operation)) {
        problems.push(
          `${at}: family ${service.family} has no operation "${endpoint.upstream.operation}"`,
        )
      }
      if (endpoint.kind === 'paid') {
        const names = pathParamNames(endpoint.path)
        const declared = Object.keys(endpoint.pathParams ?? {})
        if (names.sort().join() !== declared.sort().join()) {
          problems.push(`${at}: path parameters and pathParams differ`)
        }
        for (const [name, param] of Object.entries(endpoint.pathParams ?? {})) {
          if (!param.pattern.source.startsWith('^') || !param.pattern.source.endsWith('$')) {
            problems.push(`${at}: the pattern of {${name}} is not anchored`)
          } else if (!param.pattern.test(param.example)) {
            problems.push(`${at}: the example of {${name}} does not match its pattern`)
          }
        }
        let price: bigint | undefined
        try {
          price = parseAmount(endpoint.price)
        } catch {
          problems.push(`${at}: price "${endpoint.price}" is not a positive USDC decimal`)
        }
        if (price !== undefined && price > maxPrice) {
          problems.push(
            `${at}: price ${endpoint.price} is above the cap of ${formatAmount(maxPrice)}`,
          )
        }
        if (validateBody(endpoint.shape, endpoint.shape.example).status !== 'valid') {
          problems.push(`${at}: the example of shape ${endpoint.shape.name} does not validate`)
        }
        const limit = endpoint.maxBodyBytes
        if (limit !== undefined && (!Number.isSafeInteger(limit) || limit < 1024)) {
          problems.push(`${at}: maxBodyBytes must be an integer ≥ 1024`)
        }
      }
    }
  }
  return problems.length === 0 ? { status: 'valid' } : { status: 'invalid', problems }
}
