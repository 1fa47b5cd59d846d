import nock from 'nock'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { entries, validateCatalog, withUpstreams } from '../catalog/catalog.js'
import { defaultCatalog } from '../catalog/default.js'
import { anthropic } from './anthropic.js'
import { brave } from './brave.js'
import { fal } from './fal.js'
import { families, familyOperations } from './families.js'
import { firecrawl } from './firecrawl.js'
import { gemini } from './gemini.js'
import { openaiCompatible } from './openaiCompatible.js'
import { resend } from './resend.js'
import { memoryBlobs, publicResolver } from './testHelpers.js'
import { type CallUpstreamOptions, callUpstream, type Family } from './upstream.js'

beforeAll(() => nock.disableNetConnect())
afterEach(() => {
  expect(nock.pendingMocks()).toEqual([])
  nock.cleanAll()
})
afterAll(() => nock.enableNetConnect())

async function ok(
  family: Family,
  operation: string,
  baseUrl: string,
  body: Record<string, unknown>,
  extra: Partial<CallUpstreamOptions> = {},
) {
  const blobs = memoryBlobs()
  const result = await callUpstream({
    family,
    operation,
    body,
    baseUrl,
    apiKey: 'secret-key',
    blobs,
    sleep: async () => {},
    resolveHost: publicResolver,
    ...extra,
  })
  if (result.status !== 'ok') throw new Error(`failed: ${result.reason}`)
  return { json: (await result.response.json()) as Record<string, unknown>, blobs }
}

describe('the catalog uses only operations the families have', () => {
  it('the default catalog (41 services, 89 endpoints)', () => {
    expect(validateCatalog(defaultCatalog(), { operations: familyOperations })).toEqual({
      status: 'valid',
    })
  })
})

describe('anthropic', () => {
  it('posts /v1/messages with x-api-key and anthropic-version', async () => {
    const body = {
      model: 'claude-sonnet-4-5',
      max_tokens: 10,
      system: 'brief',
      messages: [{ role: 'user', content: 'hi' }],
    }
    nock('https://api.anthropic.com', {
      reqheaders: { 'x-api-key': 'secret-key', 'anthropic-version': '2023-06-01' },
      badheaders: ['authorization'],
    })
      .post('/v1/messages', body)
      .reply(200, { id: 'msg_1', type: 'message', content: [{ type: 'text', text: 'Hi' }] })
    const { json } = await ok(anthropic, 'messages', 'https://api.anthropic.com/v1', body)
    expect(json.id).toBe('msg_1')
  })

  it('529 overloaded is transient', async () => {
    nock('https://api.anthropic.com').post('/v1/messages').times(3).reply(529, {})
    const result = await callUpstream({
      family: anthropic,
      operation: 'messages',
      body: {},
      baseUrl: 'https://api.anthropic.com/v1',
      apiKey: 'k',
      blobs: memoryBlobs(),
      sleep: async () => {},
    })
    expect(result).toMatchObject({ status: 'failed', retryable: true, upstreamStatus: 529 })
  })
})

describe('gemini', () => {
  const base = 'https://generativelanguage.googleapis.com/v1beta'
  it('posts :generateContent with x-goog-api-key', async () => {
    const contents = [{ role: 'user', parts: [{ text: 'hi' }] }]
    nock('https://generativelanguage.googleapis.com', {
      reqheaders: { 'x-goog-api-key': 'secret-key' },
    })
      .post('/v1beta/models/gemini-2.5-flash:generateContent', { contents })
      .reply(200, { candidates: [{ content: { parts: [{ text: 'Hello' }] } }] })
    const { json } = await ok(
      gemini,
      'generateContent',
      base,
      { contents },
      {
        params: { model: 'gemini-2.5-flash' },
      },
    )
    expect(json.candidates).toHaveLength(1)
  })

  it('posts :embedContent with the model name', async () => {
    const content = { parts: [{ text: 'fox' }] }
    nock('https://generativelanguage.googleapis.com')
      .post('/v1beta/models/gemini-embedding-001:embedContent', {
        model: 'models/gemini-embedding-001',
        content,
      })
      .reply(200, { embedding: { values: [0.1, 0.2] } })
    const { json } = await ok(
      gemini,
      'embedContent',
      base,
      { content },
      {
        params: { model: 'gemini-embedding-001' },
      },
    )
    expect(json).toEqual({ embedding: { values: [0.1, 0.2] } })
  })
})

describe('fal', () => {
  it('posts to fal.run/<model> with Key auth and re-hosts the images', async () => {
    nock('https://fal.run', { reqheaders: { authorization: 'Key secret-key' } })
      .post('/fal-ai/flux/dev', { prompt: 'fox', image_size: 'square_hd', num_images: 1 })
      .reply(200, {
        images: [
          {
            url: 'https://v3.fal.media/files/a.jpeg',
            width: 1024,
            height: 1024,
            content_type: 'image/jpeg',
          },
        ],
        seed: 42,
        has_nsfw_concepts: [false],
        prompt: 'fox',
      })
    nock('https://v3.fal.media', { badheaders: ['authorization'] })
      .get('/files/a.jpeg')
      .reply(200, Buffer.from([0xff, 0xd8, 0xff]), { 'content-type': 'image/jpeg' })
    const { json, blobs } = await ok(
      fal,
      'image',
      'https://fal.run',
      { prompt: 'fox', image_size: 'square_hd', num_images: 1 },
      { params: { model: 'fal-ai/flux/dev' } },
    )
    expect(json).toEqual({
      images: [
        { url: 'https://gw.test/blobs/1', content_type: 'image/jpeg', width: 1024, height: 1024 },
      ],
      seed: 42,
      has_nsfw_concepts: [false],
      prompt: 'fox',
    })
    expect(blobs.items[0]?.contentType).toBe('image/jpeg')
  })

  it('whisper takes the audio_url as is', async () => {
    nock('https://fal.run')
      .post('/fal-ai/whisper', { audio_url: 'https://e.com/a.mp3', task: 'transcribe' })
      .reply(200, { text: 'hello', chunks: [] })
    const { json } = await ok(
      fal,
      'transcription',
      'https://fal.run',
      { audio_url: 'https://e.com/a.mp3' },
      {
        params: { model: 'fal-ai/whisper' },
      },
    )
    expect(json.text).toBe('hello')
  })

  it('music: the audio file is re-hosted', async () => {
    nock('https://fal.run')
      .post('/fal-ai/stable-audio-25/text-to-audio', { prompt: 'lofi', seconds_total: 30 })
      .reply(200, { audio: { url: 'https://v3.fal.media/files/m.wav', content_type: 'audio/wav' } })
    nock('https://v3.fal.media')
      .get('/files/m.wav')
      .reply(200, Buffer.from('RIFF'), { 'content-type': 'audio/wav' })
    const { json } = await ok(
      fal,
      'audio',
      'https://fal.run',
      { prompt: 'lofi', seconds_total: 30 },
      {
        params: { model: 'fal-ai/stable-audio-25/text-to-audio' },
      },
    )
    expect(json).toEqual({ audio: { url: 'https://gw.test/blobs/1', content_type: 'audio/wav' } })
  })

  it('a result that cannot be re-hosted fails (so the call is refunded)', async () => {
    nock('https://fal.run')
      .post('/fal-ai/flux-pro')
      .reply(200, { images: [{ url: 'https://v3.fal.media/x.png' }] })
    nock('https://v3.fal.media').get('/x.png').reply(404)
    const result = await callUpstream({
      family: fal,
      operation: 'image',
      body: { prompt: 'p' },
      params: { model: 'fal-ai/flux-pro' },
      baseUrl: 'https://fal.run',
      apiKey: 'k',
      blobs: memoryBlobs(),
      resolveHost: publicResolver,
    })
    expect(result).toMatchObject({ status: 'failed', reason: 'media URL could not be downloaded' })
  })
})

describe('firecrawl', () => {
  const base = 'https://api.firecrawl.dev/v1'
  const auth = { reqheaders: { authorization: 'Bearer secret-key' } }

  it('scrape and map answer directly', async () => {
    nock('https://api.firecrawl.dev', auth)
      .post('/v1/scrape', { url: 'https://e.com', formats: ['markdown'] })
      .reply(200, { success: true, data: { markdown: '# E' } })
    nock('https://api.firecrawl.dev', auth)
      .post('/v1/map', { url: 'https://e.com' })
      .reply(200, { success: true, links: ['https://e.com/a'] })
    expect((await ok(firecrawl, 'scrape', base, { url: 'https://e.com' })).json.data).toEqual({
      markdown: '# E',
    })
    expect((await ok(firecrawl, 'map', base, { url: 'https://e.com' })).json.links).toEqual([
      'https://e.com/a',
    ])
  })

  it('crawl starts a bounded job and polls it to completion', async () => {
    nock('https://api.firecrawl.dev', auth)
      .post('/v1/crawl', {
        url: 'https://e.com',
        limit: 10,
        scrapeOptions: { formats: ['markdown'] },
      })
      .reply(200, { success: true, id: 'job-1', url: `${base}/crawl/job-1` })
    nock('https://api.firecrawl.dev', auth)
      .get('/v1/crawl/job-1')
      .reply(200, { status: 'scraping', completed: 1 })
    nock('https://api.firecrawl.dev', auth)
      .get('/v1/crawl/job-1')
      .reply(200, {
        status: 'completed',
        completed: 2,
        data: [{ markdown: 'a' }, { markdown: 'b' }],
      })
    const { json } = await ok(firecrawl, 'crawl', base, { url: 'https://e.com' })
    expect(json).toMatchObject({ status: 'completed', completed: 2 })
  })

  it('extract sends urls + schema and a failed job fails', async () => {
    const schema = { type: 'object', properties: { title: { type: 'string' } } }
    nock('https://api.firecrawl.dev', auth)
      .post('/v1/extract', { urls: ['https://e.com'], schema })
      .reply(200, { success: true, id: 'ex-1' })
    nock('https://api.firecrawl.dev').get('/v1/extract/ex-1').reply(200, { status: 'failed' })
    const result = await callUpstream({
      family: firecrawl,
      operation: 'extract',
      body: { url: 'https://e.com', schema },
      baseUrl: base,
      apiKey: 'secret-key',
      blobs: memoryBlobs(),
      sleep: async () => {},
    })
    expect(result).toMatchObject({
      status: 'failed',
      reason: 'upstream firecrawl extract job failed',
    })
  })
  it('a job that never finishes is cut at the family timeout', async () => {
    nock('https://api.firecrawl.dev').post('/v1/crawl').reply(200, { success: true, id: 'slow' })
    nock('https://api.firecrawl.dev')
      .get('/v1/crawl/slow')
      .optionally()
      .reply(200, { status: 'scraping' })
    const result = await callUpstream({
      family: firecrawl,
      operation: 'crawl',
      body: { url: 'https://e.com' },
      baseUrl: base,
      apiKey: 'k',
      blobs: memoryBlobs(),
      timeoutMs: 100,
    })
    expect(result).toMatchObject({ status: 'failed', retryable: true })
    if (result.status === 'failed') expect(result.reason).toMatch(/timed out after 100 ms/)
  })
})

describe('brave', () => {
  const base = 'https://api.search.brave.com/res/v1'
  const auth = {
    reqheaders: { 'x-subscription-token': 'secret-key' },
    badheaders: ['authorization'],
  }

  it.each(['web', 'images', 'news', 'videos'])('QUERY becomes GET /%s/search?q=…', async (kind) => {
    nock('https://api.search.brave.com', auth)
      .get(`/res/v1/${kind}/search`)
      .query({ q: 'sui & usdc' })
      .reply(200, { type: 'search', results: [kind] })
    const { json } = await ok(brave, 'search', base, { q: 'sui & usdc' }, { params: { kind } })
    expect(json.results).toEqual([kind])
  })

  it('summarizer: web search with summary=1, then the summarizer key', async () => {
    nock('https://api.search.brave.com', auth)
      .get('/res/v1/web/search')
      .query({ q: 'what is sui', summary: '1' })
      .reply(200, { summarizer: { type: 'summarizer', key: '{"query":"what is sui"}' } })
    nock('https://api.search.brave.com', auth)
      .get('/res/v1/summarizer/search')
      .query({ key: '{"query":"what is sui"}', entity_info: '1' })
      .reply(200, { type: 'summarizer', status: 'complete', summary: [{ data: 'Sui is…' }] })
    const { json } = await ok(
      brave,
      'search',
      base,
      { q: 'what is sui' },
      { params: { kind: 'summarizer' } },
    )
    expect(json.status).toBe('complete')
  })

  it('summarizer without a key fails', async () => {
    nock('https://api.search.brave.com')
      .get('/res/v1/web/search')
      .query(true)
      .reply(200, { web: {} })
    const result = await callUpstream({
      family: brave,
      operation: 'search',
      body: { q: 'x' },
      params: { kind: 'summarizer' },
      baseUrl: base,
      apiKey: 'k',
      blobs: memoryBlobs(),
    })
    expect(result).toMatchObject({ status: 'failed', retryable: false })
  })
})

describe('resend', () => {
  it('posts /emails with a bearer key and the paid call id as Idempotency-Key', async () => {
    const email = { from: 'A <a@e.com>', to: ['b@e.com'], subject: 'Hi', text: 'yo' }
    nock('https://api.resend.com', {
      reqheaders: { authorization: 'Bearer secret-key', 'idempotency-key': 'digest-123' },
    })
      .post('/emails', email)
      .reply(200, { id: 'em_1' })
    const { json } = await ok(resend, 'send', 'https://api.resend.com', email, {
      requestId: 'digest-123',
    })
    expect(json).toEqual({ id: 'em_1' })
  })
})

describe('openai-compatible chat', () => {
  it.each([
    [
      'https://api.groq.com/openai/v1',
      'https://api.groq.com',
      '/openai/v1/chat/completions',
      'llama-3.3-70b-versatile',
    ],
    ['https://api.perplexity.ai', 'https://api.perplexity.ai', '/chat/completions', 'sonar'],
    ['https://api.deepseek.com', 'https://api.deepseek.com', '/chat/completions', 'deepseek-chat'],
  ])('%s', async (baseUrl, origin, path, model) => {
    nock(origin, { reqheaders: { authorization: 'Bearer secret-key' } })
      .post(path, { model, messages: [{ role: 'user', content: 'q' }] })
      .reply(200, { id: 'c', choices: [] })
    const { json } = await ok(
      openaiCompatible,
      'chat',
      baseUrl,
      { messages: [{ role: 'user', content: 'q' }] },
      {
        defaults: { model },
      },
    )
    expect(json.id).toBe('c')
  })

  it('the open-model list is a GET /models', async () => {
    nock('http://inference.test')
      .get('/v1/models')
      .reply(200, { object: 'list', data: [{ id: 'm' }] })
    const { json } = await ok(openaiCompatible, 'models', 'http://inference.test/v1', {})
    expect(json.data).toEqual([{ id: 'm' }])
  })
})

describe('every endpoint of the default catalog: upstream failure → failed', () => {
  const catalog = withUpstreams(defaultCatalog(), {
    baseUrls: Object.fromEntries(
      defaultCatalog().services.map((s) => [s.segment, `https://upstream.test/${s.segment}`]),
    ),
  })
  const bodyOf = (endpoint: (typeof catalog.services)[number]['endpoints'][number]) => {
    if (endpoint.kind === 'free') return {}
    if (endpoint.shape.name === 'TRANSCRIBE-FILE')
      return { file: Buffer.from('ID3audio').toString('base64') }
    // Media inputs as base64, so that only the provider is called.
    if ('image' in endpoint.shape.example) {
      return { ...endpoint.shape.example, image: Buffer.from('\x89PNGdata').toString('base64') }
    }
    return { ...endpoint.shape.example }
  }

  it.each(entries(catalog).map((e) => [e.endpoint.path, e] as const))(
    '%s: 500 is retried then failed; 400 is failed at once; a timeout is cut; the key never shows',
    async (_path, { service, endpoint }) => {
      const key = 'key-that-must-not-leak-123'
      const pathParams =
        endpoint.kind === 'paid'
          ? Object.fromEntries(
              Object.entries(endpoint.pathParams ?? {}).map(([name, p]) => [name, p.example]),
            )
          : {}
      const options = {
        family: families[service.family],
        operation: endpoint.upstream.operation,
        body: bodyOf(endpoint),
        defaults: endpoint.upstream.defaults,
        params: { ...endpoint.upstream.params, ...pathParams },
        baseUrl: service.upstream.baseUrl,
        apiKey: key,
        blobs: memoryBlobs(),
        sleep: async () => {},
      }
      // Whichever method the family uses (GET←q or POST), at most its attempts (3).
      const path = new RegExp(`^/${service.segment}(?:[/?]|$)`)
      const answer = (status: number, times: number) => {
        for (const method of ['GET', 'POST']) {
          nock('https://upstream.test')
            .intercept(path, method)
            .times(times)
            .optionally()
            .reply(status, { error: { message: `error for ${key}` } })
        }
      }
      const attempts = families[service.family].attempts ?? 3
      answer(500, attempts)
      const transient = await callUpstream(options)
      expect(transient).toMatchObject({ status: 'failed', retryable: true, upstreamStatus: 500 })
      nock.cleanAll()
      answer(400, 1)
      const permanent = await callUpstream(options)
      expect(permanent).toMatchObject({ status: 'failed', retryable: false, upstreamStatus: 400 })
      nock.cleanAll()
      // A provider that does not answer in time: cut at the timeout, a transient failure.
      for (const method of ['GET', 'POST']) {
        nock('https://upstream.test')
          .intercept(path, method)
          .optionally()
          .delay(1_000)
          .reply(200, {})
      }
      const slow = await callUpstream({ ...options, timeoutMs: 100, retry: { attempts: 1 } })
      expect(slow).toMatchObject({ status: 'failed', retryable: true })
      expect(JSON.stringify([transient, permanent, slow])).not.toContain(key)
      nock.abortPendingRequests()
    },
  )
})
