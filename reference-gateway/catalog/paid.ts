/**
 * The constructor of a paid catalog endpoint, shared by the default catalog's service lists.
 *
 * @module
 */
import type { PaidEndpoint, PathParam, Tag, UpstreamMapping } from './catalog.js'
import { defaultMaxBodyBytes } from './catalog.js'
import type { Shape } from './shapes.js'

/** Extra settings of {@link paid}. */
export type PaidOptions = {
  /** Body size limit in bytes. Default {@link defaultMaxBodyBytes}. */
  maxBodyBytes?: number | undefined
  /** The path's `{name}` parameters. */
  pathParams?: Readonly<Record<string, PathParam>> | undefined
}

/**
 * A priced `POST` endpoint.
 *
 * @example
 * ```ts
 * paid('/deepl/v1/translate', deepl, '0.020000', ['translation'], 'Translate text', { operation: 'translate' })
 * ```
 */
export function paid(
  path: string,
  s: Shape,
  price: string,
  tags: readonly Tag[],
  summary: string,
  upstream: UpstreamMapping,
  options: PaidOptions | number = {},
): PaidEndpoint {
  const settings = typeof options === 'number' ? { maxBodyBytes: options } : options
  return {
    kind: 'paid',
    method: 'POST',
    path,
    shape: s,
    price,
    tags,
    summary,
    upstream,
    maxBodyBytes: settings.maxBodyBytes ?? defaultMaxBodyBytes,
    ...(settings.pathParams === undefined ? {} : { pathParams: settings.pathParams }),
  }
}
