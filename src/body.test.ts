import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { readBody, readCappedStream } from './body.js'

const schema = z.object({ messages: z.array(z.object({ role: z.enum(['user', 'assistant']) })) })
const post = (body: string | undefined, headers: Record<string, string> = {}) =>
  new Request('http://seller.test/x', { method: 'POST', body: body ?? null, headers })

describe('readBody', () => {
  it('names the first bad field of a Standard Schema validator', async () => {
    const read = await readBody(post('{"messages":[{"role":"robot"}]}'), schema)
    expect(read).toMatchObject({ status: 'invalid', field: 'messages.0.role' })
  })

  it('returns the validated body and leaves the request readable', async () => {
    const request = post('{"messages":[{"role":"user"}]}')
    expect(await readBody(request, schema)).toMatchObject({
      status: 'ok',
      body: { messages: [{ role: 'user' }] },
    })
    expect(await request.json()).toEqual({ messages: [{ role: 'user' }] })
  })

  it('accepts a function validator', async () => {
    const read = await readBody(post('{"a":1}'), () => ({
      status: 'invalid',
      field: 'a',
      message: 'no',
    }))
    expect(read).toEqual({ status: 'invalid', field: 'a', message: 'no' })
  })

  it('rejects bad JSON and a missing body when a validator is set', async () => {
    expect(await readBody(post('{oops'), schema)).toMatchObject({ status: 'invalid', field: null })
    expect(await readBody(post(undefined), schema)).toMatchObject({
      status: 'invalid',
      message: /required/,
    })
  })

  it('stops at the size limit, by declared length and by bytes read', async () => {
    expect(await readBody(post('{}', { 'content-length': '5000' }), schema, 100)).toEqual({
      status: 'too_large',
      limit: 100,
    })
    const big = JSON.stringify({ messages: Array.from({ length: 50 }, () => ({ role: 'user' })) })
    expect(await readBody(post(big), schema, 100)).toEqual({ status: 'too_large', limit: 100 })
  })

  it('does not read the body of a route without a validator', async () => {
    const request = post('not json at all')
    expect(await readBody(request, undefined)).toMatchObject({ status: 'ok', body: undefined })
    expect(request.bodyUsed).toBe(false)
  })
})

describe('readCappedStream', () => {
  const streamOf = (chunks: string[], cancelled: unknown[] = []) =>
    new ReadableStream<Uint8Array>(
      {
        pull(controller) {
          const next = chunks.shift()
          if (next === undefined) controller.close()
          else controller.enqueue(new TextEncoder().encode(next))
        },
        cancel(reason) {
          cancelled.push(reason ?? 'cancelled')
        },
      },
      // Nothing is pulled ahead of a read: what the reader did not ask for stays unread.
      { highWaterMark: 0 },
    )

  it('joins the chunks of a body up to exactly the cap', async () => {
    const bytes = await readCappedStream(streamOf(['ab', 'cd', 'e']), 5)
    expect(new TextDecoder().decode(bytes)).toBe('abcde')
    expect(await readCappedStream(streamOf([]), 5)).toEqual(new Uint8Array(0))
  })

  it('stops one byte past the cap, cancels the stream and reads no further', async () => {
    const cancelled: unknown[] = []
    const chunks = ['abc', 'def', 'never read']
    expect(await readCappedStream(streamOf(chunks, cancelled), 5)).toBeUndefined()
    await new Promise((resolve) => setTimeout(resolve, 0))
    expect(cancelled).toHaveLength(1)
    expect(chunks).toEqual(['never read'])
  })
})
