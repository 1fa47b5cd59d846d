/**
 * Discovery documents generated from the catalog.
 *
 * @module
 */
export { llmsTxt } from './llms.js'
export {
  type ManifestRequirement,
  type ManifestResource,
  type X402Manifest,
  x402Manifest,
} from './manifest.js'
export { type OpenApiDocument, openApiDocument, type PaymentInfo } from './openapi.js'
export { type DiscoveryOptions, jsonSchemaOf } from './options.js'
export { catalogPage, catalogPageRenderer, escapeHtml, exampleCurl, shellQuote } from './page.js'
export {
  type ServiceEndpointListing,
  type ServiceListing,
  type ServicesDocument,
  servicesDocument,
} from './services.js'
export { type TestMoneyNotice, testMoneyNotice } from './testMoney.js'
