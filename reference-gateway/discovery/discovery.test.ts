import { compileErrors, validate } from '@readme/openapi-parser'
import { describe, expect, it } from 'vitest'
import { type Catalog, operationIdOf, paidEntries, priceOf, priceText } from '../catalog/catalog.js'
import { defaultCatalog } from '../catalog/default.js'
import { validateBody } from '../catalog/shapes.js'
import {
  catalogPage,
  type DiscoveryOptions,
  escapeHtml,
  llmsTxt,
  openApiDocument,
  servicesDocument,
  shellQuote,
  x402Manifest,
} from './index.js'

const options: DiscoveryOptions = {
  publicBaseUrl: 'https://gw.example/',
  payTo: '0x5c3b6f0c2a2d4d6e9f9e5c1b7a3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d',
  network: 'sui:mainnet',
  asset: '0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC',
}

const catalogs: [string, Catalog][] = [
  ['default catalog (41 services, 89 endpoints)', defaultCatalog()],
]

type Operation = {
  operationId: string
  tags: string[]
  summary: string
  responses: Record<string, unknown>
  requestBody?: { required: boolean; content: Record<string, { schema: Record<string, unknown> }> }
  'x-payment-info'?: {
    pricingMode: string
    price: string
    protocols: string[]
    x402: Record<string, string>
  }
}

describe.each(catalogs)('OpenAPI document of the %s', (_name, catalog) => {
  const doc = openApiDocument(catalog, options)
  const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({ path, method, op: op as unknown as Operation })),
  )

  it('passes @readme/openapi-parser validation as OpenAPI 3.1.0, API version 1.0.0', async () => {
    expect(doc.openapi).toBe('3.1.0')
    expect(doc.info.version).toBe('1.0.0')
    const result = await validate(structuredClone(doc) as never)
    if (!result.valid) throw new Error(compileErrors(result))
    expect(result.valid).toBe(true)
  })

  it('has unique operationIds: the path with slashes and dots as hyphens', () => {
    const ids = operations.map((o) => o.op.operationId)
    expect(new Set(ids).size).toBe(ids.length)
    for (const { path, op } of operations) expect(op.operationId).toBe(operationIdOf(path))
  })

  it('gives every priced operation x-payment-info with the catalog price, 200 and 402 only', () => {
    const paid = paidEntries(catalog)
    const posts = operations.filter((o) => o.method === 'post')
    expect(posts).toHaveLength(paid.length)
    for (const { endpoint } of paid) {
      const op = doc.paths[endpoint.path]?.post as unknown as Operation
      expect(op['x-payment-info']).toEqual({
        pricingMode: 'fixed',
        price: priceText(endpoint),
        protocols: ['mpp', 'x402'],
        x402: {
          scheme: 'exact',
          network: options.network,
          asset: options.asset,
          payTo: options.payTo,
        },
      })
      const price = op['x-payment-info']?.price ?? ''
      expect(price).toMatch(/^\d+\.\d{6}$/)
      expect(BigInt(price.replace('.', ''))).toBe(priceOf(endpoint))
      expect(Object.keys(op.responses).sort()).toEqual(['200', '402'])
      expect(op.responses['402']).toEqual({ description: 'Payment Required' })
      expect(op.responses['200']).toEqual({
        description: 'OK',
        content: { 'application/json': { schema: { type: 'object' } } },
      })
      expect(op.tags).toEqual([...endpoint.tags])
      expect(op.summary).toBe(endpoint.summary)
      expect(op.requestBody?.required).toBe(true)
      expect(op.requestBody?.content['application/json']?.schema.type).toBe('object')
    }
  })
})

describe('the validator used above', () => {
  it('rejects a broken document (so the validation tests can fail)', async () => {
    const doc = openApiDocument(defaultCatalog(), options) as unknown as Record<string, unknown>
    const paths = doc.paths as Record<string, { post?: { operationId: string } }>
    const [first, second] = Object.values(paths)
    if (first?.post && second?.post) second.post.operationId = first.post.operationId
    expect((await validate(structuredClone(doc) as never)).valid).toBe(false)
  })
})

describe('OpenAPI request schemas', () => {
  const doc = openApiDocument(defaultCatalog(), options)
  type Schema = { required?: string[]; properties: Record<string, Record<string, unknown>> }
  const schemaOf = (path: string): Schema => {
    const op = doc.paths[path]?.post as unknown as Operation
    return op.requestBody?.content['application/json']?.schema as unknown as Schema
  }

  it('carries required fields, enums and ranges of the zod shapes', () => {
    const chat = schemaOf('/openai/v1/chat/completions')
    expect(chat.required).toEqual(['messages'])
    expect(chat.properties.temperature).toMatchObject({ minimum: 0, maximum: 2 })
    const image = schemaOf('/openai/v1/images/generations')
    expect(image.properties.size?.enum).toEqual(['1024x1024', '1024x1792', '1792x1024'])
    const speech = schemaOf('/openai/v1/audio/speech')
    expect(speech.required?.sort()).toEqual(['input', 'voice'])
    expect(speech.properties.voice?.enum).toHaveLength(6)
    expect(schemaOf('/openai/v1/audio/transcriptions').properties.language?.enum).toHaveLength(184)
    expect(schemaOf('/open/v1/chat/completions').properties.max_tokens).toMatchObject({
      maximum: 4096,
    })
  })

  it('lists the free model list as a GET with no payment info', () => {
    const get = doc.paths['/open/v1/models']?.get as unknown as Operation
    expect(get.operationId).toBe('open-v1-models')
    expect(get['x-payment-info']).toBeUndefined()
    expect(Object.keys(get.responses)).toEqual(['200'])
  })
})

describe('/.well-known/x402.json', () => {
  it('lists every paid resource with an exact requirement in base units', () => {
    const catalog = defaultCatalog()
    const manifest = x402Manifest(catalog, options)
    expect(manifest.x402Version).toBe(1)
    expect(manifest.resources).toHaveLength(89)
    const chat = manifest.resources.find(
      (r) => r.resource === 'https://gw.example/openai/v1/chat/completions',
    )
    expect(chat?.accepts).toEqual([
      {
        scheme: 'exact',
        network: 'sui:mainnet',
        maxAmountRequired: '20000',
        resource: 'https://gw.example/openai/v1/chat/completions',
        description: 'Chat completions',
        mimeType: 'application/json',
        payTo: options.payTo,
        maxTimeoutSeconds: 60,
        asset: options.asset,
      },
    ])
    const music = manifest.resources.find((r) => r.resource.endsWith('/text-to-audio'))
    expect(music?.accepts[0]?.maxAmountRequired).toBe('400000')
    expect(manifest.documents.openapi).toBe('https://gw.example/openapi.json')
  })
})

describe('/api/services', () => {
  it('lists services and endpoints with prices, schemas and valid examples', () => {
    const doc = servicesDocument(defaultCatalog(), options)
    expect(doc.totals).toEqual({ services: 41, endpoints: 90, paidEndpoints: 89 })
    const openai = doc.services[0]
    expect(openai?.endpoints[0]).toMatchObject({
      method: 'POST',
      url: 'https://gw.example/openai/v1/chat/completions',
      operationId: 'openai-v1-chat-completions',
      price: '0.020000',
      amount: '20000',
      shape: 'CHAT',
    })
    const models = doc.services.find((s) => s.segment === 'open')?.endpoints[1]
    expect(models).toMatchObject({ method: 'GET', price: null, amount: null })
    const byPath = new Map(paidEntries(defaultCatalog()).map((e) => [e.endpoint.path, e.endpoint]))
    for (const endpoint of doc.services.flatMap((s) => s.endpoints)) {
      if (endpoint.price === null) continue
      const shape = byPath.get(endpoint.path)?.shape
      expect(shape && validateBody(shape, endpoint.example).status).toBe('valid')
    }
    expect(JSON.parse(JSON.stringify(doc))).toEqual(doc)
  })
})

describe('/llms.txt', () => {
  const catalog = defaultCatalog()
  const text = llmsTxt(catalog, options)
  it('explains both payment dialects', () => {
    expect(text).toContain('X-PAYMENT')
    expect(text).toContain('WWW-Authenticate: Payment')
    expect(text).toContain('Authorization: Payment')
    expect(text).toContain('402')
    expect(text).toContain('refunded')
  })
  it('lists every endpoint with its price and an example body that validates', () => {
    for (const { endpoint } of paidEntries(catalog)) {
      const line = text
        .split('\n')
        .findIndex((l) => l.startsWith(`- \`POST https://gw.example${endpoint.path}\`:`))
      expect(line, endpoint.path).toBeGreaterThan(0)
      const lines = text.split('\n')
      expect(lines[line]).toContain(`${endpoint.price} USDC`)
      const next = lines.slice(line + 1).find((l) => l.startsWith('  Example body: ')) ?? ''
      const example = /Example body: `(.*)`$/.exec(next)?.[1] ?? 'null'
      expect(validateBody(endpoint.shape, JSON.parse(example)).status).toBe('valid')
    }
    expect(text).toContain('`GET https://gw.example/open/v1/models`: free.')
  })
})

describe('the catalog page', () => {
  it('shows every service, endpoint and price, with example curl requests', () => {
    const catalog = defaultCatalog()
    const html = catalogPage(catalog, options)
    expect(html.startsWith('<!doctype html>')).toBe(true)
    // One inline script (search and tag filter), the same whatever the catalog holds.
    const scripts = html.match(/<script>[\s\S]*?<\/script>/g) ?? []
    expect(scripts).toHaveLength(1)
    expect(catalogPage({ services: catalog.services.slice(0, 1) }, options)).toContain(
      scripts[0] as string,
    )
    for (const service of catalog.services)
      expect(html).toContain(`<h2>${escapeHtml(service.name)} `)
    for (const { endpoint } of paidEntries(catalog)) {
      expect(html).toContain(`<code>POST ${endpoint.path}</code>`)
      expect(html).toContain(`data-price="${endpoint.price}"`)
    }
    expect(html).toContain(
      'curl -i -X POST &#39;https://gw.example/openai/v1/chat/completions&#39;',
    )
  })

  it('escapes catalog text', () => {
    const base = defaultCatalog()
    const evil = '<script>alert("x")</script> & \'quotes\''
    const service = base.services[0]!
    const catalog: Catalog = {
      services: [
        {
          ...service,
          name: evil,
          summary: evil,
          endpoints: service.endpoints.map((e) => ({ ...e, summary: evil })),
        },
      ],
    }
    const html = catalogPage(catalog, { ...options, title: evil })
    expect(html).not.toContain('<script>alert')
    expect(html).toContain(
      '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;quotes&#39;',
    )
  })

  it('shell-quotes example bodies that contain quotes', () => {
    expect(shellQuote(`{"a":"it's"}`)).toBe(`'{"a":"it'\\''s"}'`)
  })
})
