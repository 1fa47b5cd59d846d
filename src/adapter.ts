/**
 * `tollgate/adapter`: what a framework adapter needs from the engine, and nothing a seller needs.
 * `tollgate/express`, `tollgate/koa` and `tollgate/hono` are written with exactly this; an adapter
 * for another framework would be too. The engine decides on a Web-standard view of the request
 * ({@link EngineRequest}); the adapter translates the framework's request in and the decision out,
 * and reports how the paid call ended so that a failure is refunded.
 *
 * @module
 */
export {
  type Decision,
  finishResponse,
  hungUpResponse,
  type PaidDecision,
  type PlainResponse,
  watchHangUp,
} from './engine/paywall.js'
export {
  type EngineRequest,
  type HeaderLookup,
  isRequestView,
  type RequestView,
} from './engine/requestView.js'
export {
  createSellerPaywall,
  type SellerPaywall,
  type SellerRuntime,
  successHeaders,
} from './engine/seller.js'
