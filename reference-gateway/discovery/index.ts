/**
 * Discovery documents generated from the catalog.
 *
 * @module
 */
export { llmsTxt } from './llms.js'
export { x402Manifest } from './manifest.js'
export { openApiDocument } from './openapi.js'
export type { DiscoveryOptions } from './options.js'
export { catalogPage, catalogPageRenderer, escapeHtml, shellQuote } from './page.js'
export { servicesDocument } from './services.js'
