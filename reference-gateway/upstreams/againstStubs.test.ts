import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type StubUpstreams, startStubUpstreams } from '../../src/testing/upstreams/index.js'
import { type Catalog, entries, withUpstreams } from '../catalog/catalog.js'
import { defaultCatalog } from '../catalog/default.js'
import { families } from './families.js'
import { memoryBlobs } from './testHelpers.js'
import { callUpstream } from './upstream.js'

let stubs: StubUpstreams
let catalog: Catalog

beforeAll(async () => {
  stubs = await startStubUpstreams()
  catalog = withUpstreams(defaultCatalog(), { baseUrls: stubs.baseUrls })
})
afterAll(async () => {
  await stubs.stop()
})

function exampleBody(shape: string, example: Record<string, unknown>): Record<string, unknown> {
  // The examples point at example.com; on the stubs, media comes from the stub itself.
  if (shape === 'TRANSCRIBE-FILE') return { ...example, file: `${stubs.origin}/media/voice.mp3` }
  if ('image' in example) return { ...example, image: `${stubs.origin}/media/photo.png` }
  return { ...example }
}

describe('every catalog endpoint against the stub upstreams', () => {
  it('has a stub for every service of the default catalog (the gateway with no configuration)', () => {
    expect(Object.keys(stubs.baseUrls).sort()).toEqual(
      defaultCatalog()
        .services.map((s) => s.segment)
        .sort(),
    )
  })

  it('answers ok with JSON for each endpoint of the default catalog', async () => {
    const answered: string[] = []
    for (const { service, endpoint } of entries(catalog)) {
      const body =
        endpoint.kind === 'paid'
          ? exampleBody(endpoint.shape.name, endpoint.shape.example as Record<string, unknown>)
          : {}
      const blobs = memoryBlobs()
      const pathParams =
        endpoint.kind === 'paid'
          ? Object.fromEntries(
              Object.entries(endpoint.pathParams ?? {}).map(([name, p]) => [name, p.example]),
            )
          : {}
      const result = await callUpstream({
        family: families[service.family],
        operation: endpoint.upstream.operation,
        body,
        defaults: endpoint.upstream.defaults,
        params: { ...endpoint.upstream.params, ...pathParams },
        baseUrl: service.upstream.baseUrl,
        apiKey: 'stub-key',
        blobs,
        allowInternalHosts: true,
        sleep: async () => {},
      })
      if (result.status !== 'ok') throw new Error(`${endpoint.path}: ${result.reason}`)
      expect(result.response.headers.get('content-type')).toMatch(/^application\/json/)
      const json = (await result.response.json()) as Record<string, unknown>
      expect(typeof json).toBe('object')
      answered.push(endpoint.path)
      // Media answers are re-hosted in the blob store, never the stub's own URLs.
      if (
        /images\/generations|audio\/speech|fal-ai\/(flux|recraft|stable)|elevenlabs|stability|screenshot|pdfshift|qrcode|tinify/.test(
          endpoint.path,
        )
      ) {
        expect(blobs.items.length).toBeGreaterThan(0)
        expect(JSON.stringify(json)).not.toContain(stubs.origin)
      }
    }
    expect(answered).toHaveLength(90)
  })

  it('streams an SSE chat ending in data: [DONE]', async () => {
    const result = await callUpstream({
      family: families.openai,
      operation: 'chat',
      body: { messages: [{ role: 'user', content: 'stream please' }], stream: true },
      defaults: { model: 'gpt-4o-mini' },
      baseUrl: stubs.baseUrls.openai,
      apiKey: 'stub-key',
      blobs: memoryBlobs(),
    })
    if (result.status !== 'ok') throw new Error(result.reason)
    expect(result.response.headers.get('content-type')).toMatch(/^text\/event-stream/)
    const text = await result.response.text()
    const events = text.split('\n\n').filter(Boolean)
    expect(events.at(-1)).toBe('data: [DONE]')
    const content = events
      .slice(0, -1)
      .map(
        (e) =>
          JSON.parse(e.slice('data: '.length)) as {
            object: string
            choices: { delta: { content?: string } }[]
          },
      )
      .map((chunk) => {
        expect(chunk.object).toBe('chat.completion.chunk')
        return chunk.choices[0]?.delta.content ?? ''
      })
      .join('')
    expect(content).toBe('Stub reply to: stream please')
  })

  it('is deterministic', async () => {
    const once = () =>
      callUpstream({
        family: families.anthropic,
        operation: 'messages',
        body: { model: 'claude', max_tokens: 5, messages: [{ role: 'user', content: 'same' }] },
        baseUrl: stubs.baseUrls.anthropic,
        apiKey: 'stub-key',
        blobs: memoryBlobs(),
      }).then(async (r) => (r.status === 'ok' ? r.response.text() : r.reason))
    expect(await once()).toBe(await once())
  })

  it("requires each provider's auth header", async () => {
    for (const [provider, path] of [
      ['openai', '/chat/completions'],
      ['anthropic', '/messages'],
      ['gemini', '/models/gemini-2.5-flash:generateContent'],
      ['fal', '/fal-ai/flux/dev'],
      ['firecrawl', '/scrape'],
      ['resend', '/emails'],
      ['elevenlabs', '/sound-generation'],
      ['newsapi', '/everything'],
      ['exa', '/search'],
      ['lob', '/postcards'],
      ['replicate', '/predictions'],
      ['cohere', '/chat'],
      ['virustotal', '/urls'],
      ['tinify', '/shrink'],
    ] as const) {
      const response = await fetch(`${stubs.baseUrls[provider]}${path}`, {
        method: 'POST',
        body: '{}',
      })
      expect(response.status, provider).toBeGreaterThanOrEqual(401)
      expect(response.status, provider).toBeLessThanOrEqual(403)
    }
    expect((await fetch(`${stubs.baseUrls.brave}/web/search?q=x`)).status).toBe(401)
  })

  it('injected failures reach the runner: retried, then failed', async () => {
    stubs.failNext('/deepseek/chat/completions', 503, 3)
    const body = { messages: [{ role: 'user', content: 'x' }] }
    const options = {
      family: families['openai-compatible'],
      operation: 'chat',
      body,
      defaults: { model: 'deepseek-chat' },
      baseUrl: stubs.baseUrls.deepseek,
      apiKey: 'stub-key',
      blobs: memoryBlobs(),
      sleep: async () => {},
      retry: { attempts: 2 },
    }
    expect(await callUpstream(options)).toMatchObject({
      status: 'failed',
      retryable: true,
      upstreamStatus: 503,
    })
    // The third injected failure is retried away on the next call.
    expect((await callUpstream(options)).status).toBe('ok')
    const deepseek = stubs.calls.filter((c) => c.provider === 'deepseek').map((c) => c.status)
    expect(deepseek.slice(-4)).toEqual([503, 503, 503, 200])
  })

  it('a slow stub trips the timeout', async () => {
    stubs.delayNext('/resend/emails', 300)
    const result = await callUpstream({
      family: families.resend,
      operation: 'send',
      body: { from: 'a@e.com', to: 'b@e.com', subject: 's', text: 't' },
      baseUrl: stubs.baseUrls.resend,
      apiKey: 'stub-key',
      blobs: memoryBlobs(),
      timeoutMs: 50,
      retry: { attempts: 1 },
    })
    expect(result).toMatchObject({ status: 'failed', retryable: true })
  })

  it('onSend is asked just before the provider is: false sends nothing, true sends the request', async () => {
    const send = (onSend: () => boolean) =>
      callUpstream({
        family: families.resend,
        operation: 'send',
        body: { from: 'a@e.com', to: 'b@e.com', subject: 's', text: 't' },
        baseUrl: stubs.baseUrls.resend,
        apiKey: 'stub-key',
        blobs: memoryBlobs(),
        onSend,
      })
    const before = stubs.calls.length
    let asked = 0
    const cancelled = await send(() => {
      asked++
      return false
    })
    expect(cancelled).toMatchObject({ status: 'failed', reason: 'the call was cancelled' })
    expect(asked).toBe(1)
    expect(stubs.calls.length).toBe(before)
    expect((await send(() => true)).status).toBe('ok')
    expect(stubs.calls.slice(before)).toMatchObject([{ provider: 'resend', answered: true }])
  })
})
