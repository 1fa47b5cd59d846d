/**
 * The inference API's pure parts: the request schema (a fuzzed parser never throws and never echoes
 * a value), the deterministic token estimate and the context-window check, the model configuration
 * (a confidential model is refused unless an upstream kind can serve it), the rate-limit headers and
 * the OpenAI error envelope, and the model settings as the gateway reads them.
 */
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { configProblems, loadConfig } from '../config.js'
import { errorBody, inferenceErrors } from './errors.js'
import { createRateLimiter, rateLimitHeaders } from './limits.js'
import { modelConfigSchema, modelList, prepareModels } from './models.js'
import { checkContextWindow, estimatePromptTokens, parseChatRequest } from './request.js'

const upstream = { kind: 'openai-compatible', baseUrl: 'https://api.example/v1' } as const

describe('the chat request', () => {
  it('fills the spec defaults (stream false, temperature 1) and drops unknown fields', () => {
    const parsed = parseChatRequest({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      logit_bias: { 1: 100 },
    })
    expect(parsed).toEqual({
      status: 'valid',
      request: {
        model: 'm',
        messages: [{ role: 'user', content: 'hi' }],
        stream: false,
        temperature: 1,
      },
    })
  })

  it('names the first bad field and never echoes its value', () => {
    const secret = 'sk-this-must-not-come-back'
    const bad = parseChatRequest({ model: 'm', messages: [{ role: secret, content: 'x' }] })
    expect(bad).toMatchObject({ status: 'invalid', param: 'messages.0.role' })
    expect(JSON.stringify(bad)).not.toContain(secret)
    expect(parseChatRequest({ model: 'm', messages: [] })).toMatchObject({ param: 'messages' })
    expect(
      parseChatRequest({
        model: 'm',
        messages: [{ role: 'user', content: 'x' }],
        temperature: 2.5,
      }),
    ).toMatchObject({ param: 'temperature' })
    expect(parseChatRequest('nope')).toMatchObject({ status: 'invalid', param: 'body' })
  })

  it('never throws on any JSON value (fuzzed)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const result = parseChatRequest(value)
        expect(['valid', 'invalid']).toContain(result.status)
      }),
      { numRuns: 500 },
    )
  })
})

describe('the token estimate', () => {
  it('is 3 + per message 4 + ceil(UTF-8 bytes of role, name and content / 3)', () => {
    expect(estimatePromptTokens([{ role: 'user', content: 'Say hello' }])).toBe(3 + 4 + 5)
    // Multi-byte text counts its bytes: 'é' is 2 bytes.
    expect(estimatePromptTokens([{ role: 'system', content: 'éé' }])).toBe(3 + 4 + 4)
    expect(
      estimatePromptTokens([
        { role: 'user', content: 'a', name: 'bob' },
        { role: 'assistant', content: '' },
      ]),
    ).toBe(3 + (4 + 3) + (4 + 3))
  })

  it('grows with the prompt, deterministically', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (a, b) => {
        const one = estimatePromptTokens([{ role: 'user', content: a }])
        expect(estimatePromptTokens([{ role: 'user', content: a }])).toBe(one)
        expect(estimatePromptTokens([{ role: 'user', content: a + b }])).toBeGreaterThanOrEqual(one)
      }),
    )
  })

  it('refuses a prompt plus max_tokens over the window', () => {
    const request = {
      model: 'm',
      messages: [{ role: 'user' as const, content: 'Say hello' }],
      stream: false,
      temperature: 1,
    }
    expect(checkContextWindow(request, 12)).toEqual({ status: 'fits', promptTokens: 12 })
    expect(checkContextWindow(request, 11)).toMatchObject({ status: 'too_long' })
    expect(checkContextWindow({ ...request, max_tokens: 10 }, 21)).toMatchObject({
      status: 'too_long',
    })
    expect(checkContextWindow({ ...request, max_tokens: 10 }, 22)).toMatchObject({ status: 'fits' })
  })
})

describe('models', () => {
  it('lists id, token prices (USDC per token), the keyless price, context window, output cap and privacy tier', () => {
    const models = prepareModels([
      modelConfigSchema.parse({
        id: 'm',
        pricing: { prompt: '0.6', completion: '2.4' },
        contextWindow: 8192,
        upstream,
      }),
      modelConfigSchema.parse({
        id: 'k',
        pricing: { prompt: '0', completion: '15' },
        contextWindow: 8192,
        maxOutputTokens: 1024,
        keyless: false,
        upstream,
      }),
    ])
    expect(models.map((m) => [m.tokenPricing, m.maxOutput])).toEqual([
      [{ promptPerMillion: 600_000n, completionPerMillion: 2_400_000n }, 8192],
      [{ promptPerMillion: 0n, completionPerMillion: 15_000_000n }, 1024],
    ])
    const entry = {
      object: 'model',
      created: expect.any(Number),
      owned_by: 'tollgate',
      context_window: 8192,
      privacy: 'open',
    }
    expect(modelList(models, 50_000n).data).toEqual([
      {
        ...entry,
        id: 'm',
        pricing: {
          currency: 'USDC',
          prompt: '0.0000006',
          completion: '0.0000024',
          keyless_per_call: '0.050000',
        },
        max_output_tokens: 8192,
      },
      // Not offered keyless: no keyless price.
      {
        ...entry,
        id: 'k',
        pricing: { currency: 'USDC', prompt: '0', completion: '0.000015' },
        max_output_tokens: 1024,
      },
    ])
    // Without a keyless route, no model shows a keyless price.
    expect(modelList(models, undefined).data[0]?.pricing).not.toHaveProperty('keyless_per_call')
  })

  it('refuses prices that are not USDC per million tokens, a free output, and the old flat price', () => {
    const parse = (model: Record<string, unknown>) =>
      modelConfigSchema.safeParse({ id: 'm', contextWindow: 8192, upstream, ...model }).success
    expect(parse({ pricing: { prompt: '0.15', completion: '0.6' } })).toBe(true)
    for (const pricing of [
      { prompt: '0.1', completion: '0' },
      { prompt: '-1', completion: '1' },
      { prompt: '0.0000001', completion: '1' },
      { prompt: '01', completion: '1' },
      { prompt: 1, completion: '1' },
      { completion: '1' },
      { prompt: '1', completion: '1', request: '1' },
    ]) {
      expect(parse({ pricing })).toBe(false)
    }
    expect(parse({ price: '0.002' })).toBe(false)
    expect(parse({ price: '0.002', pricing: { prompt: '1', completion: '1' } })).toBe(false)
  })

  it('refuses a confidential model on an upstream kind that cannot prove it (no silent downgrade)', () => {
    const result = modelConfigSchema.safeParse({
      id: 'confidential/m',
      pricing: { prompt: '1', completion: '1' },
      contextWindow: 8192,
      privacy: 'confidential',
      upstream,
    })
    expect(result.success).toBe(false)
    expect(JSON.stringify(result.error?.issues)).toContain('privacy')
  })

  it('are read from INFERENCE_MODELS (JSON); a bad one stops the start naming the setting', () => {
    const models = [
      { id: 'm', pricing: { prompt: '1', completion: '2' }, contextWindow: 4096, upstream },
    ]
    const config = loadConfig({ env: { INFERENCE_MODELS: JSON.stringify(models) } })
    expect(config.inferenceModels?.[0]).toMatchObject({ id: 'm', privacy: 'open', keyless: true })
    expect(loadConfig({ env: {} }).inferenceModels).toBeUndefined()
    for (const bad of [
      'not json',
      JSON.stringify([{ ...models[0], pricing: { prompt: '-1', completion: '2' } }]),
      JSON.stringify([models[0], models[0]]),
    ]) {
      try {
        loadConfig({ env: { INFERENCE_MODELS: bad } })
        expect.unreachable()
      } catch (error) {
        expect(error).toMatchObject({ name: 'PaymentError', code: 'invalid_config' })
        expect(configProblems(error)?.[0]).toMatch(/^INFERENCE_MODELS \(inferenceModels/)
      }
    }
  })

  it('the limits and top-ups have their defaults and settings', () => {
    expect(loadConfig({ env: {} })).toMatchObject({
      rateLimitPerMinute: 120,
      openMaxTokens: 4096,
      creditTopUps: ['1', '5', '20'],
      databaseSchema: 'public',
    })
    expect(
      loadConfig({ env: { RATE_LIMIT_PER_MINUTE: '10', CREDIT_TOP_UPS: '0.5, 2' } }),
    ).toMatchObject({ rateLimitPerMinute: 10, creditTopUps: ['0.5', '2'] })
    expect(() => loadConfig({ env: { CREDIT_TOP_UPS: '0' } })).toThrow(/CREDIT_TOP_UPS/)
    expect(() => loadConfig({ env: { DATABASE_SCHEMA: 'a;b' } })).toThrow(/DATABASE_SCHEMA/)
  })
})

describe('limits and errors', () => {
  it('counts requests per key and says when the window resets', async () => {
    const limiter = createRateLimiter({ points: 3, keyPrefix: `t${Date.now()}` })
    const decisions = []
    for (let i = 0; i < 4; i++) decisions.push(await limiter.take('a'))
    expect(decisions.map((d) => d.status)).toEqual(['allowed', 'allowed', 'allowed', 'limited'])
    expect(decisions.map((d) => d.remaining)).toEqual([2, 1, 0, 0])
    expect((await limiter.take('b')).status).toBe('allowed')
    const limited = rateLimitHeaders(decisions[3] as (typeof decisions)[number])
    expect(limited['x-ratelimit-limit-requests']).toBe('3')
    expect(limited['x-ratelimit-remaining-requests']).toBe('0')
    expect(Number(limited['retry-after'])).toBeGreaterThanOrEqual(1)
    expect(limited['x-ratelimit-reset-requests']).toBe(`${limited['retry-after']}s`)
    expect(
      rateLimitHeaders(decisions[0] as (typeof decisions)[number])['retry-after'],
    ).toBeUndefined()
  })

  it('errors use the OpenAI envelope with the statuses of docs/inference.md', () => {
    expect(errorBody('invalid_api_key', 'm')).toEqual({
      error: { message: 'm', type: 'invalid_request_error', code: 'invalid_api_key', param: null },
    })
    expect(inferenceErrors.invalid_api_key.status).toBe(401)
    expect(inferenceErrors.insufficient_credit.status).toBe(402)
    expect(inferenceErrors.model_not_found.status).toBe(404)
    expect(inferenceErrors.rate_limit_exceeded.status).toBe(429)
    expect(inferenceErrors.upstream_failed.status).toBeGreaterThanOrEqual(500)
  })
})
