/**
 * Finishing a paid call on Web-standard runtimes: the success headers put on the handler's
 * response, its outcome recorded when the body is done (streamed through, unbuffered), and a buyer
 * who hangs up before the answer starts seen through the request's abort signal.
 *
 * @module
 */
import type { PaidDecision } from './types.js'

/**
 * Puts the success headers on a handler's response and records the outcome when its body is done:
 * immediately for a bodiless or failed response, at the end of the stream otherwise (an error while
 * streaming is a failed call, refunded; a buyer who hangs up mid-stream was served). Bytes pass
 * through as they come, unbuffered.
 */
export function finishResponse(response: Response, decision: PaidDecision): Response {
  const outcome = { status: response.status }
  const headers = new Headers(response.headers)
  const init = { status: response.status, statusText: response.statusText, headers }
  if (decision.isFailure(outcome) || response.body === null) {
    void decision.complete(outcome).catch(() => {})
    if (!decision.isFailure(outcome)) setAll(headers, decision.headersFor(response.status))
    return new Response(response.body, init)
  }
  setAll(headers, decision.headersFor(response.status))
  const reader = response.body.getReader()
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read()
        if (done) {
          controller.close()
          void decision.complete(outcome).catch(() => {})
        } else {
          controller.enqueue(value)
        }
      } catch (error) {
        void decision.complete({ error }).catch(() => {})
        controller.error(error)
      }
    },
    cancel(reason) {
      void decision.complete(outcome).catch(() => {})
      return reader.cancel(reason)
    },
  })
  return new Response(body, init)
}

/**
 * Watches a paid request's abort signal while its handler runs (Web-standard runtimes, where the
 * signal is how a server says the buyer went away): an abort before the answer starts records a
 * hang-up (`{ hungUp: true }`): refunded when the work has not started yet, served once it has —
 * recorded when the handler is done. Call it just before the handler runs: it starts the paid work
 * ({@link PaidDecision.start}, so with the route's default `commit` a later hang-up is served).
 * Call the returned function once the handler has answered or thrown (from then on the answer has
 * started: a hang-up mid-stream was served); it tells the decision the handler is done
 * ({@link PaidDecision.handled}).
 * Returns `undefined` when the buyer is already gone: the refund is recorded and the handler
 * should not run.
 *
 * @example
 * ```ts
 * const stop = watchHangUp(request.signal, decision)
 * if (stop === undefined) return hungUpResponse()
 * const response = await handler(request)
 * stop()
 * ```
 */
export function watchHangUp(
  signal: AbortSignal | undefined,
  decision: PaidDecision,
): (() => void) | undefined {
  const hungUp = () => {
    void decision.complete({ hungUp: true }).catch(() => {})
  }
  if (signal === undefined) {
    decision.start()
    return () => {}
  }
  if (signal.aborted) {
    hungUp()
    return undefined
  }
  signal.addEventListener('abort', hungUp, { once: true })
  decision.start(untilHandled)
  return () => {
    signal.removeEventListener('abort', hungUp)
    decision.handled()
  }
}

/**
 * The answer to a paid request whose buyer is already gone (nobody reads it; 499 is the status
 * servers log for "client closed request").
 */
export function hungUpResponse(): Response {
  return new Response(null, { status: 499 })
}

/** What a mount that tells the decision when its handler is done passes to `start`. */
const untilHandled = { untilHandled: true } as const

function setAll(headers: Headers, values: Readonly<Record<string, string>>): void {
  for (const [name, value] of Object.entries(values)) headers.set(name, value)
}
