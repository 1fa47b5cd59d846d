/**
 * What the seller writes to its logger for each engine event: the facts an operator needs, never a
 * secret, a credential or a whole header.
 *
 * @module
 */
import type { SellerEvent, SellerLogger } from './sellerTypes.js'

/** Writes one line for `event`, at the level its kind deserves (refund and store failures: error). */
export function logSellerEvent(logger: SellerLogger, event: SellerEvent): void {
  switch (event.type) {
    case 'settled':
    case 'served':
      logger.info({
        event: event.type,
        dialect: event.payment.dialect,
        digest: event.payment.digest,
        payer: event.payment.payer,
        amount: event.payment.amount.toString(),
        resource: event.payment.resource,
      })
      return
    case 'refund_due':
      logger.warn({
        event: event.type,
        digest: event.payment.digest,
        payer: event.payment.payer,
        reason: event.reason,
      })
      return
    case 'refunded':
      logger.info({
        event: event.type,
        digest: event.digest,
        refundDigest: event.refundDigest,
        payer: event.payer,
        amount: event.amount.toString(),
      })
      return
    case 'refund_failed':
      logger.error({ event: event.type, digest: event.digest, reason: event.reason })
      return
    case 'lease_lapsed':
      logger.warn({
        event: event.type,
        digest: event.digest,
        payer: event.payer,
        amount: event.amount.toString(),
        resource: event.resource,
      })
      return
    case 'lease_delivered':
      logger.warn({ event: event.type, digest: event.digest, resource: event.resource })
      return
    case 'claim_resolved':
      logger.warn({
        event: event.type,
        digest: event.digest,
        state: event.state,
        outcome: event.outcome,
        resource: event.resource,
        payer: event.payer,
        amount: event.amount?.toString(),
      })
      return
    case 'sweep_failed':
      logger.error({ event: event.type, reason: event.reason })
      return
    case 'rejected':
      logger.info({ event: event.type, resource: event.resource, code: event.code })
      return
    case 'pending':
      logger.warn({ event: event.type, resource: event.resource, digest: event.digest })
      return
    case 'lease_lost':
      logger.error({ event: event.type, digest: event.payment.digest, payer: event.payment.payer })
      return
    case 'store_failed': {
      // The driver's own error, as far as it names what failed: its code, its class, its message
      // (drivers name hosts and users there, never passwords); the buyer saw only store_error.
      const cause = event.error.cause as { code?: unknown; name?: unknown; message?: unknown }
      logger.error({
        event: event.type,
        resource: event.resource,
        status: event.error.status,
        operation: event.error.details.operation,
        cause:
          cause === undefined || cause === null
            ? undefined
            : { code: cause.code, name: cause.name, message: cause.message },
      })
      return
    }
    default:
      return
  }
}
