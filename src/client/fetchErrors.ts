/**
 * The paying fetch's errors: which of them are its refusals (raised before anything is paid), and a
 * ledger that did not answer told with the URL that was tried.
 *
 * @module
 */
import { isPaymentError, PaymentError } from '../errors.js'
import type { Ledger } from '../ledger/index.js'

/**
 * A ledger that did not answer, told with the URL that was tried (and the cause).
 *
 * @internal
 */
export function withLedgerUrl(
  error: PaymentError,
  ledger: string | Ledger | undefined,
): PaymentError {
  if (error.code !== 'ledger_unavailable' || typeof ledger !== 'string') return error
  const cause = causeText(error.cause)
  return new PaymentError(
    'ledger_unavailable',
    `The ledger at ${ledger} did not answer${cause === '' ? '' : ` (${cause})`}: the payment could not be prepared. Check the ledger URL (the local emulator: tollgate ledger).`,
    { details: { ...error.details, ledger }, cause: error.cause ?? error },
  )
}

/**
 * The innermost message of an error chain (a connection error's code included).
 *
 * @internal
 */
function causeText(error: unknown): string {
  let text = ''
  let current = error
  for (let depth = 0; depth < 4 && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code
    text =
      typeof code === 'string' && !current.message.includes(code)
        ? `${current.message} (${code})`
        : current.message
    current = current.cause
  }
  return text.slice(0, 200)
}

/** Whether an error is one of the client's refusals (a {@link PaymentError} raised before paying). */
export function isRefusal(error: unknown): error is PaymentError {
  return (
    isPaymentError(error) &&
    [
      'PRICE_ABOVE_MAX',
      'LIMIT_PER_TX',
      'LIMIT_PER_DAY',
      'LIMIT_PER_SESSION',
      'NO_WALLET',
      'ESCROW_REQUIRED',
      'DIALECT_UNSUPPORTED',
      'INSUFFICIENT_BALANCE',
      'NO_PAYABLE_REQUIREMENT',
    ].includes(error.code)
  )
}
