/**
 * The private inference API (docs/inference.md): `POST /v1/chat/completions` with a bearer key, `GET
 * /v1/models`, and the keyless calls of the gateway's paid open-model route. Web-standard: each
 * handler takes a `Request` (or a validated body) and answers a `Response`.
 *
 * A keyed call, in order — each step refuses before the next one costs anything:
 *
 * ```
 * Bearer key ─▶ 401 invalid_api_key
 *   ─▶ rate limit (per key, shared through Redis) ─▶ 429 rate_limit_exceeded + Retry-After
 *   ─▶ body (size ▸ JSON ▸ schema) ─▶ 413 | 400 invalid_request (param names the field)
 *   ─▶ model ─▶ 404 model_not_found
 *   ─▶ context window (estimated prompt tokens + max_tokens) ─▶ 400 context_length_exceeded
 *   ─▶ max_tokens within the model's output cap ─▶ 400 invalid_request (param max_tokens)
 *   ─▶ reserve the most the call can cost (one conditional UPDATE; `charge.ts`) ─▶ 402 insufficient_credit
 *   ─▶ upstream (asked for max_tokens = the output reserved, and a stream's usage)
 *               ─▶ failed: reservation restored (once), 502 | 504
 *               └▶ ok: JSON, or SSE passed through byte for byte, then settled at the upstream's
 *                  `usage` (the rest of the reservation given back); a stream that breaks ends with
 *                  a final `data: {"error":…}` event and the reservation is restored (once)
 * ```
 *
 * A confidential model (its id has the reserved prefix) is served only by its enclave upstream and
 * only while the enclave proves itself (see `confidential.ts`): otherwise 502 `attestation_failed`
 * (or, after a stream started, a final `attestation_failed` error event), the reservation restored, and
 * nothing sent anywhere else. Its answers carry `x-receipt-id`.
 *
 * Every answer carries `x-request-id` and, once the key is known, the `x-ratelimit-*` headers; a
 * served answer carries `x-call-id`, the id of its ledger entry (what a gateway receipt's payment names).
 * How an upstream's answer is relayed (streams passed through, failures, usage): `answers.ts`.
 *
 * @module
 */
import { randomBytes } from 'node:crypto'
import { Body, formatAmount, PaymentError } from 'tollgate'
import type { UpstreamResult } from '../upstreams/upstream.js'
import { createAciHandler } from './aci.js'
import {
  isEventStream,
  streamed,
  streamUsage,
  upstreamFailure,
  usageOf,
  withReceiptId,
} from './answers.js'
import { costOf, keepLease, reservationOf } from './charge.js'
import type { ConfidentialUpstream } from './confidential.js'
import type { UpstreamRefused } from './confidentialStream.js'
import { errorResponse, type InferenceErrorCode } from './errors.js'
import type { GatewayReceiptSigner } from './gatewayReceipt.js'
import type { KeyStore, Usage } from './keys.js'
import { type RateLimiter, rateLimitHeaders } from './limits.js'
import {
  confidentialPrefixProblems,
  defaultConfidentialPrefix,
  type InferenceModel,
  type ModelConfig,
  modelList,
  prepareModels,
} from './models.js'
import type { ReceiptStore } from './receipts.js'
import { type ChatRequest, checkContextWindow, parseChatRequest } from './request.js'
import { createUpstream, type InferenceUpstream, type UpstreamDependencies } from './upstreams.js'

/** A pino-compatible logger (the methods used). */
export type InferenceLogger = {
  warn(object: Record<string, unknown>, message?: string): void
}

/** Options of {@link createInferenceApi}. */
export type InferenceApiOptions = {
  /** The configured models. */
  models: readonly ModelConfig[]
  /** Keys and credit. */
  keys: KeyStore
  /** Requests per key. */
  limiter: RateLimiter
  /** What the upstreams need (provider keys, fetch, timeout). */
  upstreams: UpstreamDependencies
  /** Largest request body, bytes. Default 1 MiB. */
  maxBodyBytes?: number | undefined
  /**
   * `max_tokens` of a keyless call: the cap (within each model's `maxOutputTokens`), and the value
   * sent when the buyer gives none. Default 4096.
   */
  keylessMaxTokens?: number | undefined
  logger?: InferenceLogger | undefined
  /** The reserved id prefix of confidential models. Default `confidential/`. */
  confidentialPrefix?: string | undefined
  /**
   * Where confidential answers' receipts and sessions are kept (`/v1/aci/…` answers from it).
   * Default: none kept (the routes find nothing).
   */
  receipts?: ReceiptStore | undefined
  /** Signs the gateway's own receipt of each confidential answer. Default: none signed. */
  receiptSigner?: GatewayReceiptSigner | undefined
  /** Anchors what is due now (`POST /v1/aci/anchor/{id}` runs it). Default: anchoring is off. */
  anchorNow?: (() => Promise<unknown>) | undefined
  /** Fresh-nonce attestations per client address (`aci.ts`). Default: not limited. */
  attestationLimiter?: RateLimiter | undefined
  /**
   * The keyless route's flat price of one call, base units: shown in the model lists on the models
   * it offers. Default: not shown (no keyless route).
   */
  keylessPrice?: bigint | undefined
  /** The keyless route's session price of one streamed token, base units; none without sessions. */
  keylessTokenPrice?: bigint | undefined
  /**
   * The lease of a keyed call's reservation, ms: renewed every third of it while the call runs; a
   * reservation whose process died is given back by the sweeper after it. Default 60 000.
   */
  reservationLeaseMs?: number | undefined
}

/** Result of {@link InferenceApi.checkKeyless}. */
export type KeylessCheck =
  | { status: 'valid'; body: ChatRequest }
  | { status: 'invalid'; field: string; message: string }

/** What a keyless call is served with. */
export type KeylessContext = {
  requestId: string
  /** The caller went away, or the gateway stops. */
  signal: AbortSignal
  /**
   * Fails the response where it is written, so that the paywall records the call as failed (and
   * refunds it) after a stream broke: on Node, destroying the response with the error. Returns
   * whether it could; otherwise the stream errors.
   */
  fail?: ((error: Error) => boolean) | undefined
  /** The payment of the call (bound into a confidential answer's gateway receipt). */
  payment?: { digest: string; amount: bigint } | undefined
}

/** What a keyed call is served with. */
export type ChatContext = {
  requestId: string
  /**
   * Reads the request's body where it arrives, keeping at most `maxBytes + 1` bytes (`undefined`:
   * no body): on Node, from the `IncomingMessage`, sparing the Web stream `request.body` would
   * build. Default: the body read through `request`.
   */
  readBody?: ((maxBytes: number) => Promise<Uint8Array | undefined>) | undefined
}

/** The built API. */
export type InferenceApi = {
  /** The models served, prices in base units. */
  readonly models: readonly InferenceModel[]
  /** `GET /v1/models`: every model. */
  listModels(): Response
  /** The keyless route's free model list: the models offered keyless. */
  listKeylessModels(): Response
  /** `POST /v1/chat/completions` with a bearer key. */
  chat(request: Request, context: ChatContext): Promise<Response>
  /**
   * Checks a keyless body before payment: schema, a model offered keyless, `max_tokens` within the
   * cap (filled in with it when absent), the context window.
   */
  checkKeyless(body: unknown): KeylessCheck
  /**
   * Serves a keyless call already paid (the paywall refunds a ≥ 500 answer, and a stream that breaks:
   * it ends with an error event, then the response fails: see {@link KeylessContext.fail}).
   */
  serveKeyless(body: ChatRequest, context: KeylessContext): Promise<Response>
  /** The enclaves of the confidential models, by public model id. */
  readonly confidential: ReadonlyMap<string, ConfidentialUpstream>
  /** The JWKS of the gateway's receipt keys (`/.well-known/tollgate-receipt-keys.json`). */
  receiptKeys(): Promise<Response>
  /** `GET /v1/aci/…` and `POST /v1/aci/anchor/{id}` (see `aci.ts`); `client`: the caller's address. */
  aci(request: Request, context?: { client?: string | undefined }): Promise<Response>
  /** Stops the confidential models' scheduled re-attestation. */
  close(): void
}

const jsonType = 'application/json; charset=utf-8'

/**
 * Builds the inference API.
 *
 * @example
 * ```ts
 * const api = createInferenceApi({ models, keys, limiter, upstreams: { providerKeys } })
 * app.post('/v1/chat/completions', (c) => api.chat(c.req.raw, { requestId: c.get('requestId') }))
 * ```
 */
export function createInferenceApi(options: InferenceApiOptions): InferenceApi {
  const receipts = options.receipts ?? noReceipts
  const prefix = options.confidentialPrefix ?? defaultConfidentialPrefix
  const problems = confidentialPrefixProblems(options.models, prefix)
  if (problems.length > 0) {
    throw new PaymentError('invalid_config', `Invalid models:\n  ${problems.join('\n  ')}`, {
      details: { problems },
    })
  }
  const models = prepareModels(options.models)
  const byId = new Map<string, { model: InferenceModel; upstream: InferenceUpstream }>(
    models.map((model) => [
      model.id,
      {
        model,
        upstream: createUpstream(model.upstream, model.id, {
          ...options.upstreams,
          onReceipt: async (receipt) =>
            receipts.save(receipt, await options.receiptSigner?.sign(receipt)),
        }),
      },
    ]),
  )
  const confidential = new Map<string, ConfidentialUpstream>()
  for (const [id, served] of byId) {
    if (served.upstream.confidential) confidential.set(id, served.upstream.confidential)
  }
  const maxBodyBytes = options.maxBodyBytes ?? 1024 * 1024
  const keylessMaxTokens = options.keylessMaxTokens ?? 4096
  const allList = JSON.stringify(modelList(models, options.keylessPrice, options.keylessTokenPrice))
  const keylessList = JSON.stringify(
    modelList(
      models.filter((m) => m.keyless),
      options.keylessPrice,
      options.keylessTokenPrice,
    ),
  )
  const leaseMs = options.reservationLeaseMs ?? 60_000
  const { keys, limiter } = options
  const callIds = idPool('call_', 12)

  function fail(
    code: InferenceErrorCode,
    message: string,
    headers: Record<string, string>,
    param: string | null = null,
  ): Response {
    return errorResponse(code, message, { param, headers })
  }

  async function chat(request: Request, context: ChatContext): Promise<Response> {
    const base: Record<string, string> = { 'x-request-id': context.requestId }
    const presented = bearerOf(request.headers.get('authorization'))
    if (presented === undefined) {
      return fail(
        'invalid_api_key',
        'No API key given: send Authorization: Bearer <key>, or pay per call on the keyless route.',
        base,
      )
    }
    const auth = await keys.authenticate(presented)
    if (auth.status !== 'valid') return fail('invalid_api_key', 'Incorrect API key provided.', base)

    const decision = await limiter.take(auth.keyId)
    const headers = { ...base, ...rateLimitHeaders(decision) }
    if (decision.status === 'limited') {
      return fail(
        'rate_limit_exceeded',
        `Rate limit reached: ${decision.limit} requests per minute for this key.`,
        headers,
      )
    }

    const source =
      context.readBody === undefined
        ? request
        : {
            url: request.url,
            headers: request.headers,
            bodyBytes: await context.readBody(maxBodyBytes),
          }
    const read = await Body.readBody(source, (body) => ({ status: 'valid', body }), maxBodyBytes)
    if (read.status === 'too_large') {
      return fail('request_too_large', `The request body is over ${maxBodyBytes} bytes.`, headers)
    }
    if (read.status === 'invalid') return fail('invalid_request', read.message, headers)
    const parsed = parseChatRequest(read.body)
    if (parsed.status === 'invalid') {
      return fail('invalid_request', parsed.message, headers, parsed.param)
    }
    const body = parsed.request
    const served = byId.get(body.model)
    if (served === undefined) {
      return fail(
        'model_not_found',
        `The model \`${body.model.slice(0, 128)}\` does not exist. See GET /v1/models.`,
        headers,
        'model',
      )
    }
    const window = checkContextWindow(body, served.model.contextWindow)
    if (window.status === 'too_long') {
      return fail('context_length_exceeded', window.message, headers, 'messages')
    }

    const check = reservationOf(served.model, body, window.promptTokens)
    if (check.status === 'invalid') {
      const code = check.param === 'messages' ? 'context_length_exceeded' : 'invalid_request'
      return fail(code, check.message, headers, check.param)
    }
    const { reservation } = check

    // A caller who already went away is not charged (nobody reads the answer).
    if (request.signal.aborted) return new Response(null, { status: 499, headers })
    const entryId = callIds()
    const reserved = await keys.reserve(auth.keyId, reservation.amount, {
      entryId,
      model: served.model.id,
      leaseUntilMs: Date.now() + leaseMs,
    })
    if (reserved.status === 'unknown_key') {
      return fail('invalid_api_key', 'Incorrect API key provided.', headers)
    }
    if (reserved.status === 'insufficient') {
      return fail(
        'insufficient_credit',
        `This key's credit (${formatAmount(reserved.credit)} USDC) does not cover the most this ` +
          `call can cost (${formatAmount(reservation.amount)} USDC: about ` +
          `${reservation.promptTokens} prompt tokens and ${reservation.outputTokens} output ` +
          `tokens of ${served.model.id}). Lower max_tokens, or top it up.`,
        headers,
      )
    }
    const lease = keepLease(keys, entryId, leaseMs)
    const restore = async () => {
      lease.stop()
      await keys.restore(entryId)
    }
    const settle = async (usage: Usage, fallback: { completionTokens?: number } = {}) => {
      lease.stop()
      await keys.settle(entryId, costOf(served.model, reservation, usage, fallback), usage)
    }

    const upstreamCall = new AbortController()
    let result: UpstreamResult | UpstreamRefused
    try {
      result = await served.upstream.chat({
        // The output reserved is the most the upstream may answer; a stream reports its usage.
        request: {
          ...body,
          max_tokens: reservation.outputTokens,
          ...(body.stream ? { stream_options: { include_usage: true } } : {}),
        },
        // Not the caller's signal until the answer started: once reserved, the model is called to
        // its answer whatever the caller does, and an answer the model gave is charged (as a stream
        // the caller leaves is); the upstream's own timeout bounds the call.
        signal: upstreamCall.signal,
        requestId: context.requestId,
        payment: { kind: 'credit', keyId: auth.keyId, entryId, amount: reservation.amount },
      })
    } catch (error) {
      await restore()
      throw error
    }
    if (result.status === 'failed') {
      await restore()
      options.logger?.warn({
        requestId: context.requestId,
        event: 'inference_upstream_failed',
        model: served.model.id,
        reason: result.reason,
      })
      return upstreamFailure(result.retryable, 'Your credit is restored.', headers)
    }
    if (result.status === 'refused') {
      await restore()
      return refused(served.model.id, result.reason, 'Your credit is restored.', headers)
    }
    // The call id is what the gateway receipt's payment names: a buyer checks it with
    // `verifyInferenceReceipt`'s `expectPayment` (`tollgate verify --payment key_…:call_…`).
    const answerHeaders = { ...withReceiptId(headers, result.response), 'x-call-id': entryId }
    if (isEventStream(result.response)) {
      if (request.signal.aborted) {
        // The caller left while the model started answering: charged for the prompt (no output
        // was relayed), and the stream let go.
        await settle({}, { completionTokens: 0 })
        upstreamCall.abort(request.signal.reason)
        return new Response(null, { status: 499, headers: answerHeaders })
      }
      // A caller leaving mid-stream ends the model's stream (the call is charged, below).
      request.signal.addEventListener('abort', () => upstreamCall.abort(request.signal.reason), {
        once: true,
      })
      // Settled at the final usage chunk's counts; a stream cut short (the caller left) at the
      // events relayed, about one output token each.
      const watch = streamUsage()
      return streamed(result.response, answerHeaders, {
        chunk: watch.push,
        ended: () =>
          void settle(watch.usage(), { completionTokens: watch.events() }).catch(() => {}),
        broke: restore,
        afterErrorEvent: 'close',
      })
    }
    const text = result.json?.text ?? (await result.response.text())
    await settle(usageOf(result.json?.value ?? text))
    return new Response(text, {
      status: 200,
      headers: { ...answerHeaders, 'content-type': jsonType },
    })
  }

  function checkKeyless(input: unknown): KeylessCheck {
    const parsed = parseChatRequest(input)
    if (parsed.status === 'invalid') {
      return { status: 'invalid', field: parsed.param, message: parsed.message }
    }
    const body = parsed.request
    const served = byId.get(body.model)
    if (served === undefined || !served.model.keyless) {
      return {
        status: 'invalid',
        field: 'model',
        message: 'model: not a model of this route (see its free model list)',
      }
    }
    // The route's cap, within the model's own output cap.
    const cap = Math.min(keylessMaxTokens, served.model.maxOutput)
    if (body.max_tokens !== undefined && body.max_tokens > cap) {
      return {
        status: 'invalid',
        field: 'max_tokens',
        message: `max_tokens: must be at most ${cap}`,
      }
    }
    const capped = { ...body, max_tokens: body.max_tokens ?? cap }
    const window = checkContextWindow(capped, served.model.contextWindow)
    if (window.status === 'too_long') {
      return { status: 'invalid', field: 'messages', message: `messages: ${window.message}` }
    }
    return { status: 'valid', body: capped }
  }

  async function serveKeyless(body: ChatRequest, context: KeylessContext): Promise<Response> {
    const headers = { 'x-request-id': context.requestId }
    const served = byId.get(body.model)
    if (served === undefined) {
      return fail('model_not_found', 'The model does not exist.', headers, 'model')
    }
    const result = await served.upstream.chat({
      request: body,
      signal: context.signal,
      requestId: context.requestId,
      payment: context.payment === undefined ? undefined : { kind: 'payment', ...context.payment },
    })
    if (result.status === 'failed') {
      options.logger?.warn({
        requestId: context.requestId,
        event: 'inference_upstream_failed',
        model: served.model.id,
        reason: result.reason,
      })
      return upstreamFailure(
        result.retryable,
        'This call is not charged: your payment is refunded automatically.',
        headers,
      )
    }
    if (result.status === 'refused') {
      return refused(
        served.model.id,
        result.reason,
        'This call is not charged: your payment is refunded automatically.',
        headers,
      )
    }
    const answerHeaders = withReceiptId(headers, result.response)
    if (isEventStream(result.response)) {
      return streamed(result.response, answerHeaders, {
        afterErrorEvent: 'error',
        fail: context.fail,
      })
    }
    return new Response(result.json?.text ?? result.response.body, {
      status: 200,
      headers: { ...answerHeaders, 'content-type': jsonType },
    })
  }

  return {
    models,
    listModels: () => new Response(allList, { headers: { 'content-type': jsonType } }),
    listKeylessModels: () => new Response(keylessList, { headers: { 'content-type': jsonType } }),
    chat,
    checkKeyless,
    serveKeyless,
    confidential,
    async receiptKeys() {
      const jwks =
        options.receiptSigner === undefined ? { keys: [] } : await options.receiptSigner.jwks()
      return new Response(JSON.stringify(jwks), {
        headers: { 'content-type': 'application/jwk-set+json', 'cache-control': 'max-age=300' },
      })
    },
    aci: createAciHandler({
      confidential,
      store: receipts,
      fetch: options.upstreams.fetch,
      anchorNow: options.anchorNow,
      limiter: options.attestationLimiter,
    }),
    close() {
      for (const upstream of confidential.values()) upstream.close()
    },
  }

  function refused(
    model: string,
    reason: string,
    note: string,
    headers: Record<string, string>,
  ): Response {
    options.logger?.warn({ event: 'confidential_refused', model, reason })
    return errorResponse(
      'attestation_failed',
      `The confidential model ${model} was refused: ${reason}. Nothing was sent to any other ` +
        `model. ${note}`,
      { headers },
    )
  }
}

/** A receipt store that keeps nothing. */
const noReceipts: ReceiptStore = {
  save: async () => {},
  saveSession: async () => {},
  receipt: async () => undefined,
  anchor: async () => undefined,
  backfillAnchor: async () => false,
  session: async () => undefined,
}

/**
 * Unique ids `<prefix><2 × bytes hex>`, their random bytes drawn 256 ids at a time (one call into
 * the system's random source per 256 ids instead of one per id).
 */
function idPool(prefix: string, bytes: number): () => string {
  let pool = Buffer.alloc(0)
  let at = 0
  return () => {
    if (at >= pool.byteLength) {
      pool = randomBytes(bytes * 256)
      at = 0
    }
    at += bytes
    return `${prefix}${pool.toString('hex', at - bytes, at)}`
  }
}

/** The key of an `Authorization: Bearer <key>` header. */
function bearerOf(header: string | null): string | undefined {
  if (header === null) return undefined
  const match = /^Bearer +(\S{1,512})\s*$/i.exec(header)
  return match?.[1]
}
