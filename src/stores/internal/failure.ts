/**
 * What a backend failure means to a buyer: the store could not be reached or is busy (HTTP 503, try
 * again), or it failed otherwise (HTTP 500). Recognises the errors of the shipped drivers (Node
 * sockets, `pg`, `ioredis`, `better-sqlite3`) by code and name, never by `instanceof`, so that no
 * driver is loaded here.
 *
 * @module
 */
import { isPaymentError, PaymentError } from '../../errors.js'

/** Node socket and DNS errors: the store's host cannot be reached. */
const networkCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
])

/**
 * PostgreSQL SQLSTATEs worth a retry: connection exceptions (class 08), insufficient resources
 * (class 53: too many connections, disk full, out of memory), the server shutting down or starting
 * (57P01–57P03), and serialization failures and deadlocks (40001, 40P01).
 */
function isTransientSqlState(code: string): boolean {
  return (
    code.startsWith('08') ||
    code.startsWith('53') ||
    code === '57P01' ||
    code === '57P02' ||
    code === '57P03' ||
    code === '40001' ||
    code === '40P01'
  )
}

/** Messages of driver errors that carry no code (pg, ioredis) and Redis replies worth a retry. */
const unavailableMessages = [
  /^Connection terminated/, // pg: the server went away mid-query, or the connect timed out
  /timeout exceeded when trying to connect/, // pg pool
  /^Connection is closed/, // ioredis
  /^Stream isn't writeable/, // ioredis without its offline queue
  /^(LOADING|BUSY|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|READONLY) /, // Redis replies
]

/** Whether `error` says the store is unreachable or busy for now (rather than broken). */
export function isUnavailable(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > 3) return false
  const { code, name, message, errors, cause } = error as {
    code?: unknown
    name?: unknown
    message?: unknown
    errors?: unknown
    cause?: unknown
  }
  if (typeof code === 'string') {
    if (networkCodes.has(code)) return true
    if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return true
    if (/^[0-9A-Z]{5}$/.test(code) && isTransientSqlState(code)) return true
  }
  if (name === 'MaxRetriesPerRequestError') return true // ioredis: every reconnection failed
  if (typeof message === 'string' && unavailableMessages.some((m) => m.test(message))) return true
  // Node's connect to several addresses fails with an AggregateError of one error per address.
  if (Array.isArray(errors) && errors.some((e) => isUnavailable(e, depth + 1))) return true
  return isUnavailable(cause, depth + 1)
}

/**
 * The {@link PaymentError} a store throws for a backend failure: code `store_error`, status 503 when
 * the backend is unreachable or busy, 500 otherwise, the backend's error as `cause` (never in the
 * message: a driver message may name hosts or users). A `PaymentError` is passed through unchanged.
 *
 * @param error - what the backend threw.
 * @param operation - the store method that failed (`claim`, `settled`, …), for `details`.
 */
export function storeFailure(error: unknown, operation: string): PaymentError {
  if (isPaymentError(error)) return error
  const unavailable = isUnavailable(error)
  return new PaymentError(
    'store_error',
    unavailable ? 'The payment store is unavailable; try again.' : 'The payment store failed.',
    { status: unavailable ? 503 : 500, cause: error, details: { operation } },
  )
}
