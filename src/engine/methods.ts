/**
 * The payment methods of a route, as the engine uses them: which are enabled (in the order the 402
 * lists them), and the order credentials are looked for in a request — every known method, enabled
 * or not, so that a credential of a method the route does not take is refused by name rather than
 * treated as no payment.
 *
 * @module
 * @internal
 */

import { PaymentError } from '../errors.js'
import { builtInMethods } from '../methods/index.js'
import type { PaymentMethod } from '../methods/types.js'
import type { HeaderLookup } from './requestView.js'

/** A route's methods; see the module's description. */
export type RouteMethods = {
  /** The methods offered, in the 402's order. */
  readonly enabled: readonly PaymentMethod[]
  /**
   * Every known method in the order its credential is looked for: methods whose buyer has already
   * moved money first (ignoring such a credential would keep money spent), then the others; in
   * each group the seller's own methods first, then the built-in ones, each in the order given.
   */
  readonly lookup: readonly { readonly method: PaymentMethod; readonly enabled: boolean }[]
}

/** A credential found in a request, and its method. */
export type Presented = {
  readonly method: PaymentMethod
  /** The raw credential (untrusted). */
  readonly credential: string
}

/**
 * The methods of a route that offers `enabled`.
 *
 * @throws {PaymentError} `invalid_config` when none is enabled or two share a name.
 */
export function routeMethods(enabled: readonly PaymentMethod[]): RouteMethods {
  if (enabled.length === 0) {
    throw new PaymentError('invalid_config', 'A paid route needs at least one payment method.')
  }
  const names = new Set(enabled.map((m) => m.name))
  if (names.size !== enabled.length) {
    throw new PaymentError('invalid_config', 'Two payment methods of one route share a name.')
  }
  // A method of the seller's own is asked before the built-in ones: it may claim a credential a
  // built-in method would also take (a session's `Payment` credential is also MPP's).
  const builtIn = new Set<PaymentMethod>(builtInMethods)
  const known = [
    ...enabled.filter((m) => !builtIn.has(m)),
    ...enabled.filter((m) => builtIn.has(m)),
    ...builtInMethods.filter((m) => !names.has(m.name)),
  ]
  const lookup = [
    ...known.filter((m) => m.buyerSubmits),
    ...known.filter((m) => !m.buyerSubmits),
  ].map((method) => ({ method, enabled: names.has(method.name) }))
  return { enabled, lookup }
}

/** The credential a request presents (the first found in lookup order), or undefined for none. */
export function presentedPayment(
  headers: HeaderLookup,
  methods: RouteMethods,
): (Presented & { readonly enabled: boolean }) | undefined {
  for (const { method, enabled } of methods.lookup) {
    const credential = method.server.classify(headers)
    if (credential !== undefined) return { method, credential, enabled }
  }
  return undefined
}

/** The refusal of a credential whose method the route does not take. */
export function notTaken(method: PaymentMethod, methods: RouteMethods): PaymentError {
  const labels = [...new Set(methods.enabled.map((m) => m.server.label))]
  return new PaymentError(
    method.server.unsupportedCode,
    `This route takes ${labels.join(' or ')} payments only.`,
  )
}
