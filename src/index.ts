/**
 * `tollgate`: charge for an API per request, paid in USDC on Sui.
 *
 * What a seller writes every day is exported by name: the paywall, the store contract, the ledger,
 * refunds, errors and money. The protocol concepts are namespaces holding their whole module
 * (`X402.parsePaymentRequired`, `Mpp.parseChallenge`, `Attestation.verifyReport`, …), so a name
 * says where it belongs. Each name has one path: none is both flat and a namespace member. What a framework adapter needs
 * from the engine is `tollgate/adapter`; everything else is internal.
 *
 * @packageDocumentation
 */

/** The attested-receipt verifier: attestation reports, quotes, receipts (docs/inference.md, "Verifying a receipt"). */
export * as Attestation from './attestation/index.js'
/** Retries with backoff and `Retry-After`. */
export * as Retry from './backoff.js'
/** Reading and validating request bodies with size caps. */
export * as Body from './body.js'
/** The 402's challenge: building it, binding it to terms by HMAC, verifying it. */
export * as Challenge from './challenge.js'
export { type ClaimResolverTarget, ledgerClaimResolver } from './claimResolver.js'
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
  HandleOptions,
  PaidRoute,
  PaymentInfo,
  Paywall,
  PaywallEvent,
  PaywallOptions,
} from './engine/types.js'
/** The error family: `PaymentError`, its stable codes, problem documents. */
export * from './errors.js'
/** Escrowed jobs: the Move calls, the job record, the seller's side. */
export * as Escrow from './escrow/index.js'
export {
  type ClaimResolution,
  createLeaseSweeper,
  type LeaseSweepEvent,
  type LeaseSweeper,
  type LeaseSweeperOptions,
  type LeaseSweepSummary,
} from './leaseSweeper.js'
export {
  createLedger,
  type ExecutabilityOutcome,
  type ExecuteOutcome,
  type Ledger,
  type LedgerBalance,
  type LedgerBalanceChange,
  type LedgerEventRecord,
  type LedgerOptions,
  type LookupOutcome,
  type MoveCallArgument,
  type MoveCallRequest,
  type Settlement,
  type TransferRequest,
} from './ledger/index.js'
/** Payment methods: the built-in ones (x402 v1, x402 v2, MPP `charge`) and the shape of your own. */
export * as Methods from './methods/index.js'
/** USDC amounts as bigint base units. */
export * from './money.js'
/** The MPP dialect: `WWW-Authenticate: Payment`, credentials, receipts. */
export * as Mpp from './mpp.js'
export type { Dialect, Offer } from './negotiate.js'
export type { PaymentTarget, PrecheckOptions, TransactionForm } from './precheck.js'
/** The MPP proof: what the sender signs. */
export * as Proof from './proof.js'
export {
  createRefunder,
  type RefundEvent,
  type Refunder,
  type RefunderOptions,
  type RefundLedger,
  type RefundRunSummary,
} from './refunds.js'
/** Route tables: compiling, normalising and matching paths. */
export * as Routes from './routes.js'
/** Text written by a listed seller, one line, capped, quoted and labelled as the seller's. */
export * as SellerText from './sellerText.js'
/** MPP sessions on Sui: vouchers and the payment channel's transaction builders. */
export * as Session from './session/index.js'
/** Settle-then-verify for both dialects, against a ledger. */
export * as Settle from './settle.js'
export { type SignerKeyResult, signerFromSecretKey } from './signerKey.js'
export {
  createMemoryStore,
  type MemoryStoreData,
  type MemoryStoreOptions,
} from './stores/memory.js'
/** The payment store's contract and its states. */
export * from './stores/types.js'
/** The x402 dialect: `X-PAYMENT`, payment requirements, responses. */
export * as X402 from './x402.js'
/** x402 version 2: `PAYMENT-REQUIRED`, `PAYMENT-SIGNATURE` (with `accepted`), `PAYMENT-RESPONSE`. */
export * as X402V2 from './x402v2.js'
