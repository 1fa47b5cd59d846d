import { describe, expect, it } from 'vitest'
import {
  type Catalog,
  examplePathOf,
  indexCatalog,
  operationIdOf,
  type PaidEndpoint,
  paidEntries,
  pathParamNames,
  priceOf,
  priceText,
  routePathOf,
  validateCatalog,
  validatePathParams,
  withUpstreams,
} from './catalog.js'
import { defaultCatalog } from './default.js'
import { segments } from './segments.js'
import { validateBody } from './shapes.js'

/**
 * Every endpoint of the seed catalog (41 services), in its order,
 * with the shape written for it, its price and its tags. Tags are what agents filter by, so they are
 * the seed's: the seed's first table for the rows it lists (`/openai/v1/chat/completions` and
 * `/openai/v1/embeddings` are `ai, media` there), the full catalog's categories of the service for
 * the rest.
 */
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
  ['/resend/v1/emails/batch', 'EMAIL-BATCH', '0.020000', 'communication'],
  ['/together/v1/chat/completions', 'CHAT', '0.020000', 'ai,media'],
  ['/together/v1/images/generations', 'TOGETHER-IMAGE', '0.060000', 'ai,media'],
  ['/together/v1/embeddings', 'EMBED', '0.020000', 'ai,media'],
  ['/elevenlabs/v1/text-to-speech/{voiceId}', 'VOICE-SPEECH', '0.100000', 'ai,media'],
  ['/elevenlabs/v1/sound-generation', 'SOUND-EFFECT', '0.100000', 'ai,media'],
  ['/openweather/v1/weather', 'WEATHER', '0.020000', 'data'],
  ['/openweather/v1/forecast', 'FORECAST', '0.020000', 'data'],
  ['/googlemaps/v1/geocode', 'GEOCODE', '0.020000', 'data'],
  ['/googlemaps/v1/places', 'PLACES', '0.020000', 'data'],
  ['/googlemaps/v1/directions', 'DIRECTIONS', '0.020000', 'data'],
  ['/judge0/v1/submissions', 'SUBMISSION', '0.020000', 'compute'],
  ['/judge0/v1/languages', 'EMPTY', '0.020000', 'compute'],
  ['/lob/v1/postcards', 'POSTCARD', '2.000000', 'commerce'],
  ['/lob/v1/letters', 'LETTER', '3.000000', 'commerce'],
  ['/lob/v1/verify', 'US-ADDRESS', '0.020000', 'commerce'],
  ['/coingecko/v1/price', 'COIN-PRICE', '0.020000', 'data'],
  ['/coingecko/v1/markets', 'COIN-MARKETS', '0.020000', 'data'],
  ['/coingecko/v1/trending', 'EMPTY', '0.020000', 'data'],
  ['/alphavantage/v1/quote', 'SYMBOL', '0.020000', 'data'],
  ['/alphavantage/v1/daily', 'DAILY', '0.020000', 'data'],
  ['/alphavantage/v1/search', 'KEYWORDS', '0.020000', 'data'],
  ['/newsapi/v1/headlines', 'HEADLINES', '0.020000', 'data,search'],
  ['/newsapi/v1/search', 'NEWS-SEARCH', '0.020000', 'data,search'],
  ['/deepl/v1/translate', 'DEEPL', '0.020000', 'translation'],
  ['/exa/v1/search', 'EXA-SEARCH', '0.020000', 'search,ai'],
  ['/exa/v1/contents', 'EXA-CONTENTS', '0.020000', 'search,ai'],
  ['/jina/v1/read', 'URL', '0.020000', 'web,data'],
  ['/serper/v1/search', 'SERPER', '0.020000', 'search'],
  ['/serper/v1/images', 'SERPER', '0.020000', 'search'],
  ['/screenshot/v1/capture', 'SCREENSHOT', '0.020000', 'web'],
  ['/pdfshift/v1/convert', 'PDF', '0.020000', 'web,data'],
  ['/qrcode/v1/generate', 'QR', '0.020000', 'data'],
  ['/replicate/v1/predictions', 'PREDICTION', '0.040000', 'ai,media'],
  ['/replicate/v1/predictions/status', 'PREDICTION-ID', '0.020000', 'ai,media'],
  ['/stability/v1/generate', 'SD3', '0.060000', 'ai,media'],
  ['/stability/v1/edit', 'SEARCH-REPLACE', '0.060000', 'ai,media'],
  ['/assemblyai/v1/transcribe', 'TRANSCRIPT-JOB', '0.040000', 'ai,media'],
  ['/assemblyai/v1/result', 'TRANSCRIPT-ID', '0.020000', 'ai,media'],
  ['/hunter/v1/search', 'DOMAIN-SEARCH', '0.040000', 'data'],
  ['/hunter/v1/verify', 'EMAIL-VERIFY', '0.040000', 'data'],
  ['/ipinfo/v1/lookup', 'IP', '0.020000', 'data'],
  ['/translate/v1/translate', 'TRANSLATE', '0.020000', 'translation'],
  ['/translate/v1/detect', 'DETECT', '0.020000', 'translation'],
  ['/serpapi/v1/search', 'SERP', '0.020000', 'search'],
  ['/serpapi/v1/flights', 'FLIGHTS', '0.020000', 'search'],
  ['/serpapi/v1/locations', 'LOCATIONS', '0.020000', 'search'],
  ['/pushover/v1/push', 'PUSH', '0.020000', 'messaging'],
  ['/mistral/v1/chat/completions', 'CHAT', '0.020000', 'ai'],
  ['/mistral/v1/embeddings', 'EMBED', '0.020000', 'ai'],
  ['/cohere/v1/chat', 'COHERE-CHAT', '0.020000', 'ai'],
  ['/cohere/v1/embed', 'COHERE-EMBED', '0.020000', 'ai'],
  ['/cohere/v1/rerank', 'RERANK', '0.020000', 'ai'],
  ['/virustotal/v1/scan', 'SCAN', '0.020000', 'security'],
  ['/exchangerate/v1/rates', 'RATES', '0.020000', 'finance'],
  ['/exchangerate/v1/convert', 'CONVERT', '0.020000', 'finance'],
  ['/shortio/v1/shorten', 'SHORTEN', '0.020000', 'utility'],
  ['/tinify/v1/compress', 'COMPRESS', '0.020000', 'utility'],
  ['/tinify/v1/resize', 'RESIZE', '0.020000', 'utility'],
]

describe('the default catalog', () => {
  const catalog = defaultCatalog()

  it('has exactly the 41 services and 89 endpoints of the full catalog, with shape, price and tags', () => {
    expect(catalog.services).toHaveLength(41)
    expect(specTable).toHaveLength(89)
    const actual = paidEntries(catalog).map(({ endpoint }) => [
      endpoint.path,
      endpoint.shape.name,
      endpoint.price,
      endpoint.tags.join(','),
    ])
    expect(actual).toEqual(specTable)
  })

  it("tags every endpoint with its service's categories, as the seed does", () => {
    for (const service of catalog.services) {
      for (const endpoint of service.endpoints) {
        expect([endpoint.path, ...endpoint.tags]).toEqual([endpoint.path, ...service.tags])
      }
    }
  })

  it('is valid', () => {
    expect(validateCatalog(catalog)).toEqual({ status: 'valid' })
  })

  it('has the free open-model list', () => {
    const models = indexCatalog(catalog).get('GET /open/v1/models')
    expect(models?.endpoint.kind).toBe('free')
    expect(models?.service.segment).toBe('open')
  })

  it('caps the open chat route: allow-list, max_tokens 4096, a 24 000-byte body', () => {
    const open = indexCatalog(catalog).get('POST /open/v1/chat/completions')
      ?.endpoint as PaidEndpoint
    const ok = { model: 'llama-3.3-70b', messages: [{ role: 'user', content: 'hi' }] }
    expect(validateBody(open.shape, ok).status).toBe('valid')
    expect(validateBody(open.shape, { ...ok, model: 'gpt-4o' }).status).toBe('invalid')
    expect(validateBody(open.shape, { ...ok, max_tokens: 4097 }).status).toBe('invalid')
    // The full catalog's cap: a body of at most 24 000 characters.
    expect(open.maxBodyBytes).toBe(24_000)
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
    for (const service of catalog.services) {
      // The QR code API is the one provider that takes no key.
      if (service.segment === 'qrcode') expect(service.upstream.credential).toBeUndefined()
      else expect(service.upstream.credential).toMatch(/^[A-Z0-9_]+_KEY$/)
    }
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

describe('path parameters', () => {
  const catalog = defaultCatalog()
  const speech = indexCatalog(catalog).get('POST /elevenlabs/v1/text-to-speech/{voiceId}')
    ?.endpoint as PaidEndpoint

  it('are OpenAPI {name} segments, routed as :name, with an example path', () => {
    expect(pathParamNames(speech.path)).toEqual(['voiceId'])
    expect(routePathOf(speech.path)).toBe('/elevenlabs/v1/text-to-speech/:voiceId')
    expect(examplePathOf(speech)).toBe('/elevenlabs/v1/text-to-speech/21m00Tcm4TlvDq8ikWAM')
    expect(operationIdOf(speech.path)).toBe('elevenlabs-v1-text-to-speech-voiceId')
  })

  it('are validated before payment, naming the parameter', () => {
    expect(validatePathParams(speech, { voiceId: '21m00Tcm4TlvDq8ikWAM' })).toEqual({
      status: 'valid',
    })
    for (const voiceId of ['x', '../../admin', 'a b c d e f g h', '%2e%2e%2fabcdefgh']) {
      expect(validatePathParams(speech, { voiceId })).toMatchObject({
        status: 'invalid',
        field: 'voiceId',
      })
    }
  })

  it('must match the declared pathParams, with anchored patterns', () => {
    const service = catalog.services.find((s) => s.segment === 'elevenlabs')!
    const withParams = (patch: Partial<PaidEndpoint>): Catalog => ({
      services: [{ ...service, endpoints: [{ ...speech, ...patch }] }],
    })
    const problems = (c: Catalog) => {
      const result = validateCatalog(c)
      return result.status === 'invalid' ? result.problems.join('\n') : ''
    }
    expect(problems(withParams({ pathParams: undefined }))).toMatch(/path parameters/)
    expect(
      problems(
        withParams({
          pathParams: { voiceId: { pattern: /[a-z]+/, description: 'd', example: 'abc' } },
        }),
      ),
    ).toMatch(/not anchored/)
    expect(
      problems(
        withParams({
          pathParams: { voiceId: { pattern: /^[a-z]+$/, description: 'd', example: 'ABC' } },
        }),
      ),
    ).toMatch(/example/)
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
