/**
 * `tollgate/node`: the Node.js helpers that the Express and Koa adapters, the Hono adapter on
 * `@hono/node-server` and the reference gateway share — public so that an adapter for another Node
 * framework (Fastify, NestJS, a bare `http.createServer`) is built from the same parts:
 *
 * - a Node request seen by the engine ({@link nodeRequestView}, {@link nodeRequestViewAt},
 *   {@link nodeHeaders}) and its body read once, bounded ({@link readNodeBody});
 * - the engine's answer written to a `ServerResponse` ({@link sendPlain}, {@link encodePlain}) and a
 *   paid response's headers and outcome hooked onto it ({@link attachPaidResponse});
 * - a keep-alive `fetch` over undici's `request()` ({@link createNodeFetch}, {@link nodeFetch},
 *   {@link takeBufferedBody});
 * - {@link writeFileAtomic}: a file written so that no reader sees half of it;
 * - {@link safeFetch}: the one fetch for URLs a user supplies (SSRF-safe: every address and every
 *   redirect hop judged, the judged address connected to, size and time capped).
 *
 * Unlike the core (`tollgate`), this module imports `node:` modules: it is for Node only.
 *
 * @example
 * ```ts
 * import { createServer } from 'node:http'
 * import { createSellerPaywall } from 'tollgate/adapter'
 * import { attachPaidResponse, nodeRequestView, readNodeBody, sendPlain } from 'tollgate/node'
 * ```
 *
 * @module
 */
export { writeFileAtomic } from '../client/home.js'
export {
  createNodeFetch,
  type NodeFetchOptions,
  nodeFetch,
  takeBufferedBody,
} from '../internal/nodeFetch.js'
export {
  attachPaidResponse,
  type EncodedPlain,
  encodePlain,
  nodeHeaders,
  nodeRequestView,
  nodeRequestViewAt,
  readNodeBody,
  sendPlain,
} from './http.js'
export {
  type HostResolver,
  isInternalAddress,
  type ResolvedAddress,
  type SafeFetchFailureCode,
  type SafeFetchOptions,
  type SafeFetchResult,
  type SafeResponse,
  safeFetch,
  unreachableMessage,
} from './safeFetch.js'
