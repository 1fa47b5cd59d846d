/**
 * What one engine prepares once and remembers, all of it per engine instance and bounded: each
 * route's price and terms (validated when the route is first seen), the terms per resource URL, the
 * resource URL of a request URL, and the current plain 402 of each (route, resource) until its
 * expiry bucket moves on. The keys of the challenges are prepared when the engine is made.
 *
 * @module
 * @internal
 */

import { defaultMaxBodyBytes } from '../body.js'
import { type ChallengePieces, resourceUrl } from '../challenge.js'
import { PaymentError } from '../errors.js'
import { alignedExpiry, keyRing, type MacKey } from '../internal/challengeId.js'
import { assembleChallenge } from '../internal/challenges.js'
import { createRecent, type Recent } from '../internal/recent.js'
import { type PreparedTerms, prepareTerms, type RouteTerms } from '../internal/terms.js'
import { methodsFor } from '../methods/index.js'
import { parseAmount } from '../money.js'
import { type RouteMethods, routeMethods } from './methods.js'
import type { EngineRequest } from './requestView.js'
import { type Answer, challengeAnswer } from './respond.js'
import type { PaidRoute, PaywallOptions } from './types.js'

/** A route as the engine uses it. */
export type PreparedRoute = {
  readonly route: PaidRoute
  readonly price: bigint
  /** The payment methods it takes. */
  readonly methods: RouteMethods
  /** Body size limit in bytes. */
  readonly limit: number
  readonly base: Omit<RouteTerms, 'resource'>
  /** The route's terms per resource URL. */
  readonly byResource: Recent<string, ResourceTerms>
}

/** A route's terms at one resource URL, and its current plain 402. */
export type ResourceTerms = {
  readonly terms: PreparedTerms
  /** The plain 402 for the expiry `expiresAt` (replaced when the expiry bucket moves on). */
  current:
    | { readonly expiresAt: number; readonly pieces: ChallengePieces; readonly answer: Answer }
    | undefined
}

/** How many resource URLs (per route, and request URLs per engine) are remembered. */
const remembered = 1024
/** Longest request URL remembered (longer ones are worked out each time). */
const longestUrl = 1024

/** The preparation of one engine; see the module's description. */
export type Preparation = {
  /** The keys that verify challenges (the first signs). */
  readonly keys: readonly MacKey[]
  /**
   * A route, prepared on first sight and then remembered while the route object lives.
   *
   * @throws {PaymentError} `invalid_amount` for a price that is not an amount, `invalid_config` for
   *   terms that do not validate.
   */
  route(route: PaidRoute): PreparedRoute
  /** A route's terms at a resource URL (prepared once, then remembered). */
  terms(route: PreparedRoute, resource: string): ResourceTerms
  /**
   * The resource URL of a request, remembered per URL (and forwarded headers, when trusted): the
   * same few URLs repeat, and parsing one costs more than the rest of a 402.
   */
  resource(request: EngineRequest): string
  /** The current plain challenge of a route at a resource (the same until its expiry moves on). */
  challenge(route: PreparedRoute, at: ResourceTerms): ChallengePieces
  /** The current plain 402 answer of a route at a resource. */
  challengeAnswer(route: PreparedRoute, at: ResourceTerms): Answer
}

/** Prepares an engine's options; see the module's description. */
export function createPreparation(options: PaywallOptions): Preparation {
  const routes = new WeakMap<PaidRoute, PreparedRoute>()
  const resources = createRecent<string, string>({ max: remembered, maxKeyLength: longestUrl })
  const keys = keyRing(options.secrets)
  /** The paywall's methods (the default of every route). */
  const methods = routeMethods(options.methods ?? methodsFor(options.offer))
  const now = options.now ?? Date.now
  const trustedForwarding = options.trustProxy === true && options.publicBaseUrl === undefined
  /** The route prepared last, checked before the map (most traffic goes to one route at a time). */
  let last: PreparedRoute | undefined

  function prepare(route: PaidRoute): PreparedRoute {
    const price = parseAmount(route.price)
    const base: Omit<RouteTerms, 'resource'> = {
      price,
      payTo: options.payTo,
      ...(options.asset === undefined ? {} : { asset: options.asset }),
      ...(options.network === undefined ? {} : { network: options.network }),
      ...(route.description === undefined ? {} : { description: route.description }),
      ...(route.mimeType === undefined ? {} : { mimeType: route.mimeType }),
      ...(route.maxTimeoutSeconds === undefined
        ? {}
        : { maxTimeoutSeconds: route.maxTimeoutSeconds }),
      ...(route.outputSchema === undefined ? {} : { outputSchema: route.outputSchema }),
    }
    // Validated here, with any resource: configuration errors surface on first sight of the route.
    prepareTerms({ ...base, resource: 'http://localhost/' }, { realm: options.realm })
    return {
      route,
      price,
      methods: route.methods === undefined ? methods : routeMethods(route.methods),
      limit: route.maxBodyBytes ?? options.maxBodyBytes ?? defaultMaxBodyBytes,
      base,
      byResource: createRecent({ max: remembered }),
    }
  }

  function current(route: PreparedRoute, at: ResourceTerms): NonNullable<ResourceTerms['current']> {
    const time = now()
    const expiresAt = alignedExpiry(time, at.terms.maxTimeoutSeconds)
    const known = at.current
    if (known !== undefined && known.expiresAt === expiresAt) return known
    if (!Number.isFinite(time)) {
      throw new PaymentError('invalid_config', 'The clock is not a valid time.')
    }
    const pieces = assembleChallenge(at.terms, keys[0] as MacKey, expiresAt, route.methods.enabled)
    const next = { expiresAt, pieces, answer: challengeAnswer(pieces) }
    at.current = next
    return next
  }

  return {
    keys,
    route(route) {
      if (last !== undefined && last.route === route) return last
      let prepared = routes.get(route)
      if (prepared === undefined) {
        prepared = prepare(route)
        routes.set(route, prepared)
      }
      last = prepared
      return prepared
    },
    terms(route, resource) {
      return (
        route.byResource.get(resource) ??
        route.byResource.remember(resource, {
          terms: prepareTerms({ ...route.base, resource }, { realm: options.realm }),
          current: undefined,
        })
      )
    },
    resource(request) {
      const key = trustedForwarding
        ? `${request.url}\n${request.headers.get('x-forwarded-proto')}\n${request.headers.get('x-forwarded-host')}`
        : request.url
      const known = resources.get(key)
      if (known !== undefined) return known
      const url = resourceUrl(request, {
        publicBaseUrl: options.publicBaseUrl,
        trustProxy: options.trustProxy,
      })
      return resources.remember(key, url)
    },
    challenge: (route, at) => current(route, at).pieces,
    challengeAnswer: (route, at) => current(route, at).answer,
  }
}
