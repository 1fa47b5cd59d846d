/**
 * The byte handling of a confidential upstream's answers: reading a bounded body, the first SSE
 * event (checked for the model before anything is relayed), and the relay of a stream byte for
 * byte that holds back its final `data: [DONE]` event until the receipt over every byte verified
 * (otherwise the stream errors with {@link AttestationRefusal}).
 *
 * @module
 */
import { z } from 'zod'

const done = 'data: [DONE]\n\n'

/** A request refused because the enclave did not prove itself. */
export type UpstreamRefused = { status: 'refused'; reason: string }

/** A stream that ended without a verified receipt: the API turns it into an error event. */
export class AttestationRefusal extends Error {
  override readonly name = 'AttestationRefusal'
  readonly code = 'attestation_failed'
}

/** Reads a whole body; `undefined` once it passes `limit` bytes (the rest is not read). */
export async function readAll(
  body: ReadableStream<Uint8Array>,
  limit: number,
): Promise<Uint8Array | undefined> {
  const chunks: Uint8Array[] = []
  let size = 0
  const reader = body.getReader()
  for (;;) {
    const next = await reader.read()
    if (next.done) return Buffer.concat(chunks)
    size += next.value.byteLength
    if (size > limit) {
      await reader.cancel().catch(() => {})
      return undefined
    }
    chunks.push(next.value)
  }
}

/** What is read of a JSON answer or an SSE event's data: the model it names. */
const modelSchema = z.looseObject({ model: z.string().max(256) })

/** The `model` of a JSON answer or SSE event data, if it names one. */
export function modelOf(bytes: Uint8Array | string): string | undefined {
  try {
    const text = typeof bytes === 'string' ? bytes : new TextDecoder().decode(bytes)
    return modelSchema.safeParse(JSON.parse(text)).data?.model
  } catch {
    return undefined
  }
}

/** The data of one SSE event (its `data:` lines joined). */
export function eventData(event: string): string {
  return event
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .map((line) => line.slice(5).replace(/^ /, ''))
    .join('\n')
}

/** Reads until the first complete event with data; answers it and every byte read. */
export async function readFirstEvent(
  reader: ReadableStreamDefaultReader<Uint8Array>,
): Promise<{ event: string; bytes: Uint8Array } | undefined> {
  let bytes = new Uint8Array(0)
  while (bytes.byteLength < 64 * 1024) {
    let next: ReadableStreamReadResult<Uint8Array>
    try {
      next = await reader.read()
    } catch {
      return undefined
    }
    if (next.done) return undefined
    bytes = Buffer.concat([bytes, next.value])
    const text = Buffer.from(bytes).toString('latin1')
    let start = 0
    for (let end = text.indexOf('\n\n'); end !== -1; end = text.indexOf('\n\n', start)) {
      const event = Buffer.from(bytes.subarray(start, end)).toString('utf8')
      if (eventData(event) !== '') return { event, bytes }
      start = end + 2
    }
  }
  return undefined
}

/**
 * Where to hold back `bytes` from: the start of a final event that may still become
 * `data: [DONE]`, or `bytes.length` (release all). `boundary`: `bytes` starts an event;
 * `newline`: the byte released before `bytes` was a `\n`.
 */
function holdBackFrom(bytes: Uint8Array, boundary: boolean, newline: boolean): number {
  const text = Buffer.from(bytes).toString('latin1')
  const found = text.lastIndexOf('\n\n', text.length - 3)
  let start = -1
  if (found !== -1) start = found + 2
  else if (boundary) start = 0
  else if (newline && text.startsWith('\n') && text.length > 1) start = 1
  if (start === -1) return bytes.byteLength
  return done.startsWith(text.slice(start)) ? start : bytes.byteLength
}

/** The hold-back of a relayed SSE stream's final `data: [DONE]` event. */
export type HoldBack = {
  /** Takes the next bytes; answers those to release now (all but a possible final `[DONE]`). */
  push(bytes: Uint8Array): Uint8Array
  /** What is held back (at the end: `data: [DONE]\n\n`, or a part of it, or nothing). */
  held(): Uint8Array
}

/** A {@link HoldBack} at the start of a stream. */
export function createHoldBack(): HoldBack {
  let held: Uint8Array = new Uint8Array(0)
  let boundary = true
  let newline = false
  return {
    push(bytes) {
      const all = held.byteLength === 0 ? bytes : Buffer.concat([held, bytes])
      const from = holdBackFrom(all, boundary, newline)
      const out = all.subarray(0, from)
      held = all.slice(from)
      if (out.byteLength > 0) {
        const last = out[out.byteLength - 1]
        const before = out.byteLength > 1 ? out[out.byteLength - 2] : newline ? 10 : undefined
        boundary = last === 10 && before === 10
        newline = last === 10 && !boundary
      }
      if (held.byteLength > 0) boundary = true
      return out
    },
    held: () => held,
  }
}

/**
 * The relayed stream: every byte as it arrives, except a final `data: [DONE]` event, released
 * only when `finish` verified the receipt over every byte received; otherwise the stream errors
 * with {@link AttestationRefusal}.
 */
export function relay(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  first: Uint8Array,
  finish: (wire: Uint8Array) => Promise<{ status: 'verified' } | UpstreamRefused>,
): ReadableStream<Uint8Array> {
  const wire: Uint8Array[] = [first]
  const holdBack = createHoldBack()
  let pending: Uint8Array | undefined = first
  let ended = false
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      for (;;) {
        if (ended) return
        if (pending !== undefined) {
          const out = holdBack.push(pending)
          pending = undefined
          if (out.byteLength > 0) {
            controller.enqueue(out)
            return
          }
        }
        const next = await reader.read().catch(() => undefined)
        if (next === undefined) {
          ended = true
          controller.error(new AttestationRefusal('the enclave stream broke'))
          return
        }
        if (next.done) {
          ended = true
          const verdict = await finish(Buffer.concat(wire))
          if (verdict.status !== 'verified') {
            controller.error(new AttestationRefusal(verdict.reason))
            return
          }
          const held = holdBack.held()
          if (held.byteLength > 0) controller.enqueue(held)
          controller.close()
          return
        }
        wire.push(next.value)
        pending = next.value
      }
    },
    cancel(reason) {
      return reader.cancel(reason)
    },
  })
}
