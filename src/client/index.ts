/**
 * `tollgate/client`: the buyer. A `fetch` that pays HTTP 402s in USDC on Sui (x402 and MPP), with
 * a per-call price cap and wallet limits that survive restarts; and a session `fetch` that pays
 * calls with vouchers over a payment channel (`createSessionFetch`).
 *
 * @module
 */
export { hasCode, isPaymentError, PaymentError, type PaymentErrorCode } from '../errors.js'
export {
  type ChannelBook,
  type ChannelEntry,
  channelBookFileName,
  createChannelBook,
} from './channelBook.js'
export {
  type ChallengeEvent,
  type ClientLogger,
  createPayingFetch,
  isRefusal,
  type PayingFetch,
  type PayingFetchOptions,
  type Payment,
  paymentOf,
} from './fetch.js'
export { tollgateHome } from './home.js'
export {
  checkEscrowTerms,
  createJobClient,
  escrowTermsFrom,
  type FundIntent,
  type JobClient,
  type JobClientOptions,
  type JobMove,
  type MoveSubmitter,
  type PinnedEscrow,
  type SigningMove,
} from './jobs.js'
export {
  createWalletLimits,
  dayMs,
  defaultPerDay,
  defaultPerTransaction,
  type Reservation,
  type Spend,
  spendingFileName,
  type WalletLimits,
  type WalletLimitsOptions,
} from './limits.js'
export { gaslessMinimum, transferForm } from './pay.js'
export { type RetryOptions, retryAfterMs } from './retry.js'
export {
  type Offers,
  type PayableOffer,
  type PaymentOffer,
  readMethodOffers,
  readOffers,
  type Selection,
  type SelectOptions,
  selectOffer,
  usdcTypeOf,
  type X402OfferFields,
} from './select.js'
export {
  createSessionFetch,
  type PinnedChannels,
  type SessionCallOptions,
  type SessionClose,
  type SessionFetch,
  type SessionFetchOptions,
  type SessionWithdrawal,
} from './sessions.js'
