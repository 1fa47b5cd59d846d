/**
 * Request shapes of the paid catalog, as zod schemas: the single source of truth for
 * validation before payment (an invalid body is a 400 naming the field, and nothing is charged) and
 * for the request-body schemas of the OpenAPI document (`z.toJSONSchema`).
 *
 * Every string and array has a size limit. Unknown fields are stripped, never forwarded upstream
 * (a client cannot smuggle `n: 100` or a `stream_options` into a fixed-price call).
 *
 * @module
 */
import { z } from 'zod'
import { iso6391 } from './iso639.js'

export { iso6391 } from './iso639.js'

/** A request shape: its name in the spec, its schema, and an example body that validates. */
export type Shape = {
  /** The spec's name for the shape (`CHAT`, `MESSAGES`, …). */
  readonly name: string
  /** One-line description for discovery documents. */
  readonly description: string
  /** The schema every request body goes through before payment. */
  readonly schema: z.ZodType
  /** A body that validates; shown in `/llms.txt`, the catalog page and the OpenAPI document. */
  readonly example: Readonly<Record<string, unknown>>
}

/** Longest model name accepted. */
const modelMax = 128
/** Longest single text field (prompt, message content, input), in characters. */
const textMax = 200_000
/** Most chat messages in one request. */
export const messagesMax = 256
/** Longest URL accepted. */
const urlMax = 2048

/** Image sizes of IMAGE-GEN. */
export const imageSizes = ['1024x1024', '1024x1792', '1792x1024'] as const
/** The two selectable image models of IMAGE-GEN. */
export const imageModels = ['dall-e-3', 'gpt-image-1'] as const
/** Voices of SPEECH. */
export const voices = ['alloy', 'echo', 'fable', 'onyx', 'nova', 'shimmer'] as const
/** The two quality tiers of SPEECH. */
export const speechModels = ['tts-1', 'tts-1-hd'] as const
/** Named image-size presets of IMAGE-TIER (the fal presets). */
export const imageSizePresets = [
  'square_hd',
  'square',
  'portrait_4_3',
  'portrait_16_9',
  'landscape_4_3',
  'landscape_16_9',
] as const

/** A model name. */
export const model = z.string().min(1).max(modelMax)
/** A text field of at most `max` characters. */
export const text = (max = textMax) => z.string().max(max)
const temperature = z.number().min(0, 'must be between 0 and 2').max(2, 'must be between 0 and 2')
/** An absolute http(s) URL of at most 2048 characters. */
export const httpUrl = z
  .string()
  .max(urlMax)
  .refine((value) => isHttpUrl(value), 'must be an http(s) URL')

/** Whether `value` parses as an absolute http: or https: URL. */
export function isHttpUrl(value: string): boolean {
  if (!/^https?:\/\//i.test(value)) return false
  try {
    const url = new URL(value)
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== ''
  } catch {
    return false
  }
}

/** One chat message (role system/user/assistant, text content). */
export const chatMessage = z.object({
  role: z.enum(['system', 'user', 'assistant']),
  content: text(),
})

/** Shape CHAT: OpenAI-style chat completions. */
export const chat: Shape = {
  name: 'CHAT',
  description:
    'Chat completion: a list of messages, optional model, temperature, max_tokens, stream',
  schema: z.object({
    model: model.optional(),
    messages: z.array(chatMessage).min(1).max(messagesMax),
    temperature: temperature.optional(),
    max_tokens: z.int().min(1).max(200_000).optional(),
    stream: z.boolean().optional(),
  }),
  example: { messages: [{ role: 'user', content: 'Say hello in one word.' }], max_tokens: 16 },
}

/** Shape MESSAGES: Anthropic-style messages. */
export const messages: Shape = {
  name: 'MESSAGES',
  description: 'Messages: model, user/assistant messages, max_tokens, optional system prompt',
  schema: z.object({
    model,
    messages: z
      .array(z.object({ role: z.enum(['user', 'assistant']), content: text() }))
      .min(1)
      .max(messagesMax),
    max_tokens: z.int().min(1).max(128_000),
    system: text().optional(),
  }),
  example: {
    model: 'claude-sonnet-4-5',
    max_tokens: 64,
    messages: [{ role: 'user', content: 'Say hello in one word.' }],
  },
}

/** Shape EMBED: text embeddings. */
export const embed: Shape = {
  name: 'EMBED',
  description: 'Embeddings: input text or array of texts, optional model',
  schema: z.object({
    model: model.optional(),
    input: z.union([text(100_000), z.array(text(100_000)).min(1).max(2048)]),
  }),
  example: { input: 'The quick brown fox' },
}

/** Shape IMAGE-GEN: OpenAI-style image generation; results come back as `{ url }` entries. */
export const imageGen: Shape = {
  name: 'IMAGE-GEN',
  description: 'Image generation: prompt, optional model, size and n; images returned as { url }',
  schema: z.object({
    model: z.enum(imageModels).optional(),
    prompt: z.string().min(1).max(4000),
    size: z.enum(imageSizes).optional(),
    n: z.int().min(1, 'must be 1').max(1, 'must be 1: one image per paid call').optional(),
  }),
  example: { prompt: 'A lighthouse at dawn, watercolor', size: '1024x1024' },
}

/** Largest transcription upload, decoded (the OpenAI and Groq limit). */
export const transcriptionMaxBytes = 25 * 1024 * 1024

const base64Pattern = /^[A-Za-z0-9+/]+={0,2}$/
const dataUrlPattern = /^data:[a-z0-9.+/-]+(?:;[a-z0-9=.-]+)*;base64,/i

/** Whether a TRANSCRIBE-FILE `file` value is a URL (as opposed to base64 / a data: URL). */
export function isAudioUrl(file: string): boolean {
  return /^https?:\/\//i.test(file)
}

/**
 * A file given as an http(s) URL or as base64 (raw or a `data:` URL) of at most `maxBytes` decoded.
 */
export function fileField(maxBytes: number, what = 'file') {
  return z
    .string()
    .min(1)
    .max(Math.ceil((maxBytes * 4) / 3) + 256)
    .refine((value) => {
      if (isAudioUrl(value)) return value.length <= urlMax && isHttpUrl(value)
      const body = value.replace(dataUrlPattern, '')
      return body.length % 4 === 0 && base64Pattern.test(body)
    }, `must be an http(s) URL or base64-encoded ${what}`)
}

/** Shape TRANSCRIBE-FILE: an audio URL or base64 file, sent upstream as multipart/form-data. */
export const transcribeFile: Shape = {
  name: 'TRANSCRIBE-FILE',
  description: 'Transcription: file (audio URL or base64), optional model and ISO-639-1 language',
  schema: z.object({
    file: fileField(transcriptionMaxBytes, 'audio'),
    model: model.optional(),
    language: z.enum(iso6391, 'must be an ISO-639-1 language code').optional(),
  }),
  example: { file: 'https://example.com/audio/hello.mp3', language: 'en' },
}

/** Shape SPEECH: text to speech; the audio comes back as `{ url }`. */
export const speech: Shape = {
  name: 'SPEECH',
  description:
    'Text to speech: input text and voice, optional model tier; audio returned as { url }',
  schema: z.object({
    model: z.enum(speechModels).optional(),
    input: z.string().min(1).max(4096),
    voice: z.enum(voices),
  }),
  example: { input: 'Hello from Tollgate.', voice: 'alloy' },
}

/** Shape IMAGE-TIER: fal-style image models. */
export const imageTier: Shape = {
  name: 'IMAGE-TIER',
  description: 'Image generation: prompt, optional image_size preset and num_images',
  schema: z.object({
    prompt: z.string().min(1).max(4000),
    image_size: z.enum(imageSizePresets).optional(),
    num_images: z.int().min(1).max(4).optional(),
  }),
  example: { prompt: 'A red fox in fresh snow', image_size: 'landscape_4_3' },
}

/** Shape TRANSCRIBE-URL: speech to text from an audio URL. */
export const transcribeUrl: Shape = {
  name: 'TRANSCRIBE-URL',
  description: 'Speech to text: audio_url',
  schema: z.object({ audio_url: httpUrl }),
  example: { audio_url: 'https://example.com/audio/hello.mp3' },
}

/** Shape URL: one web page or site. */
export const url: Shape = {
  name: 'URL',
  description: 'A web page or site: url',
  schema: z.object({ url: httpUrl }),
  example: { url: 'https://example.com' },
}

/** Shape URL + schema: LLM-based structured extraction with an optional free-form JSON schema. */
export const urlSchema: Shape = {
  name: 'URL+SCHEMA',
  description: 'Structured extraction: url and an optional JSON schema object',
  schema: z.object({
    url: httpUrl,
    schema: z.record(z.string().max(256), z.unknown()).optional(),
  }),
  example: {
    url: 'https://example.com',
    schema: { type: 'object', properties: { title: { type: 'string' } } },
  },
}

const parts = z
  .array(z.object({ text: text() }))
  .min(1)
  .max(64)

/** Shape CONTENTS: Gemini-style generateContent. */
export const contents: Shape = {
  name: 'CONTENTS',
  description: 'Generation: contents (role user/model, parts of text)',
  schema: z.object({
    contents: z
      .array(z.object({ role: z.enum(['user', 'model']).optional(), parts }))
      .min(1)
      .max(messagesMax),
  }),
  example: { contents: [{ role: 'user', parts: [{ text: 'Say hello in one word.' }] }] },
}

/** Shape EMBED-CONTENT: Gemini-style embedContent. */
export const embedContent: Shape = {
  name: 'EMBED-CONTENT',
  description: 'Text embeddings: content with parts of text',
  schema: z.object({ content: z.object({ parts }) }),
  example: { content: { parts: [{ text: 'The quick brown fox' }] } },
}

/** Shape QUERY: a search query (the provider's limit: 400 characters). */
export const query: Shape = {
  name: 'QUERY',
  description: 'Search: q',
  schema: z.object({ q: z.string().trim().min(1, 'must not be empty').max(400) }),
  example: { q: 'sui blockchain usdc' },
}

/** An e-mail address, bare or as `Name <address>`. */
export const mailbox = z
  .string()
  .max(320)
  .refine(
    (value) =>
      /^(?:[^<>@\s][^<>@]*<[^<>@\s]+@[^<>@\s]+\.[^<>@\s]+>|[^<>@\s]+@[^<>@\s]+\.[^<>@\s]+)$/.test(
        value,
      ),
    'must be an e-mail address or "Name <address>"',
  )

/**
 * Shape EMAIL: Resend-style e-mail. The spec does not say which fields are required; a sendable
 * e-mail needs `from`, `to`, `subject` and a body, so those are required (`html` or `text`).
 */
export const email: Shape = {
  name: 'EMAIL',
  description: 'E-mail: from, to (address or array), subject, html and/or text',
  schema: z
    .object({
      from: mailbox,
      to: z.union([mailbox, z.array(mailbox).min(1).max(50)]),
      subject: z.string().min(1).max(998),
      html: z.string().max(textMax).optional(),
      text: z.string().max(textMax).optional(),
    })
    .refine((body) => body.html !== undefined || body.text !== undefined, {
      message: 'html or text is required',
      path: ['text'],
    }),
  example: {
    from: 'Tollgate <hello@example.com>',
    to: 'someone@example.org',
    subject: 'Hello',
    text: 'Paid per request.',
  },
}

/** Shape MUSIC (body not shown in the spec): fal stable-audio text to audio, up to 3 minutes. */
export const music: Shape = {
  name: 'MUSIC',
  description:
    'Music generation: prompt and seconds_total (up to 180 s); audio returned as { url }',
  schema: z.object({
    prompt: z.string().min(1).max(2000),
    seconds_total: z.int().min(1).max(180, 'must be at most 180 (3 minutes)').optional(),
    num_inference_steps: z.int().min(1).max(100).optional(),
    guidance_scale: z.number().min(0).max(25).optional(),
    seed: z
      .int()
      .min(0)
      .max(2 ** 32 - 1)
      .optional(),
  }),
  example: { prompt: 'Calm lo-fi beat with soft piano', seconds_total: 30 },
}

/** Options of {@link openChat}. */
export type OpenChatOptions = {
  /** Model ids the route accepts (the allow-list). */
  models: readonly [string, ...string[]]
  /** Cap on `max_tokens`. Default 4096. */
  maxTokens?: number | undefined
}

/**
 * Shape OPEN-CHAT (body not shown in the spec): the private inference chat route behind the gateway,
 * with a model allow-list and a `max_tokens` cap (docs/inference.md, "The request").
 */
export function openChat(options: OpenChatOptions): Shape {
  const maxTokens = options.maxTokens ?? 4096
  return {
    name: 'OPEN-CHAT',
    description: `Chat with open and confidential models: model (allow-list), messages, max_tokens ≤ ${maxTokens}, temperature, stream`,
    schema: z.object({
      model: z.enum(
        options.models as [string, ...string[]],
        'must be a model from GET /open/v1/models',
      ),
      messages: z.array(chatMessage).min(1).max(messagesMax),
      stream: z.boolean().optional(),
      max_tokens: z.int().min(1).max(maxTokens, `must be at most ${maxTokens}`).optional(),
      temperature: temperature.optional(),
    }),
    example: {
      model: options.models[0],
      messages: [{ role: 'user', content: 'Say hello in one word.' }],
      max_tokens: 16,
    },
  }
}

/** Every fixed shape by its spec name (OPEN-CHAT is built by {@link openChat}). */
export const shapes = {
  CHAT: chat,
  MESSAGES: messages,
  EMBED: embed,
  'IMAGE-GEN': imageGen,
  'TRANSCRIBE-FILE': transcribeFile,
  SPEECH: speech,
  'IMAGE-TIER': imageTier,
  'TRANSCRIBE-URL': transcribeUrl,
  URL: url,
  'URL+SCHEMA': urlSchema,
  CONTENTS: contents,
  'EMBED-CONTENT': embedContent,
  QUERY: query,
  EMAIL: email,
  MUSIC: music,
} as const satisfies Record<string, Shape>

/** Result of {@link validateBody}. */
export type BodyValidation<T = Record<string, unknown>> =
  | { status: 'valid'; body: T }
  | { status: 'invalid'; field: string; message: string }

/**
 * Validates an untrusted, already JSON-parsed body against a shape. The result names the first bad
 * field as a dotted path (`messages.0.role`; `body` for the body itself) with a human message; it
 * never echoes the offending value back.
 *
 * @example
 * ```ts
 * const result = validateBody(chat, await request.json())
 * if (result.status === 'invalid') return new Response(JSON.stringify(result), { status: 400 })
 * ```
 */
export function validateBody(shape: Shape, input: unknown): BodyValidation {
  const result = shape.schema.safeParse(input)
  if (result.success) {
    return { status: 'valid', body: result.data as Record<string, unknown> }
  }
  const issue = result.error.issues[0]
  if (!issue) return { status: 'invalid', field: 'body', message: 'body is invalid' }
  const field = issue.path.length === 0 ? 'body' : issue.path.map(String).join('.')
  const missing =
    issue.code !== 'custom' && issue.path.length > 0 && valueAt(input, issue.path) === undefined
  let message: string
  if (issue.path.length === 0 && issue.code === 'invalid_type') {
    message = 'body must be a JSON object'
  } else if (missing) {
    message = `${field} is required`
  } else {
    message = `${field}: ${issue.message}`
  }
  return { status: 'invalid', field, message }
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let current: unknown = input
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined
    if (!Object.hasOwn(current, key)) return undefined
    current = (current as Record<PropertyKey, unknown>)[key]
  }
  return current
}
