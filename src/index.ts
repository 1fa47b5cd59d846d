/**
 * `tollgate`: charge for an API per request, paid in USDC on Sui.
 *
 * The root export is an explicit list. What a seller writes every day is exported by name: the
 * paywall, stores, the ledger, refunds, errors and money. The protocol concepts are namespaces
 * holding their whole module (`X402.parsePaymentRequired`, `Mpp.parseChallenge`,
 * `Attestation.verifyReport`, …), so a name says where it belongs. What a framework adapter needs
 * from the engine is `tollgate/adapter`; everything else is internal.
 *
 * @packageDocumentation
 */

/** The attested-receipt verifier: attestation reports, quotes, receipts (PROTOCOLS.md §6). */
export * as Attestation from './attestation/index.js'
/** Retries with backoff and `Retry-After`. */
export * as Retry from './backoff.js'
/** Reading and validating request bodies with size caps. */
export * as Body from './body.js'
/** The 402's challenge: building it, binding it to terms by HMAC, verifying it. */
export * as Challenge from './challenge.js'
export { createPaywall } from './engine/paywall.js'
export type {
  PaidRequestInfo,
  PayRouteOptions,
  SellerEvent,
  SellerLogger,
  SellerOptions,
} from './engine/sellerTypes.js'
export type {
  CallOutcome,
  PaidRoute,
  PaymentInfo,
  Paywall,
  PaywallEvent,
  PaywallOptions,
} from './engine/types.js'
/** The error family: codes, problem documents. */
export * as Errors from './errors.js'
export {
  hasCode,
  isPaymentError,
  PaymentError,
  type PaymentErrorCode,
  type Problem,
} from './errors.js'
/** Escrowed jobs: the Move calls, the job record, the seller's side. */
export * as Escrow from './escrow/index.js'
export {
  createLeaseSweeper,
  type LeaseSweepEvent,
  type LeaseSweeper,
  type LeaseSweeperOptions,
  type LeaseSweepSummary,
} from './leaseSweeper.js'
export {
  createLedger,
  type Ledger,
  type LedgerOptions,
  type Settlement,
} from './ledger/index.js'
/** USDC amounts as bigint base units. */
export * as Money from './money.js'
export { formatAmount, type PriceInput, parseAmount } from './money.js'
/** The MPP dialect: `WWW-Authenticate: Payment`, credentials, receipts. */
export * as Mpp from './mpp.js'
export type { Offer } from './negotiate.js'
/** The MPP proof: what the sender signs. */
export * as Proof from './proof.js'
export {
  createRefunder,
  type RefundEvent,
  type Refunder,
  type RefunderOptions,
  type RefundRunSummary,
} from './refunds.js'
export type { RouteTable } from './routes.js'
/** Route tables: compiling, normalising and matching paths. */
export * as Routes from './routes.js'
/** Text written by a listed seller, one line, capped, quoted and labelled as the seller's. */
export * as SellerText from './sellerText.js'
/** Settle-then-verify for both dialects, against a ledger. */
export * as Settle from './settle.js'
export { type SignerKeyResult, signerFromSecretKey } from './signerKey.js'
export { createMemoryStore, type MemoryStoreOptions } from './stores/memory.js'
export type { PaymentRecord, PaymentState, PaymentStore, StoreOptions } from './stores/types.js'
/** The payment store's contract and its states. */
export * as Stores from './stores/types.js'
/** The x402 dialect: `X-PAYMENT`, payment requirements, responses. */
export * as X402 from './x402.js'
/** x402 version 2: `PAYMENT-REQUIRED`, `PAYMENT-SIGNATURE` (with `accepted`), `PAYMENT-RESPONSE`. */
export * as X402V2 from './x402v2.js'
