/**
 * Server-sent events as a session meters them: an upstream `text/event-stream` split into its
 * events (each kept as its exact text, relayed unchanged), which events are paid units (a `data:`
 * event other than `[DONE]`), and the session's own events (`payment-need-voucher`,
 * `payment-receipt`) written in the same format. Web-standard (streams, `TextDecoder`).
 *
 * @module
 */
import type { MeteredEvent } from './meter.js'

/** The longest event taken from an upstream, in characters (a longer one ends the stream). */
const maxEventChars = 1 << 20

/** Splits event-stream bytes, as they come, into events. */
export type SseSplitter = {
  /**
   * The events completed by `chunk` (or, with none, by the end of the bytes: the last event, if
   * its blank line never came), each as its text without the blank line that ends it, line ends
   * normalised to `\n`.
   * @throws {RangeError} when an event grows longer than 1 MiB.
   */
  push(chunk?: Uint8Array): string[]
}

/**
 * A splitter of event-stream bytes into events (multi-byte characters and line ends split across
 * chunks are joined).
 *
 * @example
 * ```ts
 * const split = sseSplitter()
 * for (const event of split.push(chunk)) console.log(event)
 * ```
 */
export function sseSplitter(): SseSplitter {
  const decoder = new TextDecoder()
  let buffered = ''
  return {
    push(chunk) {
      buffered += chunk === undefined ? decoder.decode() : decoder.decode(chunk, { stream: true })
      if (buffered.includes('\r')) buffered = buffered.replace(/\r\n?/g, '\n')
      const events: string[] = []
      for (;;) {
        const end = buffered.indexOf('\n\n')
        if (end < 0) break
        const event = buffered.slice(0, end)
        buffered = buffered.slice(end + 2)
        if (event.length > 0) events.push(event)
      }
      if (buffered.length > maxEventChars) {
        throw new RangeError('An event of the stream is too long.')
      }
      if (chunk === undefined) {
        if (buffered.trim().length > 0) events.push(buffered)
        buffered = ''
      }
      return events
    },
  }
}

/**
 * The events of an event stream (see {@link sseSplitter}); a last event without its blank line is
 * yielded when the body ends.
 *
 * @example
 * ```ts
 * for await (const event of sseEvents(response.body)) console.log(event)
 * ```
 */
export async function* sseEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const split = sseSplitter()
  const reader = body.getReader()
  let done = false
  try {
    for (;;) {
      const next = await reader.read()
      yield* split.push(next.done ? undefined : next.value)
      if (next.done) {
        done = true
        return
      }
    }
  } finally {
    if (!done) await reader.cancel().catch(() => {})
    reader.releaseLock()
  }
}

/** The `event:` name of an event (`message` when it has none), and its joined `data:` lines. */
export function sseFields(event: string): { name: string; data: string | undefined } {
  let name = 'message'
  let data: string | undefined
  for (const line of event.split('\n')) {
    if (line.startsWith('data:')) {
      const value = line.slice(line.charCodeAt(5) === 32 ? 6 : 5)
      data = data === undefined ? value : `${data}\n${value}`
    } else if (line.startsWith('event:')) {
      name = line.slice(line.charCodeAt(6) === 32 ? 7 : 6)
    }
  }
  return { name, data }
}

/**
 * Whether an event is a paid unit: a `message` event with data other than `[DONE]` (a token, a
 * chunk); comments, `[DONE]` and named events pass uncharged.
 */
export function isUnitEvent(event: string): boolean {
  const { name, data } = sseFields(event)
  return name === 'message' && data !== undefined && data.trim() !== '[DONE]'
}

/** A metered event as event-stream text: a message as it came, the session's own as JSON. */
export function formatMeteredEvent(event: MeteredEvent<string>): string {
  if (event.type === 'message') return `${event.data}\n\n`
  return `event: ${event.type}\ndata: ${JSON.stringify(event.data)}\n\n`
}
