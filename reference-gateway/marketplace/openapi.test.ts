/**
 * The marketplace's paths (listings, services, discovery, reviews, profiles) in the gateway's OpenAPI
 * document: the document still validates as OpenAPI 3.1.0 and its operation ids stay unique.
 */
import { compileErrors, validate } from '@readme/openapi-parser'
import { describe, expect, it } from 'vitest'
import { defaultCatalog } from '../catalog/default.js'
import { openApiDocument } from '../discovery/openapi.js'

const doc = openApiDocument(defaultCatalog(), {
  publicBaseUrl: 'https://gw.example',
  payTo: `0x${'5c'.repeat(32)}`,
  network: 'sui:mainnet',
  asset: '0x2::usdc::USDC',
  marketplace: true,
})

describe('the OpenAPI document with the marketplace', () => {
  it('validates as OpenAPI 3.1.0 and documents every marketplace route', async () => {
    const result = await validate(structuredClone(doc) as never)
    if (!result.valid) throw new Error(compileErrors(result))
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/v1/services',
        '/v1/agent/endpoint/prepare',
        '/v1/agent/endpoint/submit',
        '/v1/agent/service',
        '/v1/agent/{address}',
        '/v1/reviews',
        '/discovery/resources',
        '/discovery/search',
        '/v1/activity',
        '/v1/activity/stream',
        '/api/mpp/report',
      ]),
    )
    expect(doc.paths['/v1/reviews']).toHaveProperty('get')
    expect(doc.paths['/v1/reviews']).toHaveProperty('post')
  })

  it('keeps operation ids unique', () => {
    const ids = Object.values(doc.paths).flatMap((item) =>
      Object.values(item).map((op) => (op as { operationId: string }).operationId),
    )
    expect(new Set(ids).size).toBe(ids.length)
  })
})
