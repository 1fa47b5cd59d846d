import { PassThrough } from 'node:stream'
import nock from 'nock'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { openai } from './openai.js'
import { openaiCompatible } from './openaiCompatible.js'
import { capturedForm, memoryBlobs, publicResolver } from './testHelpers.js'
import {
  type CallUpstreamOptions,
  callUpstream,
  type Family,
  type UpstreamEvent,
} from './upstream.js'

const key = 'sk-test-0123456789abcdef'
const base = 'https://api.openai.com'

beforeAll(() => nock.disableNetConnect())
afterEach(() => {
  expect(nock.pendingMocks()).toEqual([])
  nock.cleanAll()
})
afterAll(() => nock.enableNetConnect())

function call(
  operation: string,
  body: Record<string, unknown>,
  extra: Partial<CallUpstreamOptions> = {},
) {
  const blobs = memoryBlobs()
  const promise = callUpstream({
    family: openai,
    operation,
    body,
    baseUrl: `${base}/v1`,
    apiKey: key,
    blobs,
    sleep: async () => {},
    resolveHost: publicResolver,
    ...extra,
  })
  return { blobs, promise }
}

describe('chat', () => {
  it('posts the body with the default model and a bearer key, and answers the JSON', async () => {
    const answer = {
      id: 'c1',
      object: 'chat.completion',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hi' } }],
    }
    nock(base, {
      reqheaders: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    })
      .post('/v1/chat/completions', {
        model: 'gpt-4o-mini',
        messages: [{ role: 'user', content: 'hello' }],
        temperature: 0.5,
      })
      .reply(200, answer)
    const { promise } = call(
      'chat',
      { messages: [{ role: 'user', content: 'hello' }], temperature: 0.5 },
      { defaults: { model: 'gpt-4o-mini' } },
    )
    const result = await promise
    expect(result.status).toBe('ok')
    if (result.status !== 'ok') return
    expect(await result.response.json()).toEqual(answer)
  })

  it('a buyer-chosen model wins over the default', async () => {
    nock(base)
      .post('/v1/chat/completions', (b) => b.model === 'gpt-4.1')
      .reply(200, { id: 'x' })
    const { promise } = call(
      'chat',
      { model: 'gpt-4.1', messages: [] },
      { defaults: { model: 'gpt-4o-mini' } },
    )
    expect((await promise).status).toBe('ok')
  })

  it('passes a streamed answer through byte for byte', async () => {
    const sse =
      ': keep-alive\n\n' +
      'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hé"}}]}\n\n' +
      'data: [DONE]\n\n'
    nock(base)
      .post('/v1/chat/completions', (b) => b.stream === true)
      .reply(200, sse, { 'content-type': 'text/event-stream; charset=utf-8' })
    const { promise } = call(
      'chat',
      { messages: [{ role: 'user', content: 'x' }], stream: true },
      { timeoutMs: 50 },
    )
    const result = await promise
    if (result.status !== 'ok') throw new Error(result.reason)
    expect(result.response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
    // Reading after the attempt timeout shows the stream is not cut by it.
    await new Promise((r) => setTimeout(r, 80))
    expect(Buffer.from(await result.response.arrayBuffer()).toString('utf8')).toBe(sse)
  })
  it('cuts a stream that stalls (the buyer sees an error, the call counts as failed)', async () => {
    nock(base)
      .post('/v1/chat/completions')
      .reply(
        200,
        () => {
          const stream = new PassThrough()
          stream.write('data: {"id":"c"}\n\n')
          return stream
        },
        { 'content-type': 'text/event-stream' },
      )
    const { promise } = call('chat', { messages: [], stream: true }, { streamIdleMs: 50 })
    const result = await promise
    if (result.status !== 'ok') throw new Error(result.reason)
    const reader = (result.response.body as ReadableStream<Uint8Array>).getReader()
    const first = await reader.read()
    expect(new TextDecoder().decode(first.value)).toBe('data: {"id":"c"}\n\n')
    await expect(reader.read()).rejects.toThrow('upstream stream sent nothing for 50 ms')
  })
})

describe('embeddings', () => {
  it('posts to /embeddings', async () => {
    nock(base, { reqheaders: { authorization: `Bearer ${key}` } })
      .post('/v1/embeddings', { model: 'text-embedding-3-small', input: ['a', 'b'] })
      .reply(200, { object: 'list', data: [{ embedding: [0.1] }, { embedding: [0.2] }] })
    const { promise } = call(
      'embeddings',
      { input: ['a', 'b'] },
      { defaults: { model: 'text-embedding-3-small' } },
    )
    const result = await promise
    if (result.status !== 'ok') throw new Error(result.reason)
    expect(((await result.response.json()) as { data: unknown[] }).data).toHaveLength(2)
  })
})

describe('images', () => {
  it('asks dall-e-3 for base64 and answers blob { url } entries', async () => {
    const png = Buffer.from('89504e470d0a1a0a0000', 'hex')
    nock(base)
      .post('/v1/images/generations', {
        model: 'dall-e-3',
        prompt: 'fox',
        size: '1024x1024',
        response_format: 'b64_json',
      })
      .reply(200, {
        created: 7,
        data: [{ b64_json: png.toString('base64'), revised_prompt: 'a fox' }],
      })
    const { promise, blobs } = call(
      'images',
      { prompt: 'fox', size: '1024x1024' },
      { defaults: { model: 'dall-e-3' } },
    )
    const result = await promise
    if (result.status !== 'ok') throw new Error(result.reason)
    expect(await result.response.json()).toEqual({
      created: 7,
      data: [{ url: 'https://gw.test/blobs/1', revised_prompt: 'a fox' }],
    })
    expect(Buffer.from(blobs.items[0]?.bytes ?? [])).toEqual(png)
    expect(blobs.items[0]?.contentType).toBe('image/png')
  })

  it('re-hosts URL results and sends no response_format to gpt-image-1', async () => {
    nock(base)
      .post('/v1/images/generations', (b) => b.model === 'gpt-image-1' && !('response_format' in b))
      .reply(200, { created: 1, data: [{ url: 'https://cdn.example.com/img/1.png' }] })
    nock('https://cdn.example.com', { badheaders: ['authorization'] })
      .get('/img/1.png')
      .reply(200, Buffer.from([1, 2, 3]), { 'content-type': 'image/png' })
    const { promise, blobs } = call('images', { prompt: 'fox', model: 'gpt-image-1' })
    const result = await promise
    if (result.status !== 'ok') throw new Error(result.reason)
    expect(await result.response.json()).toEqual({
      created: 1,
      data: [{ url: 'https://gw.test/blobs/1' }],
    })
    expect([...(blobs.items[0]?.bytes ?? [])]).toEqual([1, 2, 3])
  })
})

describe('transcription', () => {
  const audio = Buffer.from('ID3-fake-mp3-audio')

  it('downloads an audio URL once and uploads it as multipart/form-data, across a retry', async () => {
    nock('https://media.example.com')
      .get('/talk.mp3')
      .once()
      .reply(200, audio, { 'content-type': 'audio/mpeg' })
    nock(base)
      .post('/v1/audio/transcriptions')
      .reply(503, { error: { message: 'busy' } })
    let form: FormData | undefined
    nock(base, { reqheaders: { authorization: `Bearer ${key}` } })
      .post('/v1/audio/transcriptions')
      .reply(async function (_uri, body) {
        form = await capturedForm(body, String(this.req.headers['content-type']))
        return [200, { text: 'hello world' }]
      })
    const { promise } = call(
      'transcription',
      { file: 'https://media.example.com/talk.mp3', language: 'en' },
      { defaults: { model: 'whisper-1' } },
    )
    const result = await promise
    if (result.status !== 'ok') throw new Error(result.reason)
    expect(await result.response.json()).toEqual({ text: 'hello world' })
    const file = form?.get('file') as File
    expect(file.name).toBe('audio.mp3')
    expect(file.type).toBe('audio/mpeg')
    expect(Buffer.from(await file.arrayBuffer())).toEqual(audio)
    expect(form?.get('model')).toBe('whisper-1')
    expect(form?.get('language')).toBe('en')
    expect(form?.get('response_format')).toBe('json')
  })

  it('decodes a base64 data: URL into the file field', async () => {
    let form: FormData | undefined
    nock(base)
      .post('/v1/audio/transcriptions')
      .reply(async function (_uri, body) {
        form = await capturedForm(body, String(this.req.headers['content-type']))
        return [200, { text: 'ok' }]
      })
    const { promise } = call('transcription', {
      file: `data:audio/wav;base64,${audio.toString('base64')}`,
      model: 'whisper-1',
    })
    expect((await promise).status).toBe('ok')
    const file = form?.get('file') as File
    expect(file.name).toBe('audio.wav')
    expect(Buffer.from(await file.arrayBuffer())).toEqual(audio)
    expect(form?.has('language')).toBe(false)
  })

  it('refuses audio URLs on internal hosts without calling anyone', async () => {
    for (const file of [
      'http://127.0.0.1/a.mp3',
      'http://169.254.169.254/latest',
      'http://[::1]/a',
      'http://db.internal/a',
    ]) {
      const result = await call(
        'transcription',
        { file },
        { resolveHost: async () => [{ address: '10.0.0.5' }] },
      ).promise
      expect(result).toMatchObject({
        status: 'failed',
        reason: 'media URL could not be downloaded',
      })
    }
  })

  it('the groq family uploads to its own base URL with its default model', async () => {
    let form: FormData | undefined
    nock('https://api.groq.com', { reqheaders: { authorization: 'Bearer gsk' } })
      .post('/openai/v1/audio/transcriptions')
      .reply(async function (_uri, body) {
        form = await capturedForm(body, String(this.req.headers['content-type']))
        return [200, { text: 'groq' }]
      })
    const result = await callUpstream({
      family: openaiCompatible,
      operation: 'transcription',
      body: { file: audio.toString('base64') },
      defaults: { model: 'whisper-large-v3-turbo' },
      baseUrl: 'https://api.groq.com/openai/v1',
      apiKey: 'gsk',
      blobs: memoryBlobs(),
    })
    expect(result.status).toBe('ok')
    expect(form?.get('model')).toBe('whisper-large-v3-turbo')
  })
})

describe('speech', () => {
  it('stores the audio bytes and answers { url, content_type }', async () => {
    const mp3 = Buffer.from([0xff, 0xfb, 0x90, 0x00, 1, 2])
    nock(base)
      .post('/v1/audio/speech', {
        model: 'tts-1',
        input: 'hi',
        voice: 'nova',
        response_format: 'mp3',
      })
      .reply(200, mp3, { 'content-type': 'audio/mpeg' })
    const { promise, blobs } = call(
      'speech',
      { input: 'hi', voice: 'nova' },
      { defaults: { model: 'tts-1' } },
    )
    const result = await promise
    if (result.status !== 'ok') throw new Error(result.reason)
    expect(await result.response.json()).toEqual({
      url: 'https://gw.test/blobs/1',
      content_type: 'audio/mpeg',
    })
    expect(Buffer.from(blobs.items[0]?.bytes ?? [])).toEqual(mp3)
  })
})

describe('failures', () => {
  const body = { messages: [{ role: 'user', content: 'x' }] }

  it('retries a transient 5xx and succeeds', async () => {
    nock(base).post('/v1/chat/completions').reply(502, 'bad gateway')
    nock(base).post('/v1/chat/completions').reply(200, { id: 'second' })
    const events: UpstreamEvent[] = []
    const result = await call('chat', body, { onEvent: (e) => events.push(e) }).promise
    expect(result.status).toBe('ok')
    expect(events.map((e) => e.outcome)).toEqual([502, 200])
  })

  it('gives up after the attempts and answers failed, retryable', async () => {
    nock(base)
      .post('/v1/chat/completions')
      .times(3)
      .reply(503, { error: { message: 'overloaded' } })
    const result = await call('chat', body).promise
    expect(result).toEqual({
      status: 'failed',
      reason: 'upstream openai answered 503: overloaded',
      retryable: true,
      upstreamStatus: 503,
    })
  })

  it('honours Retry-After only within the budget', async () => {
    nock(base).post('/v1/chat/completions').reply(429, {}, { 'retry-after': '600' })
    const result = await call('chat', body, { retry: { budgetMs: 5000 } }).promise
    expect(result).toMatchObject({ status: 'failed', retryable: true, upstreamStatus: 429 })
  })

  it('does not retry a 4xx, and never puts the key in the reason', async () => {
    nock(base)
      .post('/v1/chat/completions')
      .once()
      .reply(401, {
        error: { message: `Incorrect API key provided: ${key}. Or ${key.slice(0, 10)}***` },
      })
    const result = await call('chat', body).promise
    expect(result).toMatchObject({ status: 'failed', retryable: false, upstreamStatus: 401 })
    if (result.status !== 'failed') return
    expect(result.reason).not.toContain(key)
    expect(result.reason).not.toContain(key.slice(0, 8))
    expect(result.reason).toContain('[redacted]')
  })

  it('times out a slow upstream', async () => {
    nock(base).post('/v1/chat/completions').times(3).delay(500).reply(200, { id: 'late' })
    const result = await call('chat', body, { timeoutMs: 50, retry: { budgetMs: 120 } }).promise
    expect(result).toMatchObject({ status: 'failed', retryable: true })
    if (result.status === 'failed') expect(result.reason).toMatch(/timed out after \d+ ms/)
    nock.abortPendingRequests()
    nock.cleanAll()
  })

  it('a connection error is transient', async () => {
    nock(base).post('/v1/chat/completions').times(3).replyWithError({ code: 'ECONNRESET' })
    const result = await call('chat', body).promise
    expect(result).toMatchObject({ status: 'failed', retryable: true })
  })

  it('non-JSON 200 answers fail', async () => {
    nock(base).post('/v1/embeddings').reply(200, '<html>oops</html>')
    const result = await call('embeddings', { input: 'a' }).promise
    expect(result).toMatchObject({
      status: 'failed',
      reason: 'upstream answered something other than JSON',
    })
  })

  it('an operation that throws is a failure, never an exception', async () => {
    const family: Family = {
      id: 'openai',
      timeoutMs: 1000,
      operations: {
        boom: {
          request: () => {
            throw new TypeError('bad')
          },
        },
        prep: {
          prepare: async () => {
            throw new RangeError('worse')
          },
          request: () => new Request(`${base}/never`),
        },
      },
    }
    const common = { family, body: {}, baseUrl: base, apiKey: key, blobs: memoryBlobs() }
    expect(await callUpstream({ ...common, operation: 'boom' })).toEqual({
      status: 'failed',
      reason: 'upstream openai request could not be built (TypeError)',
      retryable: false,
    })
    expect(await callUpstream({ ...common, operation: 'prep' })).toMatchObject({
      status: 'failed',
      reason: 'upstream openai request could not be prepared (RangeError)',
    })
  })

  it('no configured key: failed without any request', async () => {
    const result = await call('chat', body, { apiKey: undefined }).promise
    expect(result).toMatchObject({ status: 'failed', retryable: false })
    expect(await call('nope', body).promise).toMatchObject({ status: 'failed' })
  })
})
