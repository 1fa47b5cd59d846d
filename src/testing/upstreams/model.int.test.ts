/**
 * The model server's long replies (`replyTokens`): a streamed answer of that many tokens, one
 * chunk each, cut at `max_tokens` as any other reply.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sseEvents, sseFields } from '../../session/sse.js'
import { type ModelUpstream, modelCompletion, startModelUpstream } from './model.js'

let model: ModelUpstream
beforeAll(async () => {
  model = await startModelUpstream({ replyTokens: 2000 })
})
afterAll(() => model.stop())

/** Streams a chat answer; its text chunks and finish reason. */
async function stream(maxTokens: number): Promise<{ texts: string[]; finish: unknown }> {
  const response = await fetch(`${model.baseUrl}/chat/completions`, {
    method: 'POST',
    headers: { authorization: 'Bearer any', 'content-type': 'application/json' },
    body: JSON.stringify({
      messages: [{ role: 'user', content: 'Tell me a long story.' }],
      max_tokens: maxTokens,
      stream: true,
    }),
  })
  expect(response.status).toBe(200)
  const texts: string[] = []
  let finish: unknown
  for await (const event of sseEvents(response.body as ReadableStream<Uint8Array>)) {
    const { data } = sseFields(event)
    if (data === undefined || data === '[DONE]') continue
    const choice = (
      JSON.parse(data) as { choices: { delta: { content?: string }; finish_reason: unknown }[] }
    ).choices[0]
    if (typeof choice?.delta.content === 'string' && choice.delta.content !== '') {
      texts.push(choice.delta.content)
    }
    finish = choice?.finish_reason ?? finish
  }
  return { texts, finish }
}

describe('the model server with replyTokens', () => {
  it('streams a reply of that many tokens, the stub reply repeated', async () => {
    const { texts, finish } = await stream(4096)
    expect(texts).toHaveLength(2000)
    expect(finish).toBe('stop')
    const short = modelCompletion({ messages: [{ content: 'Tell me a long story.' }] })
    expect(texts.slice(0, short.tokens.length)).toEqual(short.tokens)
    expect(texts[short.tokens.length]).toBe(` ${short.tokens[0]}`)
  })

  it('cuts it at max_tokens', async () => {
    const { texts, finish } = await stream(1500)
    expect(texts).toHaveLength(1500)
    expect(finish).toBe('length')
  })
})

describe('the model server when its client hangs up', () => {
  it('stops the answer: the rest is neither generated nor written', async () => {
    const slow = await startModelUpstream({ replyTokens: 2000, tokenIntervalMs: 2 })
    try {
      const controller = new AbortController()
      const response = await fetch(`${slow.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { authorization: 'Bearer any', 'content-type': 'application/json' },
        body: JSON.stringify({ messages: [{ role: 'user', content: 'Go on.' }], stream: true }),
        signal: controller.signal,
      })
      const reader = (response.body as ReadableStream<Uint8Array>).getReader()
      await reader.read()
      controller.abort()
      await reader.read().catch(() => undefined)
      await new Promise((resolve) => setTimeout(resolve, 100))
      const written = slow.calls.at(-1)?.events ?? 0
      // Written before the hang-up was seen, and nothing after: 2 000 tokens take 4 s.
      expect(written).toBeGreaterThan(0)
      expect(written).toBeLessThan(200)
      await new Promise((resolve) => setTimeout(resolve, 100))
      expect(slow.calls.at(-1)?.events).toBe(written)
    } finally {
      await slow.stop()
    }
  })
})
