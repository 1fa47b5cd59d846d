/**
 * The chat completion request of the private inference API (docs/inference.md, "The request"): one zod schema with size
 * limits, and the deterministic prompt-token estimate that refuses a request over a model's context
 * window before any upstream is called.
 *
 * @module
 */
import { z } from 'zod'

/** Largest `content` of one message, in characters: 1 MiB. */
export const maxContentChars = 1024 * 1024
/** Most messages in one request. */
export const maxMessages = 1024

/** One chat message: a role and its text. */
export const chatMessageSchema = z.object({
  role: z.enum(['system', 'user', 'assistant']),
  content: z.string().max(maxContentChars),
  name: z.string().max(64).optional(),
})

/**
 * `POST /v1/chat/completions` body: `model` (required, an id of `GET /v1/models`), `messages`
 * (required), `stream` (default false), `max_tokens`, `temperature` (default 1, 0 to 2). Unknown
 * fields are dropped, never forwarded.
 */
export const chatRequestSchema = z.object({
  model: z.string().min(1).max(128),
  messages: z.array(chatMessageSchema).min(1).max(maxMessages),
  stream: z.boolean().default(false),
  max_tokens: z.int().min(1).max(10_000_000).optional(),
  temperature: z.number().min(0).max(2).default(1),
})

/** A validated chat request. */
export type ChatRequest = z.output<typeof chatRequestSchema>

/** Result of {@link parseChatRequest}. */
export type ChatRequestCheck =
  | { status: 'valid'; request: ChatRequest }
  | { status: 'invalid'; param: string; message: string }

/**
 * Validates an untrusted, JSON-parsed body. The result names the first bad field (`messages.0.role`)
 * and never echoes its value.
 */
export function parseChatRequest(input: unknown): ChatRequestCheck {
  const result = chatRequestSchema.safeParse(input)
  if (result.success) return { status: 'valid', request: result.data }
  const issue = result.error.issues[0]
  const param = issue === undefined || issue.path.length === 0 ? 'body' : issue.path.join('.')
  return { status: 'invalid', param, message: `${param}: ${issue?.message ?? 'invalid'}` }
}

/**
 * A deterministic, deliberately generous estimate of a prompt's tokens: 3 for the reply's priming,
 * then per message 4 (role and separators) plus one token per 3 UTF-8 bytes of its role, name and
 * content, rounded up. Real tokenizers average about 4 bytes of English per token, so the estimate
 * errs towards refusing a prompt that is close to the window rather than sending one that cannot fit.
 *
 * @example
 * ```ts
 * estimatePromptTokens([{ role: 'user', content: 'Say hello' }]) // 3 + 4 + ceil(13 / 3) = 12
 * ```
 */
export function estimatePromptTokens(
  messages: readonly { role: string; content: string; name?: string | undefined }[],
): number {
  let tokens = 3
  for (const message of messages) {
    // UTF-8 lengths, counted without encoding (a lone surrogate counts as U+FFFD's 3 bytes).
    const bytes =
      Buffer.byteLength(message.role, 'utf8') +
      Buffer.byteLength(message.content, 'utf8') +
      (message.name === undefined ? 0 : Buffer.byteLength(message.name, 'utf8'))
    tokens += 4 + Math.ceil(bytes / 3)
  }
  return tokens
}

/** Result of {@link checkContextWindow}. */
export type ContextCheck =
  | { status: 'fits'; promptTokens: number }
  | { status: 'too_long'; promptTokens: number; message: string }

/**
 * Whether the estimated prompt plus `max_tokens` (when given) fits the model's context window.
 */
export function checkContextWindow(request: ChatRequest, contextWindow: number): ContextCheck {
  const promptTokens = estimatePromptTokens(request.messages)
  const wanted = promptTokens + (request.max_tokens ?? 0)
  if (wanted <= contextWindow) return { status: 'fits', promptTokens }
  return {
    status: 'too_long',
    promptTokens,
    message:
      `This model's context window is ${contextWindow} tokens; the messages are estimated at ` +
      `${promptTokens} tokens${request.max_tokens === undefined ? '' : ` and max_tokens asks for ${request.max_tokens}`}.`,
  }
}
