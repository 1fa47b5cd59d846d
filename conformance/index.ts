/**
 * `tollgate/conformance`: probe any seller URL against the four listing gates and the
 * protocol rules, read-only or with test payments. See docs/conformance.md.
 *
 * @module
 */
export {
  type AgentLookup,
  type AgentRecord,
  type AgentRegistration,
  defaultRegistryPackage,
  lookUpAgent,
  type RegisterAgentOptions,
  registerAgent,
} from './agent.js'
export type { CheckContext, CheckDefinition, Verdict } from './check.js'
export { maxListingPrice } from './gates.js'
export type {
  LenientRequirement,
  MppReading,
  Observation,
  SessionReading,
  SessionRequest,
  X402Reading,
} from './observe.js'
export type { PaidState, ProbeOffer } from './payer.js'
export {
  isInternalAddress,
  type ProbeOptions,
  type ProbeResponse,
  probe,
} from './probe.js'
export {
  type CheckResult,
  type CheckStatus,
  type ConformanceReport,
  type Exchange,
  type Gate,
  reportJsonSchema,
  reportSchema,
} from './report.js'
export { toJson } from './reporters/json.js'
export { escapeXml, toJUnit } from './reporters/junit.js'
export { formatCheckLine, formatSummary, terminalProgress } from './reporters/terminal.js'
export {
  allChecks,
  type ConformanceOptions,
  type ProgressEvent,
  runConformance,
} from './run.js'
export type { SessionOptions, SessionState } from './sessionPayer.js'
