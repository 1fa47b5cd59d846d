/**
 * Confidential inference ("aci/1"): attestation report and receipt verification.
 *
 * @module
 */
export {
  type AttestationResult,
  type AttestedSession,
  type Attestor,
  type AttestorOptions,
  createAttestor,
} from './attestor.js'
export {
  endorsementMessage,
  jcsBytes,
  keysetDigestOf,
  reportDataOf,
  sha256Tag,
  workloadIdOf,
} from './digest.js'
export {
  type QuoteVerdict,
  type QuoteVerifier,
  SIMULATED_QUOTE_LENGTH,
  SIMULATED_TEE_TYPE,
  simulatedQuoteBody,
  simulatedQuoteVerifier,
  type TcbStatus,
} from './quote.js'
export {
  type AciReceipt,
  AciReceiptEventSchema,
  AciReceiptSchema,
  type ReceiptFailureCode,
  type ReceiptVerification,
  receiptSigningInput,
  type VerifyReceiptOptions,
  verifyReceipt,
} from './receipt.js'
export {
  type AttestationReport,
  AttestationReportSchema,
  type Keyset,
  KeysetSchema,
  type ReceiptSigningKey,
  ReceiptSigningKeySchema,
  type ReportFailureCode,
  type ReportVerification,
  type VerifyReportOptions,
  verifyReport,
} from './report.js'
