/**
 * `tollgate/testing`: a local Sui ledger emulator driven by the real `SuiGrpcClient`, its faucet
 * and test wallets, for sellers' own test suites. Payments on it are not real.
 *
 * @module
 */
export {
  createTestGpuAttestation,
  createTestTdxPlatform,
  type EnclaveCall,
  type EnclaveMisbehaviour,
  registersHex,
  type SimulatedEnclave,
  type SimulatedEnclaveOptions,
  simulatedRegisters,
  startSimulatedEnclave,
  type TdQuoteFields,
  TEST_GPU_ISSUER,
  type TestGpuAttestation,
  type TestTdxPlatform,
} from './enclave/index.js'
export { ChannelAbort, MIN_GRACE_MS } from './ledger/channel.js'
export {
  createEngine,
  type EngineOptions,
  type LedgerChange,
  type LedgerEngine,
  type Submission,
} from './ledger/engine.js'
export { EscrowAbort } from './ledger/escrow.js'
export {
  DEFAULT_ESCROW_FEE_BPS,
  DEFAULT_ESCROW_TREASURY,
  type EscrowGenesis,
} from './ledger/escrowAdmin.js'
export { type FaucetRequest, FaucetRequestSchema, type FaucetResult } from './ledger/faucet.js'
export {
  type StartedLedger,
  type StartLedgerOptions,
  startLedger,
  stopLedger,
} from './ledger/index.js'
export {
  type LocalLedgerInfo,
  type LocalLedgerLookup,
  readLocalLedger,
} from './ledger/info.js'
export { DEFAULT_MODULES_PACKAGE } from './ledger/modules.js'
export type { Faults } from './ledger/server.js'
export {
  type MoveAbortCode,
  type MoveField,
  type MoveFunctionSignature,
  type MoveStructSignature,
  moduleAborts,
  moduleFunctions,
  moduleStructs,
  passedParameters,
} from './ledger/signatures.js'
export {
  type ExecutionFailure,
  type GasUsed,
  type LedgerEvent,
  type LedgerState,
  MAINNET_CHAIN_ID,
  MAINNET_USDC_TYPE,
  type ObjectChange,
  type ObjectOwner,
  type StateOptions,
  type StoredObject,
  SUI_TYPE,
  type TransactionRecord,
  WORMHOLE_USDC_TYPE,
} from './ledger/state.js'
export {
  type TestHooks,
  type TestLedger,
  useTestLedger,
} from './ledger/testLedger.js'
export type { Rejection } from './ledger/validate.js'
export {
  mppAuthorization,
  type SignedTestPayment,
  signTestPayment,
  type TestPaymentOptions,
  x402PaymentHeader,
} from './payments.js'
export {
  type ModelUpstream,
  type ModelUpstreamCall,
  type ModelUpstreamOptions,
  modelCompletion,
  type StubCall,
  type StubHold,
  type StubProvider,
  type StubUpstreams,
  type StubUpstreamsOptions,
  startModelUpstream,
  startStubUpstreams,
  stubReply,
} from './upstreams/index.js'
export { createTestWallet, type TestWalletOptions } from './wallet.js'
