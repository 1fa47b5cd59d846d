/**
 * A deterministic local model server speaking the OpenAI-compatible chat API: the upstream of the
 * gateway's embedded default model, and of tests and benchmarks. Same request, same answer: the
 * reply is {@link stubReply} of the last message, one token per word, cut at `max_tokens`
 * (`finish_reason: "length"`); `stream: true` answers `chat.completion.chunk` events, one per token,
 * written as they are produced (and, when asked `stream_options.include_usage`, a last chunk with the
 * token counts), ending `data: [DONE]`. It checks a bearer key when given one, and
 * can be told to fail, or to break a stream mid-way, to test what a gateway does then.
 *
 * @module
 */
import { createHash } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { listenOnLoopback } from '../loopback.js'
import { stubCreated, stubReply } from './handlers.js'

/** Options of {@link startModelUpstream}. */
export type ModelUpstreamOptions = {
  /** Port on 127.0.0.1. Default 0 (any free port). */
  port?: number | undefined
  /** The bearer key required. Default: any non-empty bearer key. */
  apiKey?: string | undefined
  /** Delay before the answer (or its first token), ms. Default 0. */
  latencyMs?: number | undefined
  /** Delay between streamed tokens, ms. Default 0. */
  tokenIntervalMs?: number | undefined
  /** Largest request body accepted, bytes. Default 4 MiB. */
  maxBodyBytes?: number | undefined
  /**
   * Length of every reply, tokens: the stub reply's words repeated up to it (then cut at
   * `max_tokens`), for long streamed answers. Default: the stub reply as it is.
   */
  replyTokens?: number | undefined
}

/** A request the model server received (no header values, no body). */
export type ModelUpstreamCall = {
  method: string
  path: string
  status: number
  stream: boolean
  /** Of a streamed answer: the events written so far (it stops when the client hangs up). */
  events?: number
}

/** A running model server. */
export type ModelUpstream = {
  /** `http://127.0.0.1:<port>/v1`: the base URL to configure. */
  baseUrl: string
  /** Requests received so far, oldest first. */
  calls: readonly ModelUpstreamCall[]
  /** The next `times` chat requests answer `status` with an OpenAI error body. */
  failNext(status: number, times?: number): void
  /** The next streamed answer sends `events` events, then the connection is cut. */
  breakNextStream(events?: number): void
  stop(): Promise<void>
}

type Message = { role?: unknown; content?: unknown }

/**
 * The deterministic completion of a request: its reply tokens (the stub reply's words, repeated up
 * to `replyTokens` when given), cut at `max_tokens`.
 */
export function modelCompletion(
  body: { messages?: unknown; max_tokens?: unknown },
  replyTokens?: number,
): {
  tokens: string[]
  finish: 'stop' | 'length'
  promptTokens: number
} {
  const messages = Array.isArray(body.messages) ? (body.messages as Message[]) : []
  const last = messages[messages.length - 1]
  const prompt = typeof last?.content === 'string' ? last.content.slice(0, 200) : ''
  const words = stubReply(prompt).split(' ')
  const length = Math.max(words.length, replyTokens ?? 0)
  const tokens = Array.from({ length }, (_, i) => {
    const word = words[i % words.length] as string
    return i === 0 ? word : ` ${word}`
  })
  const max =
    typeof body.max_tokens === 'number' && body.max_tokens >= 1 ? body.max_tokens : Infinity
  const promptTokens = messages.reduce(
    (sum, m) => sum + (typeof m.content === 'string' ? m.content.split(/\s+/).length : 0),
    0,
  )
  return tokens.length > max
    ? { tokens: tokens.slice(0, max), finish: 'length', promptTokens }
    : { tokens, finish: 'stop', promptTokens }
}

/** A {@link modelCompletion} of a request. */
export type ModelCompletion = ReturnType<typeof modelCompletion>

/** The OpenAI `chat.completion` object of a completion (a buffered answer). */
export function chatCompletionObject(id: string, model: string, completion: ModelCompletion) {
  const { tokens, finish, promptTokens } = completion
  return {
    id,
    object: 'chat.completion',
    created: stubCreated,
    model,
    choices: [
      { index: 0, message: { role: 'assistant', content: tokens.join('') }, finish_reason: finish },
    ],
    usage: {
      prompt_tokens: promptTokens,
      completion_tokens: tokens.length,
      total_tokens: promptTokens + tokens.length,
    },
  }
}

/** Whether a request asks a stream for its usage (`stream_options: { include_usage: true }`). */
export function asksStreamUsage(body: { stream_options?: unknown }): boolean {
  const options = body.stream_options
  return (
    typeof options === 'object' &&
    options !== null &&
    (options as { include_usage?: unknown }).include_usage === true
  )
}

/**
 * The server-sent events of a streamed completion, each a whole `data: …\n\n` event: the role,
 * one chunk a token, the finish reason, with `usage` a last chunk of no choices and the token
 * counts (as OpenAI sends for `stream_options.include_usage`), then `[DONE]`.
 */
export function chatCompletionEvents(
  id: string,
  model: string,
  completion: ModelCompletion,
  options: { usage?: boolean | undefined } = {},
): string[] {
  const chunk = (delta: Record<string, unknown>, finishReason: string | null) =>
    `data: ${JSON.stringify({
      id,
      object: 'chat.completion.chunk',
      created: stubCreated,
      model,
      choices: [{ index: 0, delta, finish_reason: finishReason }],
    })}\n\n`
  return [
    chunk({ role: 'assistant', content: '' }, null),
    ...completion.tokens.map((token) => chunk({ content: token }, null)),
    chunk({}, completion.finish),
    ...(options.usage === true
      ? [
          `data: ${JSON.stringify({
            id,
            object: 'chat.completion.chunk',
            created: stubCreated,
            model,
            choices: [],
            usage: chatCompletionObject(id, model, completion).usage,
          })}\n\n`,
        ]
      : []),
    'data: [DONE]\n\n',
  ]
}

/**
 * Starts the model server on 127.0.0.1.
 *
 * @example
 * ```ts
 * const model = await startModelUpstream()
 * const openai = new OpenAI({ baseURL: model.baseUrl, apiKey: 'any' })
 * // … later
 * await model.stop()
 * ```
 */
export async function startModelUpstream(
  options: ModelUpstreamOptions = {},
): Promise<ModelUpstream> {
  const maxBodyBytes = options.maxBodyBytes ?? 4 * 1024 * 1024
  const calls: ModelUpstreamCall[] = []
  const failures: { status: number; times: number }[] = []
  const breaks: number[] = []
  const wait = (ms: number | undefined) =>
    ms ? new Promise((resolve) => setTimeout(resolve, ms)) : undefined

  function send(res: ServerResponse, status: number, value: unknown) {
    const bytes = Buffer.from(JSON.stringify(value))
    res.writeHead(status, {
      'content-type': 'application/json',
      'content-length': String(bytes.byteLength),
    })
    res.end(bytes)
  }

  function error(res: ServerResponse, status: number, message: string, type: string) {
    send(res, status, { error: { message, type, code: null, param: null } })
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0] ?? '/'
    const method = req.method ?? 'GET'
    const chunks: Buffer[] = []
    let size = 0
    for await (const chunk of req) {
      size += (chunk as Buffer).byteLength
      if (size > maxBodyBytes) {
        calls.push({ method, path, status: 413, stream: false })
        return error(res, 413, 'request too large', 'invalid_request_error')
      }
      chunks.push(chunk as Buffer)
    }
    const auth = req.headers.authorization ?? ''
    const authorized =
      options.apiKey === undefined ? /^Bearer \S+/.test(auth) : auth === `Bearer ${options.apiKey}`
    const record = (status: number, stream = false) => {
      const call: ModelUpstreamCall = { method, path, status, stream }
      calls.push(call)
      return call
    }
    if (!authorized) {
      record(401)
      return error(res, 401, 'Incorrect API key provided.', 'invalid_request_error')
    }
    if (method === 'GET' && path === '/v1/models') {
      record(200)
      return send(res, 200, {
        object: 'list',
        data: [{ id: 'stub-model', object: 'model', created: stubCreated, owned_by: 'stub' }],
      })
    }
    if (method !== 'POST' || path !== '/v1/chat/completions') {
      record(404)
      return error(res, 404, 'not found', 'invalid_request_error')
    }
    let body: Record<string, unknown>
    try {
      const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error()
      body = parsed as Record<string, unknown>
    } catch {
      record(400)
      return error(res, 400, 'the body must be a JSON object', 'invalid_request_error')
    }
    const failure = failures.find((f) => f.times > 0)
    if (failure) {
      failure.times--
      record(failure.status)
      return error(res, failure.status, `stub failure ${failure.status}`, 'server_error')
    }
    const stream = body.stream === true
    const model = typeof body.model === 'string' ? body.model : 'stub-model'
    const completion = modelCompletion(body, options.replyTokens)
    const id = `chatcmpl-${createHash('sha256').update(JSON.stringify(body)).digest('hex').slice(0, 24)}`
    await wait(options.latencyMs)
    const call = record(200, stream)
    if (!stream) return send(res, 200, chatCompletionObject(id, model, completion))
    call.events = 0
    const breakAfter = breaks.shift()
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
    })
    const events = chatCompletionEvents(id, model, completion, { usage: asksStreamUsage(body) })
    // A client that hangs up ends the answer, as a model provider stops generating then: the rest
    // is neither generated nor written.
    let left = false
    res.once('close', () => {
      left = true
    })
    for (const [index, event] of events.entries()) {
      if (breakAfter !== undefined && index >= breakAfter) {
        // Cut the connection once the events before are on the wire (a broken model stream).
        res.socket?.destroy()
        return
      }
      if (index > 1) await wait(options.tokenIntervalMs)
      if (left) return
      if (breakAfter === undefined) res.write(event)
      else await new Promise<void>((resolve) => res.write(event, () => resolve()))
      call.events++
    }
    res.end()
  }

  const { server, port } = await listenOnLoopback(handle, options.port, 30_000)
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    calls,
    failNext(status, times = 1) {
      failures.push({ status, times })
    },
    breakNextStream(events = 2) {
      breaks.push(events)
    },
    stop() {
      return new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
    },
  }
}
