/**
 * The catalog as the gateway serves it, and its upstreams: the providers' APIs with the configured
 * keys, or the local stub upstreams (every credential then a stub key); upstream base URLs resolved
 * and the configured default body limit applied.
 *
 * @module
 */
import type { StubUpstreams } from 'tollgate/testing'
import type { GatewayLogger } from '../app/app.js'
import { type Catalog, defaultMaxBodyBytes, withUpstreams } from '../catalog/catalog.js'
import { defaultCatalog } from '../catalog/default.js'
import type { GatewayConfig } from '../config.js'
import type { ModelConfig } from '../inference/models.js'
import type { Cleanups } from './shutdown.js'

/** The served catalog and what its upstream calls need. */
export type GatewayUpstreams = {
  /** The catalog as served (upstreams resolved, body limit applied). */
  catalog: Catalog
  /** Provider keys by the catalog's credential name. */
  providerKeys: Record<string, string>
  /** The stub upstreams, when in use. */
  stubs: StubUpstreams | undefined
}

/** What {@link resolveUpstreams} needs. */
export type ResolveUpstreamsOptions = {
  config: GatewayConfig
  /** The catalog before upstream resolution. Default `defaultCatalog()` with the keyless models. */
  catalog: Catalog | undefined
  upstreamMode: 'stub' | 'real'
  /** The inference API's models (their keyless ones are the catalog's open models). */
  models: readonly ModelConfig[]
  logger: GatewayLogger
  cleanups: Cleanups
}

/**
 * Resolves the catalog's upstreams: starts the stub upstreams in stub mode (registering their stop
 * with `cleanups`), else warns of services whose provider keys are missing.
 *
 * @example
 * ```ts
 * const { catalog, providerKeys } = await resolveUpstreams({ config, catalog: undefined, upstreamMode: 'real', models, logger, cleanups })
 * ```
 */
export async function resolveUpstreams(
  options: ResolveUpstreamsOptions,
): Promise<GatewayUpstreams> {
  const { config, upstreamMode, models, logger, cleanups } = options
  const keylessModels = models.filter((m) => m.keyless).map((m) => m.id)

  const base =
    options.catalog ??
    defaultCatalog({
      openMaxTokens: config.openMaxTokens,
      ...(keylessModels.length > 0 ? { openModels: keylessModels as [string, ...string[]] } : {}),
    })
  let stubs: StubUpstreams | undefined
  const providerKeys: Record<string, string> = { ...config.providerKeys }
  let baseUrls: Record<string, string> = { ...config.upstreamUrls }
  if (upstreamMode === 'stub') {
    const { startStubUpstreams } = await import('tollgate/testing')
    stubs = await startStubUpstreams()
    cleanups.push(() => stubs?.stop())
    baseUrls = { ...stubs.baseUrls, ...config.upstreamUrls }
    for (const service of base.services) {
      if (service.upstream.credential !== undefined) {
        providerKeys[service.upstream.credential] ??= 'stub-key'
      }
    }
    for (const model of models) {
      if (model.upstream.credential !== undefined)
        providerKeys[model.upstream.credential] ??= 'stub-key'
    }
  } else {
    const missing = base.services
      .filter(
        (s) =>
          s.servedBy === undefined &&
          s.upstream.credential !== undefined &&
          providerKeys[s.upstream.credential] === undefined,
      )
      .map((s) => `${s.segment} (${s.upstream.credential})`)
    if (missing.length > 0) {
      logger.warn({
        event: 'missing_provider_keys',
        services: missing,
        message: 'calls to these services fail and are refunded until their keys are set',
      })
    }
  }
  const catalog = withBodyLimit(withUpstreams(base, { baseUrls }), config.maxBodyBytes)
  return { catalog, providerKeys, stubs }
}

/** Applies the configured default body limit to endpoints that use the catalog default. */
function withBodyLimit(catalog: Catalog, maxBodyBytes: number): Catalog {
  if (maxBodyBytes === defaultMaxBodyBytes) return catalog
  return {
    services: catalog.services.map((service) => ({
      ...service,
      endpoints: service.endpoints.map((endpoint) =>
        endpoint.kind === 'paid' &&
        (endpoint.maxBodyBytes === undefined || endpoint.maxBodyBytes === defaultMaxBodyBytes)
          ? { ...endpoint, maxBodyBytes }
          : endpoint,
      ),
    })),
  }
}
