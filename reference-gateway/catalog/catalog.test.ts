import { describe, expect, it } from 'vitest'
import {
  type Catalog,
  entries,
  indexCatalog,
  operationIdOf,
  type PaidEndpoint,
  paidEntries,
  priceOf,
  priceText,
  validateCatalog,
  withUpstreams,
} from './catalog.js'
import { defaultCatalog, segments } from './default.js'
import { generateCatalog } from './fixture.js'
import { validateBody } from './shapes.js'

/** Spec §4.3, with the provider segments and slugs of PROTOCOLS.md §8 filled in. */
const specTable: [path: string, shape: string, price: string, tags: string][] = [
  ['/openai/v1/chat/completions', 'CHAT', '0.020000', 'ai,media'],
  ['/openai/v1/embeddings', 'EMBED', '0.020000', 'ai,media'],
  ['/openai/v1/images/generations', 'IMAGE-GEN', '0.100000', 'ai,media'],
  ['/openai/v1/audio/transcriptions', 'TRANSCRIBE-FILE', '0.020000', 'ai,media'],
  ['/openai/v1/audio/speech', 'SPEECH', '0.040000', 'ai,media'],
  ['/anthropic/v1/messages', 'MESSAGES', '0.020000', 'ai'],
  ['/open/v1/chat/completions', 'OPEN-CHAT', '0.050000', 'ai'],
  ['/fal/fal-ai/flux/dev', 'IMAGE-TIER', '0.060000', 'ai,media'],
  ['/fal/fal-ai/flux-pro', 'IMAGE-TIER', '0.100000', 'ai,media'],
  ['/fal/fal-ai/flux-realism', 'IMAGE-TIER', '0.060000', 'ai,media'],
  ['/fal/fal-ai/recraft-20b', 'IMAGE-TIER', '0.060000', 'ai,media'],
  ['/fal/fal-ai/whisper', 'TRANSCRIBE-URL', '0.020000', 'ai,media'],
  ['/fal/fal-ai/stable-audio-25/text-to-audio', 'MUSIC', '0.400000', 'ai,media'],
  ['/firecrawl/v1/scrape', 'URL', '0.020000', 'web,data'],
  ['/firecrawl/v1/crawl', 'URL', '0.100000', 'web,data'],
  ['/firecrawl/v1/map', 'URL', '0.020000', 'web,data'],
  ['/firecrawl/v1/extract', 'URL+SCHEMA', '0.040000', 'web,data'],
  ['/gemini/v1beta/models/gemini-2.5-flash', 'CONTENTS', '0.020000', 'ai'],
  ['/gemini/v1beta/models/gemini-2.5-pro', 'CONTENTS', '0.040000', 'ai'],
  ['/gemini/v1beta/models/gemini-embedding-001', 'EMBED-CONTENT', '0.020000', 'ai'],
  ['/groq/v1/chat/completions', 'CHAT', '0.020000', 'ai'],
  ['/groq/v1/audio/transcriptions', 'TRANSCRIBE-FILE', '0.020000', 'ai'],
  ['/perplexity/v1/chat/completions', 'CHAT', '0.020000', 'ai,search'],
  ['/brave/v1/web/search', 'QUERY', '0.020000', 'search'],
  ['/brave/v1/images/search', 'QUERY', '0.020000', 'search'],
  ['/brave/v1/news/search', 'QUERY', '0.020000', 'search'],
  ['/brave/v1/videos/search', 'QUERY', '0.020000', 'search'],
  ['/brave/v1/summarizer/search', 'QUERY', '0.020000', 'search'],
  ['/deepseek/v1/chat/completions', 'CHAT', '0.020000', 'ai'],
  ['/resend/v1/emails', 'EMAIL', '0.020000', 'communication'],
]

describe('the default catalog', () => {
  const catalog = defaultCatalog()

  it('has exactly the endpoints of spec §4.3 with their shape, price and tags', () => {
    const actual = paidEntries(catalog).map(({ endpoint }) => [
      endpoint.path,
      endpoint.shape.name,
      endpoint.price,
      endpoint.tags.join(','),
    ])
    expect(actual).toEqual(specTable)
  })

  it('is valid', () => {
    expect(validateCatalog(catalog)).toEqual({ status: 'valid' })
  })

  it('has the free open-model list', () => {
    const models = indexCatalog(catalog).get('GET /open/v1/models')
    expect(models?.endpoint.kind).toBe('free')
    expect(models?.service.segment).toBe('open')
  })

  it('caps the open chat route: allow-list, max_tokens 4096, small body', () => {
    const open = indexCatalog(catalog).get('POST /open/v1/chat/completions')
      ?.endpoint as PaidEndpoint
    const ok = { model: 'llama-3.3-70b', messages: [{ role: 'user', content: 'hi' }] }
    expect(validateBody(open.shape, ok).status).toBe('valid')
    expect(validateBody(open.shape, { ...ok, model: 'gpt-4o' }).status).toBe('invalid')
    expect(validateBody(open.shape, { ...ok, max_tokens: 4097 }).status).toBe('invalid')
    expect(open.maxBodyBytes).toBeLessThan(1024 * 1024)
    const custom = defaultCatalog({ openModels: ['m1'], openMaxTokens: 10 })
    const capped = indexCatalog(custom).get('POST /open/v1/chat/completions')
      ?.endpoint as PaidEndpoint
    expect(validateBody(capped.shape, { ...ok, model: 'm1', max_tokens: 11 }).status).toBe(
      'invalid',
    )
  })

  it('lets transcription bodies be larger than the 1 MiB default', () => {
    for (const path of ['/openai/v1/audio/transcriptions', '/groq/v1/audio/transcriptions']) {
      const endpoint = indexCatalog(catalog).get(`POST ${path}`)?.endpoint as PaidEndpoint
      expect(endpoint.maxBodyBytes).toBeGreaterThan(25 * 1024 * 1024)
    }
  })

  it('names each service segment after a stable constant and a config credential', () => {
    expect(catalog.services.map((s) => s.segment)).toEqual(Object.values(segments))
    for (const service of catalog.services) expect(service.upstream.credential).toMatch(/^[A-Z_]+$/)
  })

  it('prices parse to bigint base units', () => {
    const first = paidEntries(catalog)[0]?.endpoint as PaidEndpoint
    expect(priceOf(first)).toBe(20_000n)
    expect(priceText({ ...first, price: '0.4' })).toBe('0.400000')
  })

  it('withUpstreams points services at other base URLs without touching the rest', () => {
    const moved = withUpstreams(catalog, { baseUrls: { openai: 'http://127.0.0.1:1/openai/v1' } })
    expect(moved.services[0]?.upstream.baseUrl).toBe('http://127.0.0.1:1/openai/v1')
    expect(moved.services[1]).toBe(catalog.services[1])
    expect(catalog.services[0]?.upstream.baseUrl).toBe('https://api.openai.com/v1')
  })
})

describe('operationIdOf', () => {
  it('turns slashes and dots into hyphens and drops the leading one', () => {
    expect(operationIdOf('/openai/v1/chat/completions')).toBe('openai-v1-chat-completions')
    expect(operationIdOf('/gemini/v1beta/models/gemini-2.5-flash')).toBe(
      'gemini-v1beta-models-gemini-2-5-flash',
    )
  })
})

describe('the generated full-size catalog', () => {
  const catalog = generateCatalog()
  it('has 41 services and 89 paid endpoints, and is valid', () => {
    expect(catalog.services).toHaveLength(41)
    expect(paidEntries(catalog)).toHaveLength(89)
    expect(validateCatalog(catalog)).toEqual({ status: 'valid' })
    expect(indexCatalog(catalog).size).toBe(entries(catalog).length)
  })
  it('is deterministic and can be sized', () => {
    expect(JSON.stringify(generateCatalog())).toBe(JSON.stringify(catalog))
    const small = generateCatalog({ services: 12, endpoints: 33 })
    expect(paidEntries(small)).toHaveLength(33)
    expect(() => generateCatalog({ services: 5 })).toThrow(RangeError)
  })
})

describe('validateCatalog', () => {
  const base = defaultCatalog()
  const openai = base.services[0]!
  const chat = openai.endpoints[0] as PaidEndpoint
  const replaceChat = (patch: Partial<PaidEndpoint>): Catalog => ({
    services: [{ ...openai, endpoints: [{ ...chat, ...patch }, ...openai.endpoints.slice(1)] }],
  })
  const problems = (catalog: Catalog) => {
    const result = validateCatalog(catalog)
    return result.status === 'invalid' ? result.problems.join('\n') : ''
  }

  it('rejects duplicate paths and operation ids', () => {
    expect(problems(replaceChat({ path: '/openai/v1/embeddings' }))).toMatch(/duplicate route/)
    expect(problems(replaceChat({ path: '/openai/v1/embeddings.' }))).toMatch(/path/)
    expect(problems(replaceChat({ path: '/openai/v1-embeddings' }))).toMatch(
      /duplicate operationId/,
    )
  })
  it('rejects prices above the cap, zero, or floats', () => {
    expect(problems(replaceChat({ price: '5.000001' }))).toMatch(/above the cap/)
    expect(problems(replaceChat({ price: '0' }))).toMatch(/not a positive USDC decimal/)
    expect(problems(replaceChat({ price: '0.0000001' }))).toMatch(/not a positive/)
    expect(validateCatalog(replaceChat({ price: '5' })).status).toBe('valid')
  })
  it('rejects unsafe paths and paths outside the segment', () => {
    for (const path of [
      '/openai/v1/../x',
      '/openai//x',
      '/openai/V1/x',
      '/openai/v1/%2e',
      '/openai/a:b',
    ]) {
      expect(problems(replaceChat({ path }))).toMatch(/path/)
    }
    expect(problems(replaceChat({ path: '/other/v1/x' }))).toMatch(/not under \/openai\//)
  })
  it('rejects unknown tags, duplicate segments and unknown operations', () => {
    expect(problems(replaceChat({ tags: ['ai', 'games' as never] }))).toMatch(/unknown tag/)
    expect(problems({ services: [openai, openai] })).toMatch(/duplicate segment/)
    expect(validateCatalog(base, { operations: { openai: ['chat'] } }).status).toBe('invalid')
  })
})
