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
import { parseAmount } from '../money.js'
import type { Offer } from '../negotiate.js'
import type { EngineRequest } from './requestView.js'
import { type Answer, challengeAnswer } from './respond.js'
import type { PaidRoute, PaywallOptions } from './types.js'

/** A route as the engine uses it. */
export type PreparedRoute = {
  readonly route: PaidRoute
  readonly price: bigint
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
export class Preparation {
  readonly #options: PaywallOptions
  readonly #routes = new WeakMap<PaidRoute, PreparedRoute>()
  readonly #resources = createRecent<string, string>({ max: remembered, maxKeyLength: longestUrl })
  readonly #keys: readonly MacKey[]
  readonly #offer: Offer
  readonly #now: () => number
  readonly #trustedForwarding: boolean
  /** The route prepared last, checked before the map (most traffic goes to one route at a time). */
  #last: PreparedRoute | undefined

  constructor(options: PaywallOptions) {
    this.#options = options
    this.#keys = keyRing(options.secrets)
    this.#offer = options.offer ?? 'both'
    this.#now = options.now ?? Date.now
    this.#trustedForwarding = options.trustProxy === true && options.publicBaseUrl === undefined
  }

  /** The keys that verify challenges (the first signs). */
  get keys(): readonly MacKey[] {
    return this.#keys
  }

  /**
   * A route, prepared on first sight and then remembered while the route object lives.
   *
   * @throws {PaymentError} `invalid_amount` for a price that is not an amount, `invalid_config` for
   *   terms that do not validate.
   */
  route(route: PaidRoute): PreparedRoute {
    const last = this.#last
    if (last !== undefined && last.route === route) return last
    let prepared = this.#routes.get(route)
    if (prepared === undefined) {
      prepared = this.#prepare(route)
      this.#routes.set(route, prepared)
    }
    this.#last = prepared
    return prepared
  }

  #prepare(route: PaidRoute): PreparedRoute {
    const options = this.#options
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
      limit: route.maxBodyBytes ?? options.maxBodyBytes ?? defaultMaxBodyBytes,
      base,
      byResource: createRecent({ max: remembered }),
    }
  }

  /** A route's terms at a resource URL (prepared once, then remembered). */
  terms(route: PreparedRoute, resource: string): ResourceTerms {
    return (
      route.byResource.get(resource) ??
      route.byResource.remember(resource, {
        terms: prepareTerms({ ...route.base, resource }, { realm: this.#options.realm }),
        current: undefined,
      })
    )
  }

  /**
   * The resource URL of a request, remembered per URL (and forwarded headers, when trusted): the
   * same few URLs repeat, and parsing one costs more than the rest of a 402.
   */
  resource(request: EngineRequest): string {
    const key = this.#trustedForwarding
      ? `${request.url}\n${request.headers.get('x-forwarded-proto')}\n${request.headers.get('x-forwarded-host')}`
      : request.url
    const known = this.#resources.get(key)
    if (known !== undefined) return known
    const options = this.#options
    const url = resourceUrl(request, {
      publicBaseUrl: options.publicBaseUrl,
      trustProxy: options.trustProxy,
    })
    return this.#resources.remember(key, url)
  }

  /** The current plain challenge of a route at a resource (the same until its expiry moves on). */
  challenge(at: ResourceTerms): ChallengePieces {
    return this.#current(at).pieces
  }

  /** The current plain 402 answer of a route at a resource. */
  challengeAnswer(at: ResourceTerms): Answer {
    return this.#current(at).answer
  }

  #current(at: ResourceTerms): NonNullable<ResourceTerms['current']> {
    const now = this.#now()
    const expiresAt = alignedExpiry(now, at.terms.maxTimeoutSeconds)
    const current = at.current
    if (current !== undefined && current.expiresAt === expiresAt) return current
    if (!Number.isFinite(now)) {
      throw new PaymentError('invalid_config', 'The clock is not a valid time.')
    }
    const pieces = assembleChallenge(at.terms, this.#keys[0] as MacKey, expiresAt, this.#offer)
    const next = { expiresAt, pieces, answer: challengeAnswer(pieces) }
    at.current = next
    return next
  }
}
