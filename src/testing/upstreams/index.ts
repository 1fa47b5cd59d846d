/**
 * Stub upstreams for tests and the embedded gateway: deterministic fakes of every upstream family.
 *
 * @module
 */
export { stubReply } from './handlers.js'
export {
  type ModelUpstream,
  type ModelUpstreamCall,
  type ModelUpstreamOptions,
  modelCompletion,
  startModelUpstream,
} from './model.js'
export {
  type StubCall,
  type StubHold,
  type StubProvider,
  type StubUpstreams,
  type StubUpstreamsOptions,
  startStubUpstreams,
} from './stub.js'
