/**
 * `tollgate/mcp`: MCP in both directions. For sellers, a price on their own MCP tools, paid in
 * either MCP payment transport (MPP's `-32042` / `org.paymentauth/…`, x402's `isError` /
 * `x402/payment`) and settled by the same engine as the HTTP routes. For buyers, an MCP server that
 * turns a gateway's catalog into tools and pays them through `tollgate/client` within budgets.
 * Needs the optional peer `@modelcontextprotocol/sdk`.
 *
 * @module
 */

export {
  type Budget,
  type BudgetOptions,
  type BudgetReservation,
  type BudgetSpend,
  createBudget,
  type SessionBudget,
  type SpendReport,
} from './budget.js'
export {
  type CatalogTool,
  loadCatalogTools,
  toolsFromOpenApi,
  toolsFromServices,
} from './catalogTools.js'
export {
  type GatewayTools,
  type GatewayToolsOptions,
  loadGatewayTools,
} from './gatewayTools.js'
export {
  type InferenceDocuments,
  type InferenceTools,
  loadInferenceTools,
  toolsFromInference,
} from './inferenceTools.js'
export {
  createPaidMcpTools,
  mcpPaymentMeta,
  mcpPaymentRequiredCode,
  type PaidMcpTools,
  type PaidMcpToolsOptions,
  type PaidToolExtra,
  type PaidToolOptions,
  type ToolExtra,
  type ToolHandler,
  type ToolResult,
} from './paidTools.js'
export {
  createSellerFetch,
  type Fetcher,
  loadSellerTools,
  type SellerEndpoint,
  type SellerFetchOptions,
  type SellerTools,
  sellerOfResource,
  sellerOfService,
  sellerTool,
} from './sellerTools.js'
export { createGatewayMcp, type GatewayMcp, type GatewayMcpOptions } from './server.js'
export type { McpSessionsOptions } from './sessionChannels.js'
