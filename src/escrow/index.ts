/**
 * Escrowed agent-to-agent jobs: terms a seller publishes, transaction builders for each move, a
 * reader for a job's state, and the seller helper (see docs/escrow.md).
 *
 * @module
 */
export { escrowAborts, explainEscrowAbort } from './aborts.js'
export {
  type EscrowConfig,
  type EscrowJob,
  escrowFee,
  type JobState,
  jobStates,
  readEscrowConfig,
  readJob,
} from './job.js'
export {
  buildDeliver,
  buildFund,
  buildRefund,
  buildReject,
  buildRelease,
  buildSetFee,
  escrowGasBudget,
  type JobRef,
  type MoveOptions,
} from './moves.js'
export { reviewMessage } from './review.js'
export {
  createEscrowSeller,
  type EscrowDelivery,
  type EscrowSeller,
  type EscrowSellerOptions,
} from './seller.js'
export { deliveryHash, type EscrowTerms, EscrowTermsSchema, termsHash } from './terms.js'
