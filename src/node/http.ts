/**
 * `tollgate/node/http`: a Node request seen by the engine and the engine's answer written to a
 * Node response — the parts the Express and Koa adapters and the Hono adapter on
 * `@hono/node-server` share. Unlike the rest of `tollgate/node` this module loads no `node:` module
 * (it only takes Node's objects as arguments), so `tollgate/hono` can import it and still run on a
 * Web-standard runtime. `tollgate/node` re-exports all of it.
 *
 * @example
 * ```ts
 * import { createServer } from 'node:http'
 * import { createSellerPaywall } from 'tollgate/adapter'
 * import { attachPaidResponse, nodeRequestView, readNodeBody, sendPlain } from 'tollgate/node/http'
 * ```
 *
 * @module
 */
export {
  attachPaidResponse,
  type EncodedPlain,
  encodePlain,
  nodeHeaders,
  nodeRequestView,
  nodeRequestViewAt,
  readNodeBody,
  sendPlain,
} from '../internal/nodeHttp.js'
