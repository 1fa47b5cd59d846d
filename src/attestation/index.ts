/**
 * Confidential inference ("aci/1"): attestation report and receipt verification, and the whole
 * check of a confidential answer from its receipt id (`verifyInferenceReceipt`, or
 * `createInferenceReceiptVerifier` for many receipts).
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
  AnchorDocumentSchema,
  type GatewayReceiptClaimsDocument,
  GatewayReceiptClaimsSchema,
  type PublishedTrustPolicy,
  PublishedTrustPolicySchema,
  type StoredReceiptDocument,
  StoredReceiptDocumentSchema,
  type StoredSessionDocument,
  StoredSessionDocumentSchema,
} from './gatewayDocuments.js'
export {
  GPU_NONCE_CLAIM,
  GPU_RESULT_CLAIM,
  type GpuTokenVerdict,
  type GpuTokenVerifier,
  type JwksGpuTokenVerifierOptions,
  jwksGpuTokenVerifier,
  NVIDIA_NRAS_JWKS_URL,
} from './gpu.js'
export type { QuoteVerdict, QuoteVerifier, TcbStatus } from './quote.js'
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
export { publishedQuoteVerifier } from './sessionVerdicts.js'
export {
  quoteVerifierOfPolicy,
  TDX_TEE_TYPE,
  type TdxCollateral,
  TdxCollateralSchema,
  type TdxQuoteVerifierOptions,
  type TdxRegisters,
  type TdxVerifierPolicy,
  TdxVerifierPolicySchema,
  tdxMeasurementOf,
  tdxQuoteVerifier,
} from './tdx.js'
export {
  createInferenceReceiptVerifier,
  type ExpectedPayment,
  gatewayReceiptHash,
  type InferenceReceiptFailureCode,
  type InferenceReceiptPolicy,
  type InferenceReceiptStep,
  type InferenceReceiptStepName,
  type InferenceReceiptVerification,
  type InferenceReceiptVerifier,
  inferenceReceiptSteps,
  type VerifyInferenceReceiptOptions,
  verifyInferenceReceipt,
} from './verifyInferenceReceipt.js'
