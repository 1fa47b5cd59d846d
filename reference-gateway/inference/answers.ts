/**
 * How the inference API answers once the upstream has: an SSE answer passed through chunk for chunk
 * (with a final error event when it breaks), the upstream's failures as 502/504, the enclave's
 * receipt id passed on, and the token counts of an answer (buffered, or the final usage chunk of a
 * stream).
 *
 * @module
 */

import { AttestationRefusal } from './confidentialStream.js'
import { errorResponse, streamErrorEvent } from './errors.js'
import type { Usage } from './keys.js'

/** The headers of an answer, with the enclave's receipt id when there is one. */
export function withReceiptId(
  headers: Record<string, string>,
  response: Response,
): Record<string, string> {
  const id = response.headers.get('x-receipt-id')
  return id === null ? headers : { ...headers, 'x-receipt-id': id }
}

/** A failed upstream call: 504 `upstream_timeout` when retryable, else 502 `upstream_failed`. */
export function upstreamFailure(
  retryable: boolean,
  note: string,
  headers: Record<string, string>,
): Response {
  return retryable
    ? errorResponse('upstream_timeout', `The model's upstream did not answer in time. ${note}`, {
        headers,
      })
    : errorResponse('upstream_failed', `The model's upstream failed. ${note}`, { headers })
}

/** Whether an answer is an SSE stream. */
export function isEventStream(response: Response): boolean {
  return /^text\/event-stream/i.test(response.headers.get('content-type') ?? '')
}

/** `value` when it is a JSON object (not null, not an array). */
function objectOf(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined
}

/** The upstream's token counts of a buffered answer (its text, or its parsed value), if it reports them. */
export function usageOf(answer: string | Record<string, unknown>): Usage {
  try {
    const value = typeof answer === 'string' ? JSON.parse(answer) : answer
    // What is read of the answer: its `usage`, when the answer and it are objects.
    const usage = objectOf(objectOf(value)?.usage)
    const count = (v: unknown) =>
      typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 ? v : undefined
    return {
      promptTokens: count(usage?.prompt_tokens),
      completionTokens: count(usage?.completion_tokens),
    }
  } catch {
    return {}
  }
}

/** Reads a streamed answer's token counts as it passes. */
export type StreamUsage = {
  /** Reads one chunk of the stream (the bytes as relayed). */
  push(chunk: Uint8Array): void
  /** The counts of the last `usage` seen (none yet: empty). */
  usage(): Usage
  /** Data events seen that carry some answer text: about one per output token. */
  events(): number
}

/** Longest SSE line kept while it arrives; a longer one is not read for usage. */
const maxLineChars = 1024 * 1024
/** A chunk that carries answer text (a non-empty `content`). */
const carriesText = /"content":"[^"]/

/**
 * Watches an SSE answer for its token counts: the `usage` of an OpenAI-style final chunk (sent when
 * the request asks `stream_options: { include_usage: true }`), and a count of its data events
 * that carry answer text. Only lines that mention `"usage"` are parsed.
 *
 * @example
 * ```ts
 * const watch = streamUsage()
 * watch.push(encoder.encode('data: {"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":3}}\n\n'))
 * watch.usage() // { promptTokens: 9, completionTokens: 3 }
 * ```
 */
export function streamUsage(): StreamUsage {
  const decoder = new TextDecoder()
  let pending = ''
  let usage: Usage = {}
  let events = 0
  const line = (text: string) => {
    if (!text.startsWith('data:')) return
    const data = text.slice(5).trim()
    if (data.includes('"usage"')) {
      const found = usageOf(data)
      if (found.promptTokens !== undefined || found.completionTokens !== undefined) usage = found
    }
    if (carriesText.test(data)) events++
  }
  return {
    push(chunk) {
      const lines = (pending + decoder.decode(chunk, { stream: true })).split('\n')
      pending = lines.pop() ?? ''
      if (pending.length > maxLineChars) pending = ''
      for (const text of lines) line(text.endsWith('\r') ? text.slice(0, -1) : text)
    },
    usage: () => usage,
    events: () => events,
  }
}

/**
 * An SSE answer passed through chunk for chunk. When the upstream's stream breaks, a final
 * `data: {"error":…}` event is sent, `broke` runs once, and the stream then closes (`'close'`, keyed
 * calls: the credit is restored by `broke`) or errors (`'error'`, keyless calls: the paywall sees a
 * failed call and refunds the payment).
 */
export function streamed(
  response: Response,
  headers: Record<string, string>,
  hooks: {
    /** Sees each chunk relayed (before it is passed on). */
    chunk?: (chunk: Uint8Array) => void
    ended?: () => void
    broke?: () => Promise<void>
    afterErrorEvent: 'close' | 'error'
    /** Fails the response where it is written (`true` when it could); else the stream errors. */
    fail?: ((error: Error) => boolean) | undefined
  },
): Response {
  const upstream = response.body
  if (upstream === null) {
    hooks.ended?.()
    return new Response(null, { status: 200, headers })
  }
  const reader = upstream.getReader()
  let failedWith: unknown
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (failedWith !== undefined) {
        // Fail only once the error event is on its way: a server that tears the response down
        // with an error discards what it has not yet handed to the socket.
        await new Promise((resolve) => setTimeout(resolve, 20))
        if (hooks.fail?.(failedWith as Error) === true) controller.close()
        else controller.error(failedWith)
        return
      }
      try {
        const next = await reader.read()
        if (next.done) {
          hooks.ended?.()
          controller.close()
        } else {
          hooks.chunk?.(next.value)
          controller.enqueue(next.value)
        }
      } catch (error) {
        await hooks.broke?.().catch(() => {})
        const refusal = error instanceof AttestationRefusal
        const note =
          hooks.afterErrorEvent === 'close'
            ? 'Your credit for this call is restored.'
            : 'This call is not charged: your payment is refunded automatically.'
        controller.enqueue(
          refusal
            ? streamErrorEvent(
                'attestation_failed',
                `The confidential answer was refused: ${error.message}. ${note}`,
              )
            : streamErrorEvent('upstream_failed', `The model stream broke. ${note}`),
        )
        if (hooks.afterErrorEvent === 'close') controller.close()
        else failedWith = error instanceof Error ? error : new Error('upstream stream failed')
      }
    },
    cancel(reason) {
      // The caller went away: the call was made (and is charged).
      hooks.ended?.()
      return reader.cancel(reason)
    },
  })
  return new Response(body, {
    status: 200,
    headers: {
      ...headers,
      'content-type': response.headers.get('content-type') ?? 'text/event-stream',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
    },
  })
}
