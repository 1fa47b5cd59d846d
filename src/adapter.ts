/**
 * `tollgate/adapter`: what a framework adapter needs from the engine, and nothing a seller needs.
 * `tollgate/express`, `tollgate/koa` and `tollgate/hono` are written with exactly this; an adapter
 * for another framework would be too. The engine decides on a Web-standard view of the request
 * ({@link EngineRequest}); the adapter translates the framework's request in and the decision out,
 * and reports how the paid call ended so that a failure is refunded.
 *
 * @module
 */
export { finishResponse, hungUpResponse, watchHangUp } from './engine/finish.js'
export {
  type EngineRequest,
  type HeaderLookup,
  isRequestView,
  type RequestView,
} from './engine/requestView.js'
export { createSellerPaywall, paidInfo, successHeaders } from './engine/seller.js'
export type { SellerPaywall, SellerRuntime } from './engine/sellerTypes.js'
export type { Decision, PaidDecision, PlainResponse } from './engine/types.js'
