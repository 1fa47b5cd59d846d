/**
 * A simulated confidential ("aci/1") model upstream for tests: attestation reports, signed
 * receipts and selectable misbehaviours.
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
