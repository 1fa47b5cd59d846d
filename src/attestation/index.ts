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
