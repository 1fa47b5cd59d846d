/**
 * Deterministic fake answers of every upstream family, as functions from a request (the parts of a
 * Web `Request` they read) to a Web `Response`. Same input, same answer; no clock, no randomness.
 * Auth headers are required as each provider requires them (any non-empty key, or the configured
 * one).
 *
 * @module
 */
import { createHash } from 'node:crypto'

/**
 * What a stub handler reads of a request: the parts of a Web `Request` the handlers use, built
 * without one (the stub server answers the gateway's load in the benchmarks on the same cores).
 */
export type StubRequest = Pick<Request, 'method' | 'url' | 'json' | 'formData'> & {
  headers: Pick<Headers, 'get'>
}

/** A stub handler: the request, the path after the provider prefix, the stub's origin. */
export type StubHandler = (request: StubRequest, rest: string, origin: string) => Promise<Response>

/** Fixed `created` timestamp of every stub answer. */
export const stubCreated = 1_700_000_000

/** Deterministic bytes the stub serves as "media": a PNG signature, an MP3 frame header, WAV. */
export const stubMedia = {
  png: new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d]),
  mp3: new Uint8Array([0xff, 0xfb, 0x90, 0x64, 0, 0, 0, 0]),
  wav: new TextEncoder().encode('RIFF\x24\x00\x00\x00WAVEfmt '),
} as const

/** Content types of {@link stubMedia}. */
export const mediaTypes = { png: 'image/png', mp3: 'audio/mpeg', wav: 'audio/wav' } as const

/** A JSON answer. */
export function json(value: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(value), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  })
}

/** An OpenAI-style error answer. */
export function stubError(
  status: number,
  message: string,
  type = 'invalid_request_error',
): Response {
  return json({ error: { message, type, code: null, param: null } }, status)
}

/** A short deterministic id of a value. */
export function digest(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('hex').slice(0, 24)
}

/** The request's JSON object body, or `{}`. */
export async function body(request: StubRequest): Promise<Record<string, unknown>> {
  try {
    const value = (await request.json()) as unknown
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {}
  } catch {
    return {}
  }
}

function lastText(messages: unknown): string {
  if (!Array.isArray(messages)) return ''
  const last = messages[messages.length - 1] as { content?: unknown } | undefined
  return typeof last?.content === 'string' ? last.content.slice(0, 200) : ''
}

/** The deterministic reply text of a stub chat. */
export function stubReply(prompt: string): string {
  return `Stub reply to: ${prompt}`
}

/** A deterministic embedding vector. */
export function vector(seed: string, size = 8): number[] {
  const hash = createHash('sha256').update(seed).digest()
  return Array.from({ length: size }, (_, i) => Math.round(((hash[i] ?? 0) / 255) * 1e6) / 1e6)
}

/** OpenAI-style chat completion, or an SSE stream of chunks ending `data: [DONE]`. */
async function chatCompletions(request: StubRequest): Promise<Response> {
  const input = await body(request)
  const model = typeof input.model === 'string' ? input.model : 'stub-model'
  const content = stubReply(lastText(input.messages))
  const id = `chatcmpl-${digest(input)}`
  if (input.stream === true) {
    const words = content.split(' ')
    const events = [
      {
        id,
        object: 'chat.completion.chunk',
        created: stubCreated,
        model,
        choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }],
      },
      ...words.map((word, i) => ({
        id,
        object: 'chat.completion.chunk',
        created: stubCreated,
        model,
        choices: [
          { index: 0, delta: { content: i === 0 ? word : ` ${word}` }, finish_reason: null },
        ],
      })),
      {
        id,
        object: 'chat.completion.chunk',
        created: stubCreated,
        model,
        choices: [{ index: 0, delta: {}, finish_reason: 'stop' }],
      },
    ]
    const text = `${events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('')}data: [DONE]\n\n`
    return new Response(text, {
      status: 200,
      headers: { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' },
    })
  }
  const promptTokens = JSON.stringify(input.messages ?? []).length
  const completionTokens = content.split(' ').length
  return json({
    id,
    object: 'chat.completion',
    created: stubCreated,
    model,
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
    usage: {
      prompt_tokens: promptTokens,
      completion_tokens: completionTokens,
      total_tokens: promptTokens + completionTokens,
    },
  })
}

async function transcriptions(request: StubRequest): Promise<Response> {
  const type = request.headers.get('content-type') ?? ''
  if (!type.startsWith('multipart/form-data')) {
    return stubError(400, 'transcriptions take multipart/form-data')
  }
  const form = await request.formData()
  const file = form.get('file')
  if (!(file instanceof Blob)) return stubError(400, "'file' is a required form field")
  const bytes = new Uint8Array(await file.arrayBuffer())
  const language = form.get('language')
  return json({
    text: `Stub transcript of ${bytes.byteLength} bytes (${createHash('sha256').update(bytes).digest('hex').slice(0, 12)})`,
    ...(typeof language === 'string' ? { language } : {}),
  })
}

/** Handlers of the OpenAI-compatible surface (chat, transcription, models). */
function openaiCompatibleRoutes(request: StubRequest, rest: string): Promise<Response> | undefined {
  if (request.method === 'POST' && rest === '/chat/completions') return chatCompletions(request)
  if (request.method === 'POST' && rest === '/audio/transcriptions') return transcriptions(request)
  if (request.method === 'GET' && rest === '/models') {
    return Promise.resolve(
      json({
        object: 'list',
        data: ['llama-3.3-70b', 'qwen3-32b', 'confidential/llama-3.3-70b'].map((id) => ({
          id,
          object: 'model',
          created: stubCreated,
          owned_by: 'stub',
          pricing: { input: '0.10', output: '0.30' },
          context_window: 131072,
          privacy: id.startsWith('confidential/') ? 'confidential' : 'private',
        })),
      }),
    )
  }
  return undefined
}

/** Whether `authorization` is `<prefix><something>`. */
export function bearer(request: StubRequest, prefix = 'Bearer '): boolean {
  const value = request.headers.get('authorization') ?? ''
  return value.startsWith(prefix) && value.length > prefix.length
}

/** OpenAI: chat, embeddings, images, transcription, speech, models. */
export const openaiStub: StubHandler = async (request, rest, origin) => {
  if (!bearer(request)) return stubError(401, 'missing bearer key', 'authentication_error')
  const common = openaiCompatibleRoutes(request, rest)
  if (common) return common
  if (request.method !== 'POST') return stubError(404, 'not found')
  if (rest === '/embeddings') {
    const input = await body(request)
    const inputs = Array.isArray(input.input) ? input.input : [input.input]
    return json({
      object: 'list',
      model: input.model ?? 'text-embedding-3-small',
      data: inputs.map((text, index) => ({
        object: 'embedding',
        index,
        embedding: vector(String(text)),
      })),
      usage: { prompt_tokens: inputs.length, total_tokens: inputs.length },
    })
  }
  if (rest === '/images/generations') {
    const input = await body(request)
    const count = typeof input.n === 'number' ? input.n : 1
    const base64 = input.response_format === 'b64_json' || input.model === 'gpt-image-1'
    return json({
      created: stubCreated,
      data: Array.from({ length: count }, () =>
        base64
          ? {
              b64_json: Buffer.from(stubMedia.png).toString('base64'),
              revised_prompt: String(input.prompt),
            }
          : { url: `${origin}/media/image.png` },
      ),
    })
  }
  if (rest === '/audio/speech') {
    const input = await body(request)
    if (typeof input.input !== 'string' || typeof input.voice !== 'string') {
      return stubError(400, 'input and voice are required')
    }
    return new Response(stubMedia.mp3, { status: 200, headers: { 'content-type': 'audio/mpeg' } })
  }
  return stubError(404, 'not found')
}

/** OpenAI-compatible providers (groq, perplexity, deepseek, together, mistral, the private inference). */
export const openaiCompatibleStub: StubHandler = async (request, rest, origin) =>
  openaiStub(request, rest, origin)

/** Anthropic messages (requires `x-api-key` and `anthropic-version`). */
export const anthropicStub: StubHandler = async (request, rest) => {
  if (!request.headers.get('x-api-key')) {
    return json(
      {
        type: 'error',
        error: { type: 'authentication_error', message: 'x-api-key header is required' },
      },
      401,
    )
  }
  if (request.headers.get('anthropic-version') !== '2023-06-01') {
    return json(
      {
        type: 'error',
        error: { type: 'invalid_request_error', message: 'anthropic-version header is required' },
      },
      400,
    )
  }
  if (request.method !== 'POST' || rest !== '/messages') return stubError(404, 'not found')
  const input = await body(request)
  const text = stubReply(lastText(input.messages))
  return json({
    id: `msg_${digest(input)}`,
    type: 'message',
    role: 'assistant',
    model: input.model,
    content: [{ type: 'text', text }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: {
      input_tokens: JSON.stringify(input.messages ?? []).length,
      output_tokens: text.split(' ').length,
    },
  })
}

/** Gemini `models/<model>:generateContent` / `:embedContent` (requires `x-goog-api-key`). */
export const geminiStub: StubHandler = async (request, rest) => {
  if (!request.headers.get('x-goog-api-key')) {
    return json(
      { error: { code: 403, message: 'API key missing', status: 'PERMISSION_DENIED' } },
      403,
    )
  }
  const match = /^\/models\/([a-z0-9.-]+):(generateContent|embedContent)$/.exec(rest)
  if (request.method !== 'POST' || !match) return stubError(404, 'not found')
  const input = await body(request)
  if (match[2] === 'embedContent') {
    const parts = (input.content as { parts?: { text?: string }[] } | undefined)?.parts ?? []
    return json({ embedding: { values: vector(parts.map((p) => p.text ?? '').join(' ')) } })
  }
  const contents = (input.contents as { parts?: { text?: string }[] }[] | undefined) ?? []
  const prompt = contents[contents.length - 1]?.parts?.map((p) => p.text ?? '').join(' ') ?? ''
  return json({
    candidates: [
      {
        content: { role: 'model', parts: [{ text: stubReply(prompt.slice(0, 200)) }] },
        finishReason: 'STOP',
        index: 0,
      },
    ],
    usageMetadata: {
      promptTokenCount: prompt.length,
      candidatesTokenCount: 4,
      totalTokenCount: prompt.length + 4,
    },
    modelVersion: match[1],
  })
}

/** fal model endpoints (requires `Authorization: Key …`). Media answers point at `/media/…`. */
export const falStub: StubHandler = async (request, rest, origin) => {
  if (!bearer(request, 'Key ')) return json({ detail: 'Missing authorization' }, 401)
  if (request.method !== 'POST') return stubError(404, 'not found')
  const input = await body(request)
  if (rest.endsWith('/whisper')) {
    return json({ text: `Stub transcript of ${String(input.audio_url)}`, chunks: [] })
  }
  if (rest.includes('text-to-audio')) {
    return json({
      audio: {
        url: `${origin}/media/music.wav`,
        content_type: 'audio/wav',
        file_name: 'music.wav',
        file_size: stubMedia.wav.byteLength,
      },
    })
  }
  const count = typeof input.num_images === 'number' ? input.num_images : 1
  return json({
    images: Array.from({ length: count }, (_, i) => ({
      url: `${origin}/media/image-${i}.png`,
      width: 1024,
      height: 1024,
      content_type: 'image/png',
    })),
    seed: 42,
    has_nsfw_concepts: Array.from({ length: count }, () => false),
    prompt: input.prompt,
  })
}

/** Firecrawl v1: scrape, map, and crawl/extract jobs that are complete on the first poll. */
export const firecrawlStub: StubHandler = async (request, rest) => {
  if (!bearer(request)) return json({ success: false, error: 'Unauthorized' }, 401)
  if (request.method === 'GET') {
    const job = /^\/(crawl|extract)\/([A-Za-z0-9_-]+)$/.exec(rest)
    if (!job) return stubError(404, 'not found')
    return job[1] === 'crawl'
      ? json({
          success: true,
          status: 'completed',
          completed: 1,
          total: 1,
          data: [{ markdown: `# Crawled (${job[2]})`, metadata: { sourceURL: 'stub' } }],
        })
      : json({ success: true, status: 'completed', data: { title: `Extracted (${job[2]})` } })
  }
  const input = await body(request)
  const url = String(input.url ?? (Array.isArray(input.urls) ? input.urls[0] : ''))
  switch (rest) {
    case '/scrape':
      return json({
        success: true,
        data: { markdown: `# Stub page\n\n${url}`, metadata: { sourceURL: url, statusCode: 200 } },
      })
    case '/map':
      return json({ success: true, links: [url, `${url.replace(/\/$/, '')}/about`] })
    case '/crawl':
      return json({ success: true, id: `crawl-${digest(input)}` })
    case '/extract':
      return json({ success: true, id: `extract-${digest(input)}` })
    default:
      return stubError(404, 'not found')
  }
}

/** Brave Search: `GET /<kind>/search?q=…` (requires `X-Subscription-Token`), summarizer by key. */
export const braveStub: StubHandler = async (request, rest) => {
  if (!request.headers.get('x-subscription-token')) {
    return json(
      { type: 'ErrorResponse', error: { code: 'SUBSCRIPTION_TOKEN_INVALID', status: 401 } },
      401,
    )
  }
  const match = /^\/(web|images|news|videos|summarizer)\/search$/.exec(rest)
  if (request.method !== 'GET' || !match) return stubError(404, 'not found')
  const params = new URL(request.url).searchParams
  const kind = match[1] as string
  if (kind === 'summarizer') {
    const key = params.get('key')
    if (!key)
      return json({ type: 'ErrorResponse', error: { code: 'VALIDATION', status: 422 } }, 422)
    return json({
      type: 'summarizer',
      status: 'complete',
      title: 'Summary',
      summary: [{ type: 'token', data: `Stub summary for ${key}` }],
    })
  }
  const q = params.get('q') ?? ''
  const results = [
    { title: `Result for ${q}`, url: `https://example.com/search?q=${encodeURIComponent(q)}` },
  ]
  return json({
    type: 'search',
    query: { original: q },
    [kind]: { type: 'search', results },
    ...(params.get('summary') === '1'
      ? { summarizer: { type: 'summarizer', key: JSON.stringify({ query: q }) } }
      : {}),
  })
}

/** Resend `POST /emails` (bearer key); the id is derived from the Idempotency-Key or the body. */
export const resendStub: StubHandler = async (request, rest) => {
  if (!bearer(request))
    return json({ statusCode: 401, name: 'missing_api_key', message: 'Missing API key' }, 401)
  if (request.method === 'POST' && rest === '/emails/batch') {
    const list = (await request.json().catch(() => null)) as unknown
    if (!Array.isArray(list) || list.length === 0 || list.length > 100) {
      return json({ statusCode: 422, name: 'validation_error', message: '1 to 100 emails' }, 422)
    }
    const key = request.headers.get('idempotency-key')
    return json({ data: list.map((item, i) => ({ id: `email-${digest([key ?? item, i])}` })) })
  }
  if (request.method !== 'POST' || rest !== '/emails') return stubError(404, 'not found')
  const input = await body(request)
  if (!input.from || !input.to || !input.subject) {
    return json(
      { statusCode: 422, name: 'validation_error', message: 'from, to and subject are required' },
      422,
    )
  }
  return json({ id: `email-${digest(request.headers.get('idempotency-key') ?? input)}` })
}

/** `GET /media/<name>`: deterministic media bytes by extension. */
export const mediaStub: StubHandler = async (request, rest) => {
  const match = /^\/[a-z0-9-]+\.(png|mp3|wav)$/.exec(rest)
  if (request.method !== 'GET' || !match) return new Response('not found', { status: 404 })
  const kind = match[1] as keyof typeof stubMedia
  return new Response(stubMedia[kind], {
    status: 200,
    headers: { 'content-type': mediaTypes[kind] },
  })
}
