/**
 * The upstream runner: one call of a family operation with the operator's key from configuration,
 * a per-family timeout, and bounded retries of transient failures within a time budget. The answer
 * is a tagged union; a failure carries a secret-free reason and whether it was transient, and the
 * caller refunds the payment.
 *
 * @module
 */

import { Retry } from 'tollgate'
import type { HostResolver } from 'tollgate/node'
import type { BlobStore } from '../blobs/blobStore.js'
import type { FamilyId } from '../catalog/catalog.js'
import { errorName, failed, passJson, readLimited } from './http.js'

/** A successful upstream call: the answer to send to the buyer (JSON, or an SSE stream). */
export type UpstreamOk = {
  status: 'ok'
  response: Response
  /**
   * A JSON answer already read: the text that is `response`'s body, and its value. A consumer that
   * wants the answer whole takes these instead of reading `response` again.
   */
  json?: { text: string; value: Record<string, unknown> } | undefined
}
/** A failed upstream call (the payment is refunded). */
export type UpstreamFailed = {
  status: 'failed'
  /** Secret-free reason, for logs and the refund record. */
  reason: string
  /** Whether the failure was transient (timeout, 429, 5xx, connection error). */
  retryable: boolean
  /** The upstream HTTP status, when there was one. */
  upstreamStatus?: number
}
/** Result of {@link callUpstream}. */
export type UpstreamResult = UpstreamOk | UpstreamFailed

/** What an operation gets to build its request and map the answer. */
export type OperationContext = {
  /** Base URL of the provider API (no trailing slash). */
  baseUrl: string
  /** The operator's provider key. Goes into request headers only. */
  apiKey: string
  /** Fixed parameters from the catalog mapping (model slug, search kind). */
  params: Readonly<Record<string, string>>
  blobs: BlobStore
  fetch: typeof globalThis.fetch
  /** Aborts when the attempt times out or the caller gives up. */
  signal: AbortSignal
  /** A stable id of this paid call (the payment digest), for provider idempotency keys. */
  requestId?: string | undefined
  /** Allow media downloads from loopback/private hosts (stub upstreams). */
  allowInternalHosts: boolean
  /** Resolver of media host names (tests). Default `node:dns`. */
  resolveHost?: HostResolver | undefined
  /** Waits (job polling); rejects when {@link OperationContext.signal} aborts. */
  sleep(ms: number): Promise<void>
}

/**
 * A provider request as a URL and `fetch` options with a string body: sent as it is, without the
 * `Request` object a `fetch` would otherwise build and read back (the common JSON POST).
 */
export type OutgoingCall = {
  url: string
  init: { method: string; headers: Record<string, string>; body?: string }
}

/** One operation of a family module. */
export type Operation = {
  /** Work done once before the attempts (e.g. downloading an audio URL). */
  prepare?(body: Record<string, unknown>, ctx: OperationContext): Promise<unknown>
  /** Builds the provider request; called once per attempt. */
  request(
    body: Record<string, unknown>,
    ctx: OperationContext,
    prepared: unknown,
  ): Request | OutgoingCall | UpstreamFailed
  /** Maps a 2xx provider answer to the buyer's answer. Default: JSON passed through. */
  response?(
    answer: Response,
    ctx: OperationContext,
    body: Record<string, unknown>,
  ): Promise<UpstreamResult>
  /** Whether this body asks for a streamed answer (the timeout then covers the wait for headers). */
  streams?(body: Record<string, unknown>): boolean
  /**
   * Non-2xx statuses that are answers, not failures, for this operation: they go to
   * {@link Operation.response} (e.g. a 404 that means "not known yet").
   */
  accepts?: readonly number[]
}

/** A family module: operations by id, and its timeout. */
export type Family = {
  readonly id: FamilyId
  /** Per-attempt timeout in milliseconds (for streams: until the answer's headers arrive). */
  readonly timeoutMs: number
  /**
   * Most attempts per call (transient failures are retried within the time budget). Default 3; 1
   * for a provider whose calls have effects and no idempotency key (a retried call could act twice).
   */
  readonly attempts?: number
  /** The provider takes no credential: calls are made without one. Default false. */
  readonly keyless?: boolean
  readonly operations: Readonly<Record<string, Operation>>
}

/** An event for logs and metrics. Never carries a key, a header or a body. */
export type UpstreamEvent = {
  type: 'upstream.attempt'
  family: FamilyId
  operation: string
  attempt: number
  /** Upstream HTTP status, or the error kind. */
  outcome: number | string
  ms: number
}

/** Retry policy. */
export type RetryOptions = {
  /** Most attempts in total. Default 3. */
  attempts?: number | undefined
  /** Total time budget in milliseconds for all attempts and waits. Default: the family timeout. */
  budgetMs?: number | undefined
  /** First backoff in milliseconds (doubles, with jitter). Default 250. */
  baseDelayMs?: number | undefined
}

/** Options of {@link callUpstream}. */
export type CallUpstreamOptions = {
  family: Family
  /** Operation id from the catalog mapping. */
  operation: string
  /** The VALIDATED body (defaults from the catalog mapping already merged, or pass `defaults`). */
  body: Readonly<Record<string, unknown>>
  /** Body fields filled in when absent (the catalog mapping's `defaults`). */
  defaults?: Readonly<Record<string, unknown>> | undefined
  params?: Readonly<Record<string, string>> | undefined
  baseUrl: string
  /** The provider key from configuration. Empty or missing: the call fails without a request. */
  apiKey: string | undefined
  blobs: BlobStore
  /** Default `globalThis.fetch`. */
  fetch?: typeof globalThis.fetch | undefined
  /** Overrides the family's per-attempt timeout. */
  timeoutMs?: number | undefined
  /**
   * A streamed answer that sends nothing for this long is cut (the buyer's stream errors, which the
   * paywall records as a failed call). Default 60 000 ms.
   */
  streamIdleMs?: number | undefined
  retry?: RetryOptions | undefined
  /** The caller gives up (client went away, shutdown). */
  signal?: AbortSignal | undefined
  /**
   * Called synchronously just before each request to the provider is sent (after any preparation).
   * `false` cancels the call: nothing is sent and the result is a failure ("the call was
   * cancelled"). A paid route passes its `commit()` here, so that its work starts when the provider
   * is first asked and a buyer who left before is refunded.
   */
  onSend?: (() => boolean) | undefined
  requestId?: string | undefined
  /** Allow loopback/private media hosts. Default `false`. */
  allowInternalHosts?: boolean | undefined
  /** Resolver of media host names (tests). Default `node:dns`. */
  resolveHost?: HostResolver | undefined
  onEvent?: ((event: UpstreamEvent) => void) | undefined
  /** Sleep, for tests. */
  sleep?: ((ms: number) => Promise<void>) | undefined
}

/** Statuses worth another attempt. */
const transientStatuses = new Set([408, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529])

/**
 * Calls one family operation. Never throws for upstream trouble: timeouts, connection errors and
 * non-2xx answers become `{ status: 'failed' }`, retried first when transient and the budget allows
 * (honouring `Retry-After`). A streamed answer is handed back as soon as its headers arrive, body
 * untouched.
 *
 * @example
 * ```ts
 * const result = await callUpstream({ family: openai, operation: 'chat', body, baseUrl, apiKey, blobs })
 * if (result.status === 'failed') await refunds.owe(digest, result.reason)
 * ```
 */
export async function callUpstream(options: CallUpstreamOptions): Promise<UpstreamResult> {
  const { family } = options
  const operation = Object.hasOwn(family.operations, options.operation)
    ? family.operations[options.operation]
    : undefined
  if (!operation) return failed(`family ${family.id} has no operation ${options.operation}`)
  if (!options.apiKey && family.keyless !== true) {
    return failed(`upstream ${family.id} has no credential configured`)
  }
  const fetchFn = options.fetch ?? globalThis.fetch
  const sleeper = (signal: AbortSignal) =>
    options.sleep
      ? async (ms: number) => {
          await options.sleep?.(ms)
          if (signal.aborted) throw signal.reason
        }
      : (ms: number) => abortableSleep(ms, signal)
  const timeoutMs = options.timeoutMs ?? family.timeoutMs
  const attempts = Math.max(1, options.retry?.attempts ?? family.attempts ?? 3)
  const budgetMs = options.retry?.budgetMs ?? timeoutMs
  const started = Date.now()
  const body: Record<string, unknown> = { ...options.defaults, ...options.body }
  const streaming = operation.streams?.(body) ?? false

  const baseContext = {
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    apiKey: options.apiKey ?? '',
    params: options.params ?? {},
    blobs: options.blobs,
    fetch: fetchFn,
    requestId: options.requestId,
    allowInternalHosts: options.allowInternalHosts ?? false,
    resolveHost: options.resolveHost,
  }

  let prepared: unknown
  if (operation.prepare) {
    const signal = anySignal([AbortSignal.timeout(timeoutMs), options.signal])
    const result = await operation
      .prepare(body, { ...baseContext, signal, sleep: sleeper(signal) })
      .catch((error: unknown) =>
        failed(
          signal.aborted
            ? `upstream ${family.id} timed out preparing the request`
            : `upstream ${family.id} request could not be prepared (${errorName(error)})`,
          signal.aborted,
        ),
      )
    if (isFailed(result)) return result
    prepared = result
  }

  const outcome = await Retry.withRetries<UpstreamResult>(
    async (attempt) => {
      const remaining = budgetMs - (Date.now() - started)
      const attemptMs = attempt === 1 ? timeoutMs : Math.min(timeoutMs, remaining)
      // One signal per attempt: its timeout, and the caller's signal relayed into it.
      const timer = new AbortController()
      let expired = false
      const timeout = setTimeout(() => {
        expired = true
        timer.abort(new DOMException('timeout', 'TimeoutError'))
      }, attemptMs)
      relay(options.signal, timer)
      const signal = timer.signal
      const ctx: OperationContext = { ...baseContext, signal, sleep: sleeper(signal) }
      const began = Date.now()
      const report = (outcome: number | string) =>
        options.onEvent?.({
          type: 'upstream.attempt',
          family: family.id,
          operation: options.operation,
          attempt,
          outcome,
          ms: Date.now() - began,
        })

      let built: Request | OutgoingCall | UpstreamFailed
      try {
        built = operation.request(body, ctx, prepared)
      } catch (error) {
        built = failed(`upstream ${family.id} request could not be built (${errorName(error)})`)
      }
      if (isFailed(built)) {
        clearTimeout(timeout)
        return { retry: false, value: built }
      }
      if (options.onSend?.() === false) {
        clearTimeout(timeout)
        return { retry: false, value: failed('the call was cancelled') }
      }
      let answer: Response
      try {
        answer = await (built instanceof Request
          ? fetchFn(built, { signal })
          : fetchFn(built.url, { ...built.init, signal }))
      } catch (error) {
        clearTimeout(timeout)
        const timedOut = expired
        report(timedOut ? 'timeout' : errorName(error))
        if (options.signal?.aborted)
          return { retry: false, value: failed('the call was cancelled') }
        const reason = timedOut
          ? `upstream ${family.id} timed out after ${attemptMs} ms`
          : `upstream ${family.id} unreachable (${errorName(error)})`
        return { retry: true, value: failed(reason, true) }
      }
      report(answer.status)

      if (
        (answer.status < 200 || answer.status > 299) &&
        !operation.accepts?.includes(answer.status)
      ) {
        clearTimeout(timeout)
        const detail = await providerMessage(answer, options.apiKey ?? '')
        const retryable = transientStatuses.has(answer.status)
        const value = {
          ...failed(`upstream ${family.id} answered ${answer.status}${detail}`, retryable),
          upstreamStatus: answer.status,
        }
        return retryable
          ? {
              retry: true,
              value,
              retryAfterMs: Retry.retryAfterMs(answer.headers.get('retry-after')),
            }
          : { retry: false, value }
      }

      if (streaming) {
        // The stream may outlive the attempt timeout: it covered the wait for headers only.
        clearTimeout(timeout)
      }
      try {
        const mapped = await (operation.response
          ? operation.response(answer, ctx, body)
          : passJson(answer))
        if (streaming && mapped.status === 'ok' && mapped.response.body) {
          const idleMs = options.streamIdleMs ?? 60_000
          const response = new Response(watchIdle(mapped.response.body, idleMs), {
            status: mapped.response.status,
            headers: mapped.response.headers,
          })
          return { retry: false, value: { status: 'ok', response } }
        }
        return { retry: false, value: mapped }
      } catch (error) {
        const timedOut = expired
        const reason = timedOut
          ? `upstream ${family.id} timed out after ${attemptMs} ms`
          : `upstream ${family.id} answer could not be mapped (${errorName(error)})`
        return { retry: false, value: failed(reason, timedOut) }
      } finally {
        if (!streaming) clearTimeout(timeout)
      }
    },
    {
      attempts,
      // The budget counts from the call: preparing the request already spent part of it.
      budgetMs: budgetMs - (Date.now() - started),
      baseDelayMs: options.retry?.baseDelayMs ?? 250,
      maxDelayMs: Number.POSITIVE_INFINITY,
      signal: options.signal,
      sleep: options.sleep,
    },
  )
  return outcome.value
}

/** Passes a stream through unchanged, erroring it when no chunk arrives for `idleMs`. */
function watchIdle(body: ReadableStream<Uint8Array>, idleMs: number): ReadableStream<Uint8Array> {
  const reader = body.getReader()
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let timer: ReturnType<typeof setTimeout> | undefined
      const idle = new Promise<'idle'>((resolve) => {
        timer = setTimeout(() => resolve('idle'), idleMs)
      })
      try {
        const next = await Promise.race([reader.read(), idle])
        if (next === 'idle') {
          await reader.cancel().catch(() => {})
          controller.error(new Error(`upstream stream sent nothing for ${idleMs} ms`))
        } else if (next.done) {
          controller.close()
        } else {
          controller.enqueue(next.value)
        }
      } catch (error) {
        controller.error(error)
      } finally {
        clearTimeout(timer)
      }
    },
    cancel(reason) {
      return reader.cancel(reason)
    },
  })
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal.reason)
    }
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal.addEventListener('abort', onAbort, { once: true })
  })
}

function isFailed(value: unknown): value is UpstreamFailed {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { status?: unknown }).status === 'failed'
  )
}

/** Aborts `to` when `from` aborts (with its reason). */
function relay(from: AbortSignal | undefined, to: AbortController): void {
  if (from === undefined) return
  if (from.aborted) to.abort(from.reason)
  else from.addEventListener('abort', () => to.abort(from.reason), { once: true })
}

function anySignal(signals: (AbortSignal | undefined)[]): AbortSignal {
  const present = signals.filter((s): s is AbortSignal => s !== undefined)
  return present.length === 1 ? (present[0] as AbortSignal) : AbortSignal.any(present)
}

/** A short provider error message with the key redacted (`: <message>`), or `''`. */
async function providerMessage(answer: Response, apiKey: string): Promise<string> {
  const bytes = await readLimited(answer, 16 * 1024).catch(() => undefined)
  if (!bytes || bytes.byteLength === 0) return ''
  let text = new TextDecoder().decode(bytes)
  try {
    const json = JSON.parse(text) as { error?: unknown; message?: unknown; detail?: unknown }
    const error = json.error as { message?: unknown } | string | undefined
    const message =
      (typeof error === 'object' && error !== null ? error.message : error) ??
      json.message ??
      json.detail
    text = typeof message === 'string' ? message : ''
  } catch {
    text = ''
  }
  text = redact(text, apiKey).replace(/\s+/g, ' ').trim().slice(0, 200)
  return text ? `: ${text}` : ''
}

/** Removes every occurrence of the key (and of long key prefixes providers echo) from `text`. */
export function redact(text: string, apiKey: string): string {
  if (!apiKey) return text
  let out = text.split(apiKey).join('[redacted]')
  if (apiKey.length >= 12) {
    const head = apiKey.slice(0, 8)
    out = out.split(head).join('[redacted]')
  }
  return out
}
