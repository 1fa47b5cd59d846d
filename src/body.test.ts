import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { readBody } from './body.js'

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
