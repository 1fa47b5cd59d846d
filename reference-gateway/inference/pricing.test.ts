/**
 * Token prices and what a keyed call reserves and is charged: the cost of a call rounded up once,
 * never per token; a meter's per-token price and running differences that never undercharge; the
 * per-token text of the model list; the reservation (max_tokens, the output cap, the window); the
 * cost of a usage, with what the upstream did not report taken from the reservation; and the usage
 * of a stream read however its chunks are cut.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { streamUsage } from './answers.js'
import { costOf, reservationOf } from './charge.js'
import { modelConfigSchema, prepareModels } from './models.js'
import { outputTokenPrice, perTokenText, type TokenPricing, tokenCost } from './pricing.js'
import { type ChatRequest, estimatePromptTokens } from './request.js'

const pricing: TokenPricing = { promptPerMillion: 600_000n, completionPerMillion: 2_400_000n }
const perMillion = fc.bigInt({ min: 0n, max: 10_000_000_000n })
const count = fc.integer({ min: 0, max: 10_000_000 })

describe('token prices', () => {
  it('costs a call its tokens at the prices per million, rounded up once', () => {
    expect(tokenCost(pricing, { promptTokens: 1_000, completionTokens: 500 })).toBe(1_800n)
    // 0.6 + 2.4 base units: 3, not 1 + 3 rounded per kind.
    expect(tokenCost(pricing, { promptTokens: 1, completionTokens: 1 })).toBe(3n)
    expect(tokenCost(pricing, { promptTokens: 1, completionTokens: 0 })).toBe(1n)
    expect(tokenCost(pricing, { promptTokens: 0, completionTokens: 0 })).toBe(0n)
    for (const bad of [-1, 1.5, Number.NaN, 2 ** 60]) {
      expect(() => tokenCost(pricing, { promptTokens: bad, completionTokens: 0 })).toThrow(
        RangeError,
      )
    }
  })

  it('never charges less than the exact amount, and less than one base unit more', () => {
    fc.assert(
      fc.property(perMillion, perMillion, count, count, (p, c, input, output) => {
        const cost = tokenCost(
          { promptPerMillion: p, completionPerMillion: c },
          { promptTokens: input, completionTokens: output },
        )
        const exact = BigInt(input) * p + BigInt(output) * c // in millionths of a base unit
        expect(cost * 1_000_000n >= exact).toBe(true)
        expect(cost * 1_000_000n - exact < 1_000_000n).toBe(true)
      }),
    )
  })

  it('a meter charging token by token: the running differences add up to the call, the per-token price never less', () => {
    fc.assert(
      fc.property(perMillion, fc.integer({ min: 0, max: 500 }), (c, tokens) => {
        const at = { promptPerMillion: 0n, completionPerMillion: c }
        const running = (n: number) => tokenCost(at, { promptTokens: 0, completionTokens: n })
        let charged = 0n
        for (let n = 1; n <= tokens; n++) charged += running(n) - running(n - 1)
        expect(charged).toBe(running(tokens))
        expect(outputTokenPrice(at) * BigInt(tokens) >= running(tokens)).toBe(true)
      }),
    )
    expect(outputTokenPrice(pricing)).toBe(3n)
    expect(outputTokenPrice({ promptPerMillion: 0n, completionPerMillion: 15_000_000n })).toBe(15n)
    expect(outputTokenPrice({ promptPerMillion: 0n, completionPerMillion: 0n })).toBe(0n)
  })

  it('writes a price per token as the model list shows it (USDC, trailing zeros dropped)', () => {
    expect(perTokenText(600_000n)).toBe('0.0000006')
    expect(perTokenText(15_000_000n)).toBe('0.000015')
    expect(perTokenText(1n)).toBe('0.000000000001')
    expect(perTokenText(0n)).toBe('0')
    expect(perTokenText(2_000_000_000_000n)).toBe('2')
    expect(perTokenText(2_500_000_000_000n)).toBe('2.5')
  })
})

describe('reservations', () => {
  const [model] = prepareModels([
    modelConfigSchema.parse({
      id: 'm',
      pricing: { prompt: '0.6', completion: '2.4' },
      contextWindow: 1_000,
      maxOutputTokens: 300,
      upstream: { kind: 'openai-compatible', baseUrl: 'https://api.example/v1' },
    }),
  ])
  if (model === undefined) throw new Error('no model')
  const body = (content: string, max_tokens?: number): ChatRequest => ({
    model: 'm',
    messages: [{ role: 'user', content }],
    stream: false,
    temperature: 1,
    ...(max_tokens === undefined ? {} : { max_tokens }),
  })

  it('reserves the prompt estimate and max_tokens, or the output cap within the window', () => {
    const short = body('Say hello')
    const prompt = estimatePromptTokens(short.messages)
    expect(reservationOf(model, body('Say hello', 50), prompt)).toEqual({
      status: 'valid',
      reservation: {
        promptTokens: prompt,
        outputTokens: 50,
        amount: tokenCost(pricing, { promptTokens: prompt, completionTokens: 50 }),
      },
    })
    // A served model is priced as its token prices are.
    expect(tokenCost(model, { promptTokens: 1_000, completionTokens: 500 })).toBe(1_800n)
    expect(outputTokenPrice(model)).toBe(3n)
    expect(reservationOf(model, short, prompt)).toMatchObject({
      reservation: { outputTokens: 300 },
    })
    // A long prompt leaves less than the cap: only what the window leaves is reserved (and asked).
    const long = body('x'.repeat(2_400))
    const longPrompt = estimatePromptTokens(long.messages)
    expect(reservationOf(model, long, longPrompt)).toMatchObject({
      reservation: { outputTokens: 1_000 - longPrompt },
    })
    expect(reservationOf(model, body('hi', 301), prompt)).toMatchObject({
      status: 'invalid',
      param: 'max_tokens',
    })
    expect(reservationOf(model, body('hi'), 1_000)).toMatchObject({
      status: 'invalid',
      param: 'messages',
    })
  })

  it('costs a served call its usage; what the upstream did not report, as reserved', () => {
    const reservation = { promptTokens: 20, outputTokens: 300, amount: 0n }
    const at = (promptTokens: number, completionTokens: number) =>
      tokenCost(pricing, { promptTokens, completionTokens })
    expect(costOf(model, reservation, { promptTokens: 7, completionTokens: 11 })).toBe(at(7, 11))
    expect(costOf(model, reservation, { completionTokens: 11 })).toBe(at(20, 11))
    expect(costOf(model, reservation, {})).toBe(at(20, 300))
    expect(costOf(model, reservation, {}, { completionTokens: 4 })).toBe(at(20, 4))
  })
})

describe('the usage of a stream', () => {
  const events = [
    'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n',
    'data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n',
    'data: {"choices":[{"index":0,"delta":{"content":"lo é"}}]}\n\n',
    'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
    'data: {"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}\n\n',
    'data: [DONE]\n\n',
  ]
  const bytes = new TextEncoder().encode(events.join(''))

  it('reads the final usage chunk and counts the events with text, however the bytes are cut', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: bytes.length - 1 })), (cuts) => {
        const watch = streamUsage()
        let from = 0
        for (const at of [...cuts.sort((a, b) => a - b), bytes.length]) {
          watch.push(bytes.subarray(from, at))
          from = at
        }
        expect(watch.usage()).toEqual({ promptTokens: 9, completionTokens: 2 })
        expect(watch.events()).toBe(2)
      }),
    )
  })

  it('has no usage when the stream reports none, or was cut before it', () => {
    const watch = streamUsage()
    for (const event of events.slice(0, 3)) watch.push(new TextEncoder().encode(event))
    expect(watch.usage()).toEqual({})
    expect(watch.events()).toBe(2)
    const junk = streamUsage()
    junk.push(new TextEncoder().encode('data: {"usage": nope}\n\n: comment "usage"\n\n'))
    expect(junk.usage()).toEqual({})
  })
})
