/**
 * The private inference API end to end on the embedded defaults (SQLite, the ledger emulator, the
 * local model server): the official `openai` SDK with a bearer key (model list, buffered and
 * streamed completions, and the error classes of docs/inference.md), calls charged by the tokens of
 * their usage after reserving the most they can cost, credit that is never overspent and is
 * restored exactly once when the upstream fails, 120 requests a minute, the keyless route paid per
 * call with the paying fetch, and the paid credit top-ups in both dialects.
 */
import { mkdtempSync } from 'node:fs'
import { join } from 'node:path'
import { SuiGrpcClient } from '@mysten/sui/grpc'
import OpenAI, {
  APIError,
  AuthenticationError,
  BadRequestError,
  NotFoundError,
  RateLimitError,
} from 'openai'
import { describe, expect, it } from 'vitest'
import { createPayingFetch, type Payment } from '../../src/client/index.js'
import type { StartedLedger } from '../../src/testing/index.js'
import { stubReply } from '../../src/testing/index.js'
import { useTestGateway } from '../server/testHelpers.js'
import { tokenCost } from './pricing.js'
import { estimatePromptTokens } from './request.js'
import { costOfUsage, type WireUsage } from './testHelpers.js'

const model = 'llama-3.3-70b'
const messages = [{ role: 'user' as const, content: 'Say hello' }]
// The embedded default model: 0.6 USDC per million prompt tokens, 0.8 per million output tokens,
// at most 4096 output tokens. A call reserves its estimated prompt and 4096 output tokens.
const pricing = { promptPerMillion: 600_000n, completionPerMillion: 800_000n }
const reservation = tokenCost(pricing, {
  promptTokens: estimatePromptTokens(messages),
  completionTokens: 4096,
})
/** What a call is charged: the upstream's usage at the model's prices. */
const costOf = (usage: WireUsage | null | undefined) => costOfUsage(pricing, usage)

const gateway = useTestGateway()
function client(apiKey: string): OpenAI {
  // No SDK retries: each request is one call (and one debit).
  return new OpenAI({ apiKey, baseURL: `${gateway.url}/v1`, maxRetries: 0 })
}

async function newKey(credit: bigint) {
  return gateway.inference.keys.create({ credit })
}

async function creditOf(id: string): Promise<bigint> {
  return (await gateway.inference.keys.get(id))?.credit ?? -1n
}

function chat(key: string, body: unknown) {
  return fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
}

async function until(check: () => Promise<boolean>, ms = 10_000) {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out waiting')
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

describe('the openai SDK with a bearer key', () => {
  it('lists the models with token prices, the keyless price, context window, output cap and privacy tier', async () => {
    const { key } = await newKey(0n)
    const list = await client(key).models.list()
    const open = {
      id: model,
      object: 'model',
      created: expect.any(Number),
      owned_by: 'tollgate',
      // USDC per token; the keyless route's flat price of one call, as its catalog entry says, and
      // its session's price of one streamed token (the highest output price of its models).
      pricing: {
        currency: 'USDC',
        prompt: '0.0000006',
        completion: '0.0000008',
        keyless_per_call: '0.050000',
        keyless_session_per_token: '0.000002',
      },
      context_window: 131_072,
      max_output_tokens: 4096,
      privacy: 'open',
    }
    const confidential = {
      // The embedded default's confidential model, served by the simulated enclave; keyless too.
      id: 'confidential/llama-3.3-70b',
      object: 'model',
      created: expect.any(Number),
      owned_by: 'tollgate',
      pricing: {
        currency: 'USDC',
        prompt: '0.0000012',
        completion: '0.0000016',
        keyless_per_call: '0.050000',
        keyless_session_per_token: '0.000002',
      },
      context_window: 131_072,
      max_output_tokens: 4096,
      privacy: 'confidential',
    }
    expect(list.data).toEqual([open, confidential])
    // Public: no key needed. The keyless route's free list has the models it offers, same prices.
    expect((await fetch(`${gateway.url}/v1/models`)).status).toBe(200)
    const keyless = await (await fetch(`${gateway.url}/open/v1/models`)).json()
    expect(keyless).toEqual({ object: 'list', data: [open, confidential] })
    const paths = (await (await fetch(`${gateway.url}/openapi.json`)).json()).paths
    expect(paths['/open/v1/chat/completions'].post['x-payment-info'].price).toBe('0.050000')
  })

  it('gets a buffered completion, charged by the tokens of its usage', async () => {
    const { id, key } = await newKey(10_000n)
    const { data, response } = await client(key)
      .chat.completions.create({ model, messages })
      .withResponse()
    expect(data.object).toBe('chat.completion')
    expect(data.model).toBe(model)
    expect(data.choices[0]?.message).toEqual({ role: 'assistant', content: stubReply('Say hello') })
    expect(data.choices[0]?.finish_reason).toBe('stop')
    expect(data.usage?.total_tokens).toBeGreaterThan(0)
    expect(response.headers.get('x-request-id')).toBeTruthy()
    expect(response.headers.get('x-ratelimit-limit-requests')).toBe('120')
    expect(response.headers.get('x-ratelimit-remaining-requests')).toBe('119')
    expect(response.headers.get('x-ratelimit-reset-requests')).toMatch(/^\d+s$/)
    const cost = costOf(data.usage)
    expect(cost).toBeGreaterThan(0n)
    expect(cost).toBeLessThan(reservation)
    expect(await creditOf(id)).toBe(10_000n - cost)
    const ledger = await gateway.inference.keys.ledger(id)
    expect(ledger.find((e) => e.kind === 'call')).toMatchObject({ state: 'served', amount: cost })
  })

  it('charges a longer answer more, and a max_tokens that cuts the answer less', async () => {
    const { id, key } = await newKey(10_000n)
    const long = [{ role: 'user' as const, content: 'Tell me everything about the sea' }]
    const whole = await client(key).chat.completions.create({ model, messages: long })
    const cut = await client(key).chat.completions.create({ model, messages: long, max_tokens: 2 })
    expect(cut.usage?.completion_tokens).toBe(2)
    expect(cut.choices[0]?.finish_reason).toBe('length')
    expect(costOf(cut.usage)).toBeLessThan(costOf(whole.usage))
    expect(await creditOf(id)).toBe(10_000n - costOf(whole.usage) - costOf(cut.usage))
  })

  it('streams a completion: chunks passed through byte for byte, charged by the final usage chunk', async () => {
    const { id, key } = await newKey(10_000n)
    const stream = await client(key).chat.completions.create({ model, messages, stream: true })
    let text = ''
    let usage: Parameters<typeof costOf>[0]
    for await (const chunk of stream) {
      expect(chunk.object).toBe('chat.completion.chunk')
      text += chunk.choices[0]?.delta.content ?? ''
      // The gateway asks the upstream for the usage: its last chunk carries it, and no choice.
      if (chunk.usage != null) usage = chunk.usage
    }
    expect(text).toBe(stubReply('Say hello'))
    const cost = costOf(usage)
    await until(async () => (await creditOf(id)) === 10_000n - cost)

    // The bytes the gateway sends are the bytes the model server sends when asked as the gateway
    // asks: at most the output reserved, with the usage.
    const upstream = await fetch(`${gateway.inference.modelStub?.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer stub-key', 'content-type': 'application/json' },
      body: JSON.stringify({
        model,
        messages,
        stream: true,
        temperature: 1,
        max_tokens: 4096,
        stream_options: { include_usage: true },
      }),
    })
    const through = await chat(key, { model, messages, stream: true })
    expect(through.headers.get('content-type')).toMatch(/^text\/event-stream/)
    const bytes = await through.text()
    expect(bytes).toBe(await upstream.text())
    expect(bytes.endsWith('data: [DONE]\n\n')).toBe(true)
    await until(async () => (await creditOf(id)) === 10_000n - 2n * cost)
    const calls = (await gateway.inference.keys.ledger(id)).filter((e) => e.kind === 'call')
    expect(calls.map((e) => [e.state, e.amount])).toEqual([
      ['served', cost],
      ['served', cost],
    ])
  })

  it('raises AuthenticationError (401 invalid_api_key) without a key, with a wrong one, with a revoked one', async () => {
    const { id, key } = await newKey(10_000n)
    await gateway.inference.keys.revoke(id)
    for (const apiKey of ['nope', `tg_${'A'.repeat(43)}`, key]) {
      const error = await client(apiKey)
        .chat.completions.create({ model, messages })
        .catch((e: unknown) => e)
      expect(error).toBeInstanceOf(AuthenticationError)
      expect((error as AuthenticationError).status).toBe(401)
      expect((error as AuthenticationError).code).toBe('invalid_api_key')
      expect((error as AuthenticationError).type).toBe('invalid_request_error')
    }
    const bare = await fetch(`${gateway.url}/v1/chat/completions`, { method: 'POST', body: '{}' })
    expect(bare.status).toBe(401)
    expect(bare.headers.get('x-request-id')).toBeTruthy()
    expect(await bare.json()).toEqual({
      error: {
        message: expect.stringContaining('Authorization: Bearer'),
        type: 'invalid_request_error',
        code: 'invalid_api_key',
        param: null,
      },
    })
  })

  it('raises NotFoundError (404) for an unknown model, nothing debited', async () => {
    const { id, key } = await newKey(10_000n)
    const error = await client(key)
      .chat.completions.create({ model: 'gpt-99', messages })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(NotFoundError)
    expect((error as NotFoundError).code).toBe('model_not_found')
    expect((error as NotFoundError).param).toBe('model')
    expect(await creditOf(id)).toBe(10_000n)
  })

  it('answers 402 insufficient_credit (the SDK’s APIError with status 402) when the credit cannot cover the most a call can cost', async () => {
    const { id, key } = await newKey(reservation - 1n)
    const calls = gateway.inference.modelStub?.calls.length
    const error = await client(key)
      .chat.completions.create({ model, messages })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(APIError)
    expect((error as APIError).status).toBe(402)
    expect((error as APIError).code).toBe('insufficient_credit')
    expect((error as APIError).message).toContain('Lower max_tokens')
    expect(await creditOf(id)).toBe(reservation - 1n)
    expect(gateway.inference.modelStub?.calls.length).toBe(calls)
    // A smaller max_tokens reserves less: the same credit covers it.
    const small = await client(key).chat.completions.create({ model, messages, max_tokens: 100 })
    expect(await creditOf(id)).toBe(reservation - 1n - costOf(small.usage))
  })

  it('refuses a body that breaks the schema (400 naming the field) and one over the context window, before the upstream', async () => {
    const { id, key } = await newKey(10_000n)
    const calls = gateway.inference.modelStub?.calls.length
    const bad = await client(key)
      .chat.completions.create({ model, messages, temperature: 3 })
      .catch((e: unknown) => e)
    expect(bad).toBeInstanceOf(BadRequestError)
    expect((bad as BadRequestError).param).toBe('temperature')
    const long = await client(key)
      .chat.completions.create({
        model,
        messages: [{ role: 'user', content: 'x'.repeat(3 * 131_072) }],
      })
      .catch((e: unknown) => e)
    expect(long).toBeInstanceOf(BadRequestError)
    expect((long as BadRequestError).code).toBe('context_length_exceeded')
    const tooMany = await client(key)
      .chat.completions.create({ model, messages, max_tokens: 131_072 })
      .catch((e: unknown) => e)
    expect((tooMany as BadRequestError).code).toBe('context_length_exceeded')
    // Within the window, above the model's output cap.
    const overCap = await client(key)
      .chat.completions.create({ model, messages, max_tokens: 4097 })
      .catch((e: unknown) => e)
    expect(overCap).toBeInstanceOf(BadRequestError)
    expect((overCap as BadRequestError).param).toBe('max_tokens')
    expect(gateway.inference.modelStub?.calls.length).toBe(calls)
    expect(await creditOf(id)).toBe(10_000n)
  })

  it('the 121st request of a key in a minute gets 429 RateLimitError with Retry-After', async () => {
    const { key } = await newKey(0n)
    // Unknown-model requests count and cost nothing.
    for (let i = 0; i < 120; i++) {
      const response = await chat(key, { model: 'none', messages })
      expect(response.status).toBe(404)
      expect(response.headers.get('x-ratelimit-remaining-requests')).toBe(String(119 - i))
    }
    const error = await client(key)
      .chat.completions.create({ model, messages })
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(RateLimitError)
    expect((error as RateLimitError).code).toBe('rate_limit_exceeded')
    const headers = (error as RateLimitError).headers
    expect(Number(headers?.get('retry-after'))).toBeGreaterThan(0)
    expect(headers?.get('x-ratelimit-remaining-requests')).toBe('0')
    // Another key is not affected.
    const other = await newKey(0n)
    expect((await chat(other.key, { model: 'none', messages })).status).toBe(404)
  })
})

describe('credit', () => {
  it('50 parallel calls on a credit that covers 20 reservations: none overdraws, credit = paid − spent', async () => {
    const credit = 20n * reservation
    const { id, key } = await newKey(credit)
    const statuses = await Promise.all(
      Array.from({ length: 50 }, async () => (await chat(key, { model, messages })).status),
    )
    // At least the 20 reservations the credit covers are served (more when a settled call gave its
    // rest back in time); every other call was refused before the upstream.
    const served = statuses.filter((s) => s === 200).length
    expect(served).toBeGreaterThanOrEqual(20)
    expect(statuses.filter((s) => s !== 200).every((s) => s === 402)).toBe(true)
    const calls = (await gateway.inference.keys.ledger(id)).filter((e) => e.kind === 'call')
    expect(calls).toHaveLength(served)
    expect(calls.every((e) => e.state === 'served')).toBe(true)
    const spent = calls.reduce((sum, e) => sum + e.amount, 0n)
    expect(await creditOf(id)).toBe(credit - spent)
    expect(credit - spent).toBeGreaterThanOrEqual(0n)
  })

  it('an upstream failure releases the whole reservation exactly once (502, credit back)', async () => {
    const { id, key } = await newKey(10_000n)
    gateway.inference.modelStub?.failNext(501)
    const error = await client(key)
      .chat.completions.create({ model, messages })
      .catch((e: unknown) => e)
    expect((error as APIError).status).toBe(502)
    expect((error as APIError).code).toBe('upstream_failed')
    expect(await creditOf(id)).toBe(10_000n)
    const [entry] = (await gateway.inference.keys.ledger(id)).filter((e) => e.kind === 'call')
    expect(entry?.state).toBe('restored')
    // A second restore of the same call gives nothing more.
    expect(await gateway.inference.keys.restore(entry?.id as string)).toBe(false)
    expect(await creditOf(id)).toBe(10_000n)
  })

  it('a stream that breaks ends with a data: error event, and the reservation is released once', async () => {
    const { id, key } = await newKey(10_000n)
    gateway.inference.modelStub?.breakNextStream(2)
    const response = await chat(key, { model, messages, stream: true })
    expect(response.status).toBe(200)
    const text = await response.text()
    const events = text.split('\n\n').filter((e) => e !== '')
    const last = JSON.parse((events.at(-1) as string).slice('data: '.length))
    expect(last.error).toMatchObject({ code: 'upstream_failed', type: 'server_error' })
    expect(text).not.toContain('[DONE]')
    await until(async () => (await creditOf(id)) === 10_000n)
    // And the SDK raises it as an APIError.
    gateway.inference.modelStub?.breakNextStream(2)
    const stream = await client(key).chat.completions.create({ model, messages, stream: true })
    await expect(async () => {
      for await (const _ of stream) {
        // drain
      }
    }).rejects.toBeInstanceOf(APIError)
  })
})

describe('the keyless route and the paid top-ups', () => {
  function payingFetch(prefer: 'x402' | 'mpp', paid: Payment[]) {
    const emulator = gateway.emulator as StartedLedger
    return createPayingFetch({
      signer: emulator.createTestWallet({ usdc: '30', sui: '1' }),
      ledger: emulator.url,
      maxPrice: '25',
      prefer,
      limits: { file: join(mkdtempSync(join(gateway.dataDir, 'wallet-')), 'spending.json') },
      onPaid: (payment) => {
        paid.push(payment)
      },
    })
  }

  it('the openai SDK with the paying fetch streams a completion from /open/v1, paid per call', async () => {
    const paid: Payment[] = []
    const openai = new OpenAI({
      apiKey: 'not-needed-payment-is-the-credential',
      baseURL: `${gateway.url}/open/v1`,
      maxRetries: 0,
      fetch: payingFetch('x402', paid),
    })
    const models = await openai.models.list()
    expect(models.data.map((m) => m.id)).toEqual([model, 'confidential/llama-3.3-70b'])
    for (let call = 1; call <= 2; call++) {
      const stream = await openai.chat.completions.create({ model, messages, stream: true })
      let text = ''
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ''
      expect(text).toBe(stubReply('Say hello'))
      expect(paid).toHaveLength(call)
      expect(paid[call - 1]?.amount).toBe(50_000n)
    }
  })

  it('a keyless stream that breaks ends with a data: error event, and the payment is refunded once', async () => {
    const emulator = gateway.emulator as StartedLedger
    const ledger = new SuiGrpcClient({ network: 'mainnet', baseUrl: emulator.url })
    const payer = emulator.createTestWallet({ usdc: '1', sui: '1' })
    const usdc = async () =>
      BigInt(
        (
          await ledger.core.getBalance({
            owner: payer.toSuiAddress(),
            coinType: emulator.usdcType,
          })
        ).balance.balance,
      )
    const before = await usdc()
    const pay = createPayingFetch({
      signer: payer,
      ledger: emulator.url,
      maxPrice: '0.05',
      limits: { file: join(mkdtempSync(join(gateway.dataDir, 'wallet-')), 'spending.json') },
    })
    gateway.inference.modelStub?.breakNextStream(2)
    const response = await pay(`${gateway.url}/open/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages, stream: true }),
    })
    expect(response.status).toBe(200)
    // The error event arrives; then the stream fails (so the paywall refunds): read what came.
    let text = ''
    const reader = (response.body as ReadableStream<Uint8Array>).getReader()
    const decoder = new TextDecoder()
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        text += decoder.decode(value, { stream: true })
      }
    } catch {
      // aborted after the error event
    }
    expect(text).toContain('"upstream_failed"')
    expect(text).not.toContain('[DONE]')
    await until(async () => (await usdc()) === before)
    // Exactly once: it stays there.
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    expect(await usdc()).toBe(before)
  })

  it('keyless max_tokens is capped (400 before payment) and filled in when absent', async () => {
    const over = await fetch(`${gateway.url}/open/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages, max_tokens: 4097 }),
    })
    expect(over.status).toBe(400)
    expect(await over.text()).toContain('max_tokens')
    const unknown = await fetch(`${gateway.url}/open/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-4o', messages }),
    })
    expect(unknown.status).toBe(400)
  })

  it.each(['x402', 'mpp'] as const)(
    'POST /v1/credit/1 paid in %s tops up a key',
    async (prefer) => {
      const { id, key } = await newKey(0n)
      const paid: Payment[] = []
      const pay = payingFetch(prefer, paid)
      const response = await pay(`${gateway.url}/v1/credit/1`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ key_id: id }),
      })
      expect(response.status).toBe(200)
      expect(await response.json()).toEqual({
        key_id: id,
        credited: '1.000000',
        credit: '1.000000',
      })
      expect(paid.map((p) => p.dialect)).toEqual([prefer])
      expect(await creditOf(id)).toBe(1_000_000n)
      expect((await chat(key, { model, messages })).status).toBe(200)
    },
  )

  it('a top-up for an unknown key is refused before payment or refunded', async () => {
    const malformed = await fetch(`${gateway.url}/v1/credit/1`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ key_id: 'nope' }),
    })
    expect(malformed.status).toBe(400)
    const paid: Payment[] = []
    const response = await payingFetch('x402', paid)(`${gateway.url}/v1/credit/1`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ key_id: 'key_0000000000000000' }),
    })
    expect(response.status).toBe(404)
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe(
      'key_not_found',
    )
  })

  it('every answer carries x-request-id: model lists, 402s, errors', async () => {
    const answers = await Promise.all([
      fetch(`${gateway.url}/v1/models`),
      fetch(`${gateway.url}/open/v1/models`),
      fetch(`${gateway.url}/open/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model, messages }),
      }),
      fetch(`${gateway.url}/v1/credit/1`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ key_id: 'key_0123456789abcdef' }),
      }),
      chat('nope', { model, messages }),
    ])
    expect(answers.map((r) => r.status)).toEqual([200, 200, 402, 402, 401])
    for (const answer of answers)
      expect(answer.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
  })

  it('the OpenAPI document has the inference routes', async () => {
    const doc = (await (await fetch(`${gateway.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { 'x-payment-info'?: { price: string } }>>
      components: { securitySchemes: Record<string, unknown> }
    }
    expect(Object.keys(doc.paths['/v1/chat/completions'] ?? {})).toEqual(['post'])
    expect(Object.keys(doc.paths['/v1/models'] ?? {})).toEqual(['get'])
    for (const path of ['/v1/aci/attestation', '/v1/aci/receipts/{id}', '/v1/aci/sessions/{id}']) {
      expect(Object.keys(doc.paths[path] ?? {})).toEqual(['get'])
    }
    expect(Object.keys(doc.paths['/v1/aci/anchor/{id}'] ?? {})).toEqual(['get', 'post'])
    expect(doc.paths['/v1/credit/5']?.post?.['x-payment-info']?.price).toBe('5.000000')
    expect(doc.components.securitySchemes.apiKey).toMatchObject({ type: 'http', scheme: 'bearer' })
  })
})
