/**
 * The start-up check of a seller's options: a paywall that cannot take a payment refuses to be
 * created, with a coded {@link PaymentError} naming the option, instead of answering every priced
 * request with a 500 later.
 *
 * @module
 */
import { PaymentError } from '../errors.js'
import { keyRing } from '../internal/challengeId.js'
import { messageOf } from '../internal/messageOf.js'
import { parseAmount } from '../money.js'
import type { PaidRoute } from './types.js'

/** The options every paywall needs, as {@link checkPaywallOptions} sees them (nothing is trusted). */
export type CheckedPaywallOptions = {
  payTo?: unknown
  network?: unknown
  asset?: unknown
  ledger?: unknown
  store?: unknown
  secrets?: unknown
}

const addressPattern = /^0x[0-9a-fA-F]{1,64}$/
const networkPattern = /^sui:[a-z0-9-]{1,32}$/
const coinTypePattern = /^0x[0-9a-fA-F]{1,64}::[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_]*$/
const storeMethods = ['claim', 'release', 'settled', 'served', 'oweRefund'] as const

/**
 * Checks the options a paywall cannot work without, at creation. The adapters' `paywall()` and
 * `createPaywall()` call it; call it yourself to check a configuration before you build anything.
 *
 * @param options - the options as given (read only; nothing is changed).
 * @throws {PaymentError} `invalid_config` (with `details.option`) for a missing or malformed
 *   `payTo`, `network`, `asset`, `ledger` or `store`; `invalid_secret` for no secret or one under
 *   32 bytes. Messages never contain a secret.
 * @example
 * ```ts
 * checkPaywallOptions({ payTo, ledger, store, secrets: [process.env.CHALLENGE_SECRET] })
 * ```
 */
export function checkPaywallOptions(options: CheckedPaywallOptions): void {
  if (typeof options !== 'object' || options === null) {
    throw configError('options', 'The paywall needs an options object.')
  }
  const { payTo, network, asset, ledger, store, secrets } = options
  if (payTo === undefined || payTo === null || payTo === '') {
    throw configError('payTo', 'payTo is required: the Sui address that receives payments.')
  }
  if (typeof payTo !== 'string' || !addressPattern.test(payTo)) {
    throw configError('payTo', 'payTo must be a Sui address (0x followed by up to 64 hex digits).')
  }
  if (network !== undefined && (typeof network !== 'string' || !networkPattern.test(network))) {
    throw configError(
      'network',
      'network must look like "sui:mainnet", "sui:testnet" or "sui:localnet".',
    )
  }
  if (asset !== undefined && (typeof asset !== 'string' || !coinTypePattern.test(asset))) {
    throw configError('asset', 'asset must be a coin type like "0x…::usdc::USDC".')
  }
  if (ledger === undefined || ledger === null || ledger === '') {
    throw configError('ledger', 'ledger is required: a full-node gRPC URL or a Ledger.')
  }
  if (typeof ledger === 'string') {
    if (!URL.canParse(ledger) || !/^https?:$/.test(new URL(ledger).protocol)) {
      throw configError('ledger', 'ledger must be an http(s) URL of a full node, or a Ledger.')
    }
  } else if (typeof ledger !== 'object') {
    throw configError('ledger', 'ledger must be an http(s) URL of a full node, or a Ledger.')
  }
  if (store === undefined || store === null) {
    throw configError(
      'store',
      'store is required: createMemoryStore() for tests, createSqliteStore() (tollgate/stores/sqlite) or the Redis/PostgreSQL stores in production.',
    )
  }
  const methods = store as Record<string, unknown>
  const missing = storeMethods.filter((name) => typeof methods[name] !== 'function')
  if (typeof store !== 'object' || missing.length > 0) {
    throw configError('store', `store is not a PaymentStore (missing ${missing.join(', ')}).`)
  }
  if (secrets === undefined || secrets === null || secrets === '') {
    throw new PaymentError(
      'invalid_secret',
      'secrets is required: at least one challenge secret of 32 bytes or more.',
      { details: { option: 'secrets' } },
    )
  }
  const list =
    typeof secrets === 'string' || secrets instanceof Uint8Array ? [secrets] : (secrets as unknown)
  if (!Array.isArray(list)) {
    throw new PaymentError('invalid_secret', 'secrets must be a string, bytes or a list of them.', {
      details: { option: 'secrets' },
    })
  }
  // Throws `invalid_secret` naming the index of a short one (never its value).
  keyRing(list)
}

/**
 * Checks a priced route's price at creation.
 *
 * @param route - the route; `name` (e.g. `'POST /v1/answer'`) is quoted in the message.
 * @throws {PaymentError} `invalid_amount` with `details.route` for a price that is not a positive
 *   decimal of at most 6 fractional digits (or a bigint of base units).
 */
export function checkRoutePrice(route: PaidRoute, name?: string): void {
  try {
    parseAmount(route.price)
  } catch (error) {
    const where = name === undefined ? 'A route' : `Route "${name}"`
    const reason = messageOf(error)
    throw new PaymentError('invalid_amount', `${where}: ${reason} Write a price like "0.02".`, {
      details: name === undefined ? {} : { route: name },
      cause: error,
    })
  }
}

function configError(option: string, message: string): PaymentError {
  return new PaymentError('invalid_config', message, { details: { option } })
}
