/**
 * A simulated confidential ("aci/1") model upstream for tests: attestation reports with Intel TDX
 * quotes and DCAP collateral under a test root, GPU attestation tokens, signed receipts and
 * selectable misbehaviours.
 *
 * @module
 */
export {
  type EnclaveCall,
  type EnclaveMisbehaviour,
  type SimulatedEnclave,
  type SimulatedEnclaveOptions,
  startSimulatedEnclave,
} from './enclave.js'
export { createTestGpuAttestation, TEST_GPU_ISSUER, type TestGpuAttestation } from './gpu.js'
export {
  createTestTdxPlatform,
  registersHex,
  simulatedRegisters,
  type TdQuoteFields,
  type TestTdxPlatform,
} from './tdx.js'
