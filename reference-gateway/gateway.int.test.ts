/**
 * The gateway end to end, for EVERY catalog endpoint: unpaid → 402 with the spec price in both
 * dialects; an invalid body → 400 naming the field, nothing charged; paid → the exact upstream request
 * (URL, method, auth header, body mapping, asserted with nock) and the mapped JSON answer; upstream
 * 5xx or timeout → the payment refunded exactly once (the payer's balance is back). One ledger
 * emulator and one gateway (real HTTP, real Sui client) are shared by every test.
 */
import { join } from 'node:path'
import { SuiGrpcClient } from '@mysten/sui/grpc'
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { compileErrors, validate } from '@readme/openapi-parser'
import nock from 'nock'
import OpenAI from 'openai'
import { useTestLedger } from 'tollgate/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { registerAgent } from '../conformance/fixtures/agent.js'
import { startSeller } from '../conformance/fixtures/sellers.js'
import { createPayingFetch, type Payment, paymentOf } from '../src/client/index.js'
import { readOffers } from '../src/client/select.js'
import type { SellerEvent } from '../src/engine/sellerTypes.js'
import { parseAmount } from '../src/money.js'
import { x402PaymentHeader } from '../src/testing/payments.js'
import { parsePaymentRequired, x402Headers } from '../src/x402.js'
import {
  type CatalogEntry,
  examplePathOf,
  type PaidEndpoint,
  paidEntries,
  priceOf,
} from './catalog/catalog.js'
import { defaultCatalog } from './catalog/default.js'
import type { PaymentInfo } from './discovery/openapi.js'
import { type Expectation, moreExpectations } from './endpointRows/index.js'
import { useTestGateway } from './server/testHelpers.js'
import { nockVisibleFetch } from './upstreams/nockTransport.js'
import { capturedForm, publicResolver } from './upstreams/testHelpers.js'

const catalog = defaultCatalog()
const entries = paidEntries(catalog)
const keyOf = (credential: string) => `key-of-${credential.toLowerCase()}`
const providerKeys = Object.fromEntries(
  catalog.services.flatMap((s) =>
    s.upstream.credential === undefined
      ? []
      : [[s.upstream.credential, keyOf(s.upstream.credential)]],
  ),
)

const chain = useTestLedger({ beforeAll, afterAll })
const events: SellerEvent[] = []
/** Payers whose failed call was refunded, checked once more at the end (exactly once). */
const refundedPayers: { address: string; before: bigint }[] = []

beforeAll(() => {
  nock.disableNetConnect()
  nock.enableNetConnect((host) => host.startsWith('127.0.0.1'))
})

afterAll(() => {
  nock.cleanAll()
  nock.enableNetConnect()
})

// Started once the test ledger is up and nock is armed (above), and stopped before them.
const gateway = useTestGateway(() => ({
  config: {
    ledgerUrl: chain.url,
    operatorKey: chain.createTestWallet({ usdc: '50', sui: '10' }).getSecretKey(),
    challengeSecrets: 'a-test-secret-of-at-least-thirty-two-bytes',
    store: 'sqlite',
    upstreams: 'real',
    // Listing probes reach the sellers the marketplace test starts on 127.0.0.1.
    listingAllowPrivateNetwork: true,
    providerKeys,
    // The private inference API's one model, forwarded to an OpenAI-compatible upstream.
    inferenceModels: [
      {
        id: 'llama-3.3-70b',
        pricing: { prompt: '0.6', completion: '0.8' },
        contextWindow: 131_072,
        upstream: {
          kind: 'openai-compatible',
          baseUrl: 'https://inference.test/v1',
          credential: 'INFERENCE_API_KEY',
        },
      },
    ],
    upstreamTimeoutMs: 5_000,
    refundIntervalMs: 250,
  },
  resolveHost: publicResolver,
  // The real upstream transport, its connections made where nock sees them.
  fetch: nockVisibleFetch(),
  onEvent: (event) => events.push(event),
}))

function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(`${gateway.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })
}

const usdc = (address: string) => chain.usdcBalance(address)

async function paidCall(entry: CatalogEntry<PaidEndpoint>, payer: Ed25519Keypair, body: unknown) {
  const path = examplePathOf(entry.endpoint)
  const challenge = await post(path, body)
  expect(challenge.status).toBe(402)
  const requirement = parsePaymentRequired(await challenge.json()).accepts[0]
  if (!requirement) throw new Error('no x402 requirement')
  const header = await x402PaymentHeader(chain.client, payer, requirement)
  return post(path, body, { [x402Headers.payment]: header })
}

async function until(check: () => Promise<boolean>, ms = 10_000) {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out waiting')
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** A JSON body nock must see exactly (deep equality). */
const matches = (body: unknown) => body as nock.RequestBodyMatcher
const json = (value: unknown) => ({ 'content-type': 'application/json', ...(value as object) })
const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex')
const mp3 = Buffer.from('494433030000000000', 'hex')

function chatLike(origin: string, path: string, credential: string, model?: string): Expectation {
  const reply = { id: 'chatcmpl-1', object: 'chat.completion', choices: [{ index: 0 }] }
  return {
    mock: (body) => [
      nock(origin, { reqheaders: { authorization: `Bearer ${keyOf(credential)}` } })
        .post(path, matches(model === undefined ? body : { model, ...body }))
        .reply(200, reply),
    ],
    answer: (out) => expect(out).toEqual(reply),
    fail: (status) => nock(origin).post(path).reply(status, { error: 'down' }),
  }
}

function transcriptionLike(origin: string, path: string, credential: string, model: string) {
  return {
    mock: () => [
      nock('https://example.com')
        .get('/audio/hello.mp3')
        .reply(200, mp3, json({ 'content-type': 'audio/mpeg' })),
      nock(origin, { reqheaders: { authorization: `Bearer ${keyOf(credential)}` } })
        .post(path, () => true)
        .reply(async function (_uri, body) {
          const form = await capturedForm(body, String(this.req.headers['content-type']))
          const file = form.get('file') as File
          const ok =
            form.get('model') === model &&
            form.get('language') === 'en' &&
            form.get('response_format') === 'json' &&
            Buffer.from(await file.arrayBuffer()).equals(mp3)
          return ok ? [200, { text: 'hello' }] : [418, { wrong: 'multipart' }]
        }),
    ],
    answer: (out: Record<string, unknown>) => expect(out).toEqual({ text: 'hello' }),
    fail: (status: number) => {
      nock('https://example.com')
        .get('/audio/hello.mp3')
        .reply(200, mp3, json({ 'content-type': 'audio/mpeg' }))
      return nock(origin).post(path).reply(status, {})
    },
  } satisfies Expectation
}

async function blob(url: unknown): Promise<Buffer> {
  expect(String(url).startsWith(`${gateway.publicBaseUrl}/blobs/`)).toBe(true)
  const response = await fetch(String(url))
  expect(response.status).toBe(200)
  return Buffer.from(await response.arrayBuffer())
}

function falImage(model: string): Expectation {
  return {
    mock: (body) => [
      nock('https://fal.run', { reqheaders: { authorization: `Key ${keyOf('FAL_KEY')}` } })
        .post(`/${model}`, matches(body))
        .reply(200, {
          images: [{ url: 'https://v3.fal.media/files/a.png', width: 8, height: 8 }],
          seed: 7,
        }),
      nock('https://v3.fal.media')
        .get('/files/a.png')
        .reply(200, png, { 'content-type': 'image/png' }),
    ],
    async answer(out) {
      const images = out.images as { url: string; width: number }[]
      expect(images).toHaveLength(1)
      expect(images[0]?.width).toBe(8)
      expect(await blob(images[0]?.url)).toEqual(png)
      expect(out.seed).toBe(7)
    },
    fail: (status) => nock('https://fal.run').post(`/${model}`).reply(status, {}),
  }
}

function brave(kind: string): Expectation {
  const origin = 'https://api.search.brave.com'
  const headers = { reqheaders: { 'x-subscription-token': keyOf('BRAVE_API_KEY') } }
  if (kind === 'summarizer') {
    return {
      mock: (body) => [
        nock(origin, headers)
          .get('/res/v1/web/search')
          .query({ q: String(body.q), summary: '1' })
          .reply(200, { summarizer: { key: 'sum-1' } }),
        nock(origin, headers)
          .get('/res/v1/summarizer/search')
          .query({ key: 'sum-1', entity_info: '1' })
          .reply(200, { type: 'summarizer', summary: [{ data: 'A summary' }] }),
      ],
      answer: (out) =>
        expect(out).toEqual({ type: 'summarizer', summary: [{ data: 'A summary' }] }),
      fail: (status) => nock(origin).get('/res/v1/web/search').query(true).reply(status, {}),
    }
  }
  return {
    mock: (body) => [
      nock(origin, headers)
        .get(`/res/v1/${kind}/search`)
        .query({ q: String(body.q) })
        .reply(200, { type: 'search', results: [kind] }),
    ],
    answer: (out) => expect(out).toEqual({ type: 'search', results: [kind] }),
    fail: (status) => nock(origin).get(`/res/v1/${kind}/search`).query(true).reply(status, {}),
  }
}

function firecrawl(op: 'scrape' | 'map' | 'crawl' | 'extract'): Expectation {
  const origin = 'https://api.firecrawl.dev'
  const headers = { reqheaders: { authorization: `Bearer ${keyOf('FIRECRAWL_API_KEY')}` } }
  const requestBody = (body: Record<string, unknown>) =>
    op === 'scrape'
      ? { url: body.url, formats: ['markdown'] }
      : op === 'map'
        ? { url: body.url }
        : op === 'crawl'
          ? { url: body.url, limit: 10, scrapeOptions: { formats: ['markdown'] } }
          : { urls: [body.url], schema: body.schema }
  const done = { status: 'completed', data: [{ markdown: '# Example' }] }
  return {
    mock: (body) =>
      op === 'scrape' || op === 'map'
        ? [
            nock(origin, headers)
              .post(`/v1/${op}`, matches(requestBody(body)))
              .reply(200, { success: true, op }),
          ]
        : [
            nock(origin, headers)
              .post(`/v1/${op}`, matches(requestBody(body)))
              .reply(200, { success: true, id: 'job-1' }),
            nock(origin, headers).get(`/v1/${op}/job-1`).reply(200, done),
          ],
    answer: (out) =>
      expect(out).toEqual(op === 'scrape' || op === 'map' ? { success: true, op } : done),
    fail: (status) => nock(origin).post(`/v1/${op}`).reply(status, {}),
  }
}

function gemini(model: string, method: 'generateContent' | 'embedContent'): Expectation {
  const origin = 'https://generativelanguage.googleapis.com'
  const path = `/v1beta/models/${model}:${method}`
  const reply =
    method === 'embedContent' ? { embedding: { values: [0.5] } } : { candidates: [{ index: 0 }] }
  return {
    mock: (body) => [
      nock(origin, { reqheaders: { 'x-goog-api-key': keyOf('GEMINI_API_KEY') } })
        .post(
          path,
          matches(
            method === 'embedContent'
              ? { model: `models/${model}`, content: body.content }
              : { contents: body.contents },
          ),
        )
        .reply(200, reply),
    ],
    answer: (out) => expect(out).toEqual(reply),
    fail: (status) => nock(origin).post(path).reply(status, {}),
  }
}

const expectations: Record<string, Expectation> = {
  '/openai/v1/chat/completions': chatLike(
    'https://api.openai.com',
    '/v1/chat/completions',
    'OPENAI_API_KEY',
    'gpt-4o-mini',
  ),
  '/openai/v1/embeddings': {
    mock: (body) => [
      nock('https://api.openai.com', {
        reqheaders: { authorization: `Bearer ${keyOf('OPENAI_API_KEY')}` },
      })
        .post('/v1/embeddings', { model: 'text-embedding-3-small', ...body })
        .reply(200, { object: 'list', data: [{ embedding: [0.1] }] }),
    ],
    answer: (out) => expect(out).toEqual({ object: 'list', data: [{ embedding: [0.1] }] }),
    fail: (status) => nock('https://api.openai.com').post('/v1/embeddings').reply(status, {}),
  },
  '/openai/v1/images/generations': {
    mock: (body) => [
      nock('https://api.openai.com', {
        reqheaders: { authorization: `Bearer ${keyOf('OPENAI_API_KEY')}` },
      })
        .post('/v1/images/generations', { model: 'dall-e-3', ...body, response_format: 'b64_json' })
        .reply(200, {
          created: 1,
          data: [{ b64_json: png.toString('base64'), revised_prompt: 'r' }],
        }),
    ],
    async answer(out) {
      const data = out.data as { url: string; revised_prompt: string }[]
      expect(data[0]?.revised_prompt).toBe('r')
      expect(await blob(data[0]?.url)).toEqual(png)
    },
    fail: (status) =>
      nock('https://api.openai.com').post('/v1/images/generations').reply(status, {}),
  },
  '/openai/v1/audio/transcriptions': transcriptionLike(
    'https://api.openai.com',
    '/v1/audio/transcriptions',
    'OPENAI_API_KEY',
    'whisper-1',
  ),
  '/openai/v1/audio/speech': {
    mock: (body) => [
      nock('https://api.openai.com', {
        reqheaders: { authorization: `Bearer ${keyOf('OPENAI_API_KEY')}` },
      })
        .post('/v1/audio/speech', { model: 'tts-1', ...body, response_format: 'mp3' })
        .reply(200, mp3, { 'content-type': 'audio/mpeg' }),
    ],
    async answer(out) {
      expect(out.content_type).toBe('audio/mpeg')
      expect(await blob(out.url)).toEqual(mp3)
    },
    fail: (status) => nock('https://api.openai.com').post('/v1/audio/speech').reply(status, {}),
  },
  '/anthropic/v1/messages': {
    mock: (body) => [
      nock('https://api.anthropic.com', {
        reqheaders: { 'x-api-key': keyOf('ANTHROPIC_API_KEY'), 'anthropic-version': '2023-06-01' },
        badheaders: ['authorization'],
      })
        .post('/v1/messages', matches(body))
        .reply(200, { id: 'msg_1', type: 'message' }),
    ],
    answer: (out) => expect(out).toEqual({ id: 'msg_1', type: 'message' }),
    fail: (status) => nock('https://api.anthropic.com').post('/v1/messages').reply(status, {}),
  },
  // Served by the private inference API: the body as it validates it (defaults filled in).
  '/open/v1/chat/completions': (() => {
    const like = chatLike('https://inference.test', '/v1/chat/completions', 'INFERENCE_API_KEY')
    return {
      ...like,
      mock: (body) => like.mock({ ...body, stream: false, temperature: 1 }),
    } satisfies Expectation
  })(),
  '/fal/fal-ai/flux/dev': falImage('fal-ai/flux/dev'),
  '/fal/fal-ai/flux-pro': falImage('fal-ai/flux-pro'),
  '/fal/fal-ai/flux-realism': falImage('fal-ai/flux-realism'),
  '/fal/fal-ai/recraft-20b': falImage('fal-ai/recraft-20b'),
  '/fal/fal-ai/whisper': {
    mock: (body) => [
      nock('https://fal.run', { reqheaders: { authorization: `Key ${keyOf('FAL_KEY')}` } })
        .post('/fal-ai/whisper', matches({ audio_url: body.audio_url, task: 'transcribe' }))
        .reply(200, { text: 'hello', chunks: [] }),
    ],
    answer: (out) => expect(out).toEqual({ text: 'hello', chunks: [] }),
    fail: (status) => nock('https://fal.run').post('/fal-ai/whisper').reply(status, {}),
  },
  '/fal/fal-ai/stable-audio-25/text-to-audio': {
    mock: (body) => [
      nock('https://fal.run', { reqheaders: { authorization: `Key ${keyOf('FAL_KEY')}` } })
        .post('/fal-ai/stable-audio-25/text-to-audio', matches(body))
        .reply(200, { audio: { url: 'https://v3.fal.media/files/m.mp3' } }),
      nock('https://v3.fal.media')
        .get('/files/m.mp3')
        .reply(200, mp3, { 'content-type': 'audio/mpeg' }),
    ],
    async answer(out) {
      const audio = out.audio as { url: string; content_type: string }
      expect(audio.content_type).toBe('audio/mpeg')
      expect(await blob(audio.url)).toEqual(mp3)
    },
    fail: (status) =>
      nock('https://fal.run').post('/fal-ai/stable-audio-25/text-to-audio').reply(status, {}),
  },
  '/firecrawl/v1/scrape': firecrawl('scrape'),
  '/firecrawl/v1/crawl': firecrawl('crawl'),
  '/firecrawl/v1/map': firecrawl('map'),
  '/firecrawl/v1/extract': firecrawl('extract'),
  '/gemini/v1beta/models/gemini-2.5-flash': gemini('gemini-2.5-flash', 'generateContent'),
  '/gemini/v1beta/models/gemini-2.5-pro': gemini('gemini-2.5-pro', 'generateContent'),
  '/gemini/v1beta/models/gemini-embedding-001': gemini('gemini-embedding-001', 'embedContent'),
  '/groq/v1/chat/completions': chatLike(
    'https://api.groq.com',
    '/openai/v1/chat/completions',
    'GROQ_API_KEY',
    'llama-3.3-70b-versatile',
  ),
  '/groq/v1/audio/transcriptions': transcriptionLike(
    'https://api.groq.com',
    '/openai/v1/audio/transcriptions',
    'GROQ_API_KEY',
    'whisper-large-v3-turbo',
  ),
  '/perplexity/v1/chat/completions': chatLike(
    'https://api.perplexity.ai',
    '/chat/completions',
    'PERPLEXITY_API_KEY',
    'sonar',
  ),
  '/brave/v1/web/search': brave('web'),
  '/brave/v1/images/search': brave('images'),
  '/brave/v1/news/search': brave('news'),
  '/brave/v1/videos/search': brave('videos'),
  '/brave/v1/summarizer/search': brave('summarizer'),
  '/deepseek/v1/chat/completions': chatLike(
    'https://api.deepseek.com',
    '/chat/completions',
    'DEEPSEEK_API_KEY',
    'deepseek-chat',
  ),
  '/resend/v1/emails': {
    mock: (body) => [
      nock('https://api.resend.com', {
        reqheaders: {
          authorization: `Bearer ${keyOf('RESEND_API_KEY')}`,
          'idempotency-key': /^\w{32,}$/,
        },
      })
        .post('/emails', matches(body))
        .reply(200, { id: 'email-1' }),
    ],
    answer: (out) => expect(out).toEqual({ id: 'email-1' }),
    fail: (status) => nock('https://api.resend.com').post('/emails').reply(status, {}),
  },
}

Object.assign(expectations, moreExpectations({ keyOf, blob }))

/** A body that breaks the shape, and the field the 400 must name. */
function invalidBody(entry: CatalogEntry<PaidEndpoint>): { body: unknown; field: string } {
  const override = expectations[entry.endpoint.path]?.invalid
  if (override) return override
  const example = entry.endpoint.shape.example as Record<string, unknown>
  const [first] = Object.keys(example)
  // A shape with no fields (EMPTY) refuses anything but a JSON object.
  if (first === undefined) return { body: [], field: 'body' }
  const { [first]: _dropped, ...rest } = example
  return { body: rest, field: first }
}

it('covers every paid endpoint of the catalog', () => {
  expect(Object.keys(expectations).sort()).toEqual(entries.map((e) => e.endpoint.path).sort())
  expect(entries).toHaveLength(89)
})

describe.each(entries.map((entry) => [entry.endpoint.path, entry] as const))(
  'POST %s',
  (template, entry) => {
    const expectation = expectations[template] as Expectation
    const path = examplePathOf(entry.endpoint)
    const example = entry.endpoint.shape.example as Record<string, unknown>

    it('unpaid: 402 with the spec price in both dialects', async () => {
      const response = await post(path, example)
      expect(response.status).toBe(402)
      const { offers } = readOffers({
        bodyText: await response.text(),
        wwwAuthenticate: response.headers.get('www-authenticate'),
      })
      expect(offers.map((o) => o.dialect).sort()).toEqual(['mpp', 'x402'])
      for (const offer of offers) {
        expect(offer.amount).toBe(priceOf(entry.endpoint))
        expect(offer.payTo).toBe(gateway.payTo)
      }
    })

    it('invalid body: 400 naming the field, nothing charged', async () => {
      const payer = chain.createTestWallet({ usdc: '5', sui: '1' })
      const before = await usdc(payer.toSuiAddress())
      const { body, field } = invalidBody(entry)
      // Even with a payment attached, the body is refused before anything is settled.
      const requirement = parsePaymentRequired(await (await post(path, example)).json()).accepts[0]
      const header = await x402PaymentHeader(chain.client, payer, requirement as never)
      const response = await post(path, body, { [x402Headers.payment]: header })
      expect(response.status).toBe(400)
      expect(JSON.stringify(await response.json())).toContain(field)
      expect(await usdc(payer.toSuiAddress())).toBe(before)
    })

    it('paid: the exact upstream request, and the mapped answer', async () => {
      const scopes = expectation.mock(example)
      const payer = chain.createTestWallet({ usdc: '5', sui: '1' })
      const before = await usdc(payer.toSuiAddress())
      const response = await paidCall(entry, payer, example)
      const out = (await response.json()) as Record<string, unknown>
      expect(response.status, JSON.stringify(out)).toBe(200)
      expect(response.headers.get(x402Headers.paymentResponse)).toBeTruthy()
      await expectation.answer(out, example)
      for (const scope of scopes) scope.done()
      expect(await usdc(payer.toSuiAddress())).toBe(before - priceOf(entry.endpoint))
    })

    it('upstream 5xx: the payment is refunded exactly once', async () => {
      // 501 is not retried, so exactly one upstream request is made.
      const scope = expectation.fail(501, example)
      const payer = chain.createTestWallet({ usdc: '5', sui: '1' })
      const before = await usdc(payer.toSuiAddress())
      const response = await paidCall(entry, payer, example)
      expect(response.status).toBe(502)
      const out = (await response.json()) as { error: { code: string; message: string } }
      expect(out.error.code).toBe('upstream_failed')
      expect(JSON.stringify(out)).not.toContain('key-of-')
      scope.done()
      // The refund is awaited for every row at once, below.
      refundedPayers.push({ address: payer.toSuiAddress(), before })
    })
  },
)

describe('refunds are paid exactly once', () => {
  it('every refunded payer got exactly one refund, and still has exactly its balance back', async () => {
    expect(refundedPayers).toHaveLength(entries.length)
    await until(async () => {
      const balances = await Promise.all(refundedPayers.map((p) => usdc(p.address)))
      return balances.every((balance, i) => balance === refundedPayers[i]?.before)
    }, 30_000)
    // Give a second refund every chance to happen (several worker runs); it must not.
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    for (const { address, before } of refundedPayers) {
      expect(await usdc(address)).toBe(before)
      expect(events.filter((e) => e.type === 'refunded' && e.payer === address)).toHaveLength(1)
    }
  })
})

describe('upstream failures beyond one 5xx', () => {
  it('a 503 is retried within the budget, then refunded', async () => {
    const entry = entries.find(
      (e) => e.endpoint.path === '/anthropic/v1/messages',
    ) as CatalogEntry<PaidEndpoint>
    const scope = nock('https://api.anthropic.com').post('/v1/messages').times(3).reply(503, {})
    const payer = chain.createTestWallet({ usdc: '1', sui: '1' })
    const before = await usdc(payer.toSuiAddress())
    const response = await paidCall(entry, payer, entry.endpoint.shape.example)
    expect(response.status).toBe(504)
    scope.done()
    await until(async () => (await usdc(payer.toSuiAddress())) === before)
  })

  it('a timeout is refunded', async () => {
    const entry = entries.find(
      (e) => e.endpoint.path === '/resend/v1/emails',
    ) as CatalogEntry<PaidEndpoint>
    nock('https://api.resend.com').post('/emails').times(3).delay(6_000).reply(200, { id: 'late' })
    const payer = chain.createTestWallet({ usdc: '1', sui: '1' })
    const before = await usdc(payer.toSuiAddress())
    const started = Date.now()
    const response = await paidCall(entry, payer, entry.endpoint.shape.example)
    expect(response.status).toBeGreaterThanOrEqual(502)
    expect(Date.now() - started).toBeLessThan(9_000)
    await until(async () => (await usdc(payer.toSuiAddress())) === before)
    nock.abortPendingRequests()
  })
})

describe('limits and free routes', () => {
  it('a body over the size limit is 413, before any payment', async () => {
    const response = await post('/openai/v1/chat/completions', {
      messages: [{ role: 'user', content: 'x'.repeat(1024 * 1024 + 10) }],
    })
    expect(response.status).toBe(413)
  })

  it('an empty body is 400', async () => {
    const response = await post('/openai/v1/embeddings', '')
    expect(response.status).toBe(400)
  })

  it('GET /open/v1/models is free and answered by the private inference API', async () => {
    const response = await fetch(`${gateway.url}/open/v1/models`)
    expect(response.status).toBe(200)
    const list = (await response.json()) as { object: string; data: { id: string }[] }
    expect(list.object).toBe('list')
    expect(list.data.map((m) => m.id)).toEqual(['llama-3.3-70b'])
  })

  it('healthz, readyz and metrics', async () => {
    const health = (await (await fetch(`${gateway.url}/healthz`)).json()) as Record<string, unknown>
    expect(health.ledger).toEqual({ url: chain.url, network: 'sui:mainnet', emulated: false })
    expect(health.store).toBe('sqlite')
    const ready = await fetch(`${gateway.url}/readyz`)
    expect(ready.status).toBe(200)
    const metrics = await (await fetch(`${gateway.url}/metrics`)).text()
    expect(metrics).toMatch(
      /gateway_http_requests_total\{route="\/openai\/v1\/chat\/completions",method="POST",status="402"\} \d+/,
    )
    expect(metrics).toMatch(/gateway_payments_settled_total\{dialect="x402"\} \d+/)
    expect(metrics).toContain('gateway_settlement_duration_seconds_bucket')
    expect(metrics).not.toContain('key-of-')
  })

  it('echoes a request id, or makes one', async () => {
    const given = await fetch(`${gateway.url}/healthz`, { headers: { 'x-request-id': 'abc-123' } })
    expect(given.headers.get('x-request-id')).toBe('abc-123')
    const made = await fetch(`${gateway.url}/healthz`)
    expect(made.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
  })

  it('unknown routes and other spellings of a paid route are 404, never served unpaid', async () => {
    for (const path of ['/openai/v1/chat/completions/', '/OPENAI/v1/chat/completions', '/nope']) {
      const response = await post(path, {})
      expect(response.status, path).toBe(404)
    }
  })
})

type OpenApiPost = { requestBody: { content: { 'application/json': { example: unknown } } } }

describe('discovery matches the live 402s', () => {
  it('/openapi.json passes the OpenAPI 3.1 validator, and every x-payment-info matches the live 402', async () => {
    const doc = (await (await fetch(`${gateway.url}/openapi.json`)).json()) as {
      openapi: string
      info: { version: string }
      paths: Record<string, Record<string, { 'x-payment-info'?: PaymentInfo }>>
    }
    expect(doc.openapi).toBe('3.1.0')
    expect(doc.info.version).toBe('1.0.0')
    const result = await validate(structuredClone(doc) as never)
    if (!result.valid) throw new Error(compileErrors(result))
    let checked = 0
    for (const [path, item] of Object.entries(doc.paths)) {
      const info = item.post?.['x-payment-info']
      if (info === undefined) continue
      // Catalog routes, and the routes served beside it (the inference API's credit top-ups).
      const entry = entries.find((e) => e.endpoint.path === path)
      const live =
        entry?.endpoint.kind === 'paid'
          ? await post(examplePathOf(entry.endpoint), entry.endpoint.shape.example)
          : await post(
              path,
              (item.post as unknown as OpenApiPost).requestBody.content['application/json'].example,
            )
      expect(live.status).toBe(402)
      const { offers } = readOffers({
        bodyText: await live.text(),
        wwwAuthenticate: live.headers.get('www-authenticate'),
      })
      expect(offers).toHaveLength(2)
      expect(info.protocols).toEqual(['mpp', 'x402'])
      for (const offer of offers) {
        expect(offer.amount, path).toBe(parseAmount(info.price))
        expect(offer.payTo).toBe(info.x402.payTo)
        expect(offer.asset).toBe(info.x402.asset)
        expect(offer.network).toBe(info.x402.network)
        expect(offer.scheme).toBe(info.x402.scheme)
      }
      checked++
    }
    // Every catalog route, and the three default credit top-ups.
    expect(checked).toBe(entries.length + 3)
  })
})

describe('the marketplace routes', () => {
  it('serves the signed-mutation routes and documents them in /openapi.json', async () => {
    const address = chain.createTestWallet({ usdc: '0' }).toSuiAddress()
    const body = { op: 'delist', listingId: `lst_${'0'.repeat(24)}` }
    const prepared = await fetch(`${gateway.url}/v1/agent/endpoint/prepare`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ address, action: 'service', body }),
    })
    expect(prepared.status).toBe(201)
    const { message, nonce } = (await prepared.json()) as { message: string; nonce: string }
    expect(message.startsWith(`Tollgate catalog mutation v1\nnonce: ${nonce}\n`)).toBe(true)
    const unsigned = await fetch(`${gateway.url}/v1/agent/service`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ address, nonce, signature: 'AAAA', body }),
    })
    expect(unsigned.status).toBe(401)
    expect(await unsigned.json()).toMatchObject({ code: 'mutation_refused' })
    const doc = (await (await fetch(`${gateway.url}/openapi.json`)).json()) as {
      paths: Record<string, unknown>
    }
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/v1/agent/endpoint/prepare',
        '/v1/agent/endpoint/submit',
        '/v1/agent/service',
        '/v1/agent/{address}',
        '/v1/services',
        '/discovery/resources',
        '/discovery/search',
        '/v1/reviews',
        '/v1/activity',
        '/api/mpp/report',
      ]),
    )
  })

  it('lists a seller submitted through the gateway (agent registered, prepare, sign, submit)', async () => {
    const agent = chain.createTestWallet({ usdc: '0' })
    await registerAgent(chain.client, agent, chain.modulesPackage)
    const running = await startSeller({
      ledgerUrl: chain.url,
      wallet: agent.toSuiAddress(),
      stranger: chain.createTestWallet({ usdc: '0' }).toSuiAddress(),
    })
    try {
      const address = agent.toSuiAddress()
      const body = { url: running.url, name: 'Answer' }
      const send = (path: string, payload: unknown) =>
        fetch(`${gateway.url}/v1/agent/${path}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(payload),
        })
      const prepared = (await (
        await send('endpoint/prepare', { address, action: 'submit', body })
      ).json()) as {
        nonce: string
        message: string
      }
      const { signature } = await agent.signPersonalMessage(
        new TextEncoder().encode(prepared.message),
      )
      const submitted = await send('endpoint/submit', {
        address,
        nonce: prepared.nonce,
        signature,
        body,
      })
      const listing = (await submitted.json()) as Record<string, unknown>
      expect(submitted.status, JSON.stringify(listing)).toBe(201)
      expect(listing).toMatchObject({ seller: address, state: 'listed', price: '20000' })
      const services = (await (
        await fetch(`${gateway.url}/v1/services?seller=${address}`)
      ).json()) as { items: { source: string; url: string }[]; total: number }
      expect(services).toMatchObject({ total: 1, items: [{ source: 'seller', url: running.url }] })
      const all = (await (await fetch(`${gateway.url}/v1/services?limit=100`)).json()) as {
        items: { source: string }[]
      }
      expect(all.items.some((i) => i.source === 'gateway')).toBe(true)
      expect(all.items.some((i) => i.source === 'seller')).toBe(true)
      // Discovery agents find it too: Bazaar resources, the x402 manifest and llms.txt.
      const resources = (await (
        await fetch(`${gateway.url}/discovery/resources?payTo=${address}`)
      ).json()) as { items: { resource: string }[] }
      expect(resources.items.map((i) => i.resource)).toEqual([running.url])
      const manifest = (await (await fetch(`${gateway.url}/.well-known/x402.json`)).json()) as {
        resources: { resource: string }[]
      }
      expect(manifest.resources.some((r) => r.resource === running.url)).toBe(true)
      expect(await (await fetch(`${gateway.url}/llms.txt`)).text()).toContain(running.url)
    } finally {
      await running.close()
    }
  })

  it('shows the paid calls settled through the gateway in the activity feed', async () => {
    const feed = (await (await fetch(`${gateway.url}/v1/activity?limit=100`)).json()) as {
      items: { source: string; seller: string; amount: string }[]
      total: number
    }
    expect(feed.total).toBeGreaterThan(0)
    expect(feed.items[0]).toMatchObject({ source: 'gateway', seller: gateway.payTo })
    expect(BigInt(feed.items[0]?.amount ?? '0')).toBeGreaterThan(0n)
  })

  it('answers the removed "offering" routes with a 404 naming the "service" route', async () => {
    for (const [removed, replacedBy] of [
      ['/v1/agent/offering', '/v1/agent/service'],
      ['/v1/agent/offerings', '/v1/agent/service'],
      ['/v1/offerings', '/v1/services'],
    ]) {
      const response = await fetch(`${gateway.url}${removed}`, { method: 'POST', body: '{}' })
      expect(response.status).toBe(404)
      expect(await response.json()).toEqual({
        error: expect.objectContaining({ code: 'route_renamed', replacedBy }),
      })
    }
  })
})

describe('streaming chat', () => {
  const sse = [
    'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}]}\n\n',
    'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":", world"},"finish_reason":"stop"}]}\n\n',
    'data: [DONE]\n\n',
  ].join('')
  const streamUpstream = () =>
    nock('https://api.openai.com', {
      reqheaders: { authorization: `Bearer ${keyOf('OPENAI_API_KEY')}` },
    })
      .post('/v1/chat/completions', (body: { stream?: boolean }) => body.stream === true)
      .reply(200, sse, { 'content-type': 'text/event-stream' })

  it('passes the upstream SSE through byte for byte after settlement', async () => {
    const scope = streamUpstream()
    const entry = entries.find(
      (e) => e.endpoint.path === '/openai/v1/chat/completions',
    ) as CatalogEntry<PaidEndpoint>
    const payer = chain.createTestWallet({ usdc: '1', sui: '1' })
    const response = await paidCall(entry, payer, {
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/)
    expect(response.headers.get(x402Headers.paymentResponse)).toBeTruthy()
    expect(await response.text()).toBe(sse)
    scope.done()
  })

  it('the official openai SDK with the paying fetch streams a chat completion', async () => {
    const scope = streamUpstream()
    const payer = chain.createTestWallet({ usdc: '1', sui: '1' })
    const paid: Payment[] = []
    const openai = new OpenAI({
      apiKey: 'not-needed-payment-is-the-credential',
      baseURL: `${gateway.url}/openai/v1`,
      maxRetries: 0,
      fetch: createPayingFetch({
        signer: payer,
        ledger: chain.url,
        maxPrice: '0.05',
        limits: { file: join(gateway.dataDir, 'spending.json') },
        onPaid: (payment) => {
          paid.push(payment)
        },
      }),
    })
    const stream = await openai.chat.completions.create({
      model: 'gpt-4o-mini',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    })
    let text = ''
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ''
    expect(text).toBe('Hello, world')
    expect(paid).toHaveLength(1)
    expect(paid[0]?.amount).toBe(20_000n)
    scope.done()
  })
})

describe('the main job on embedded defaults (no configuration)', () => {
  const embedded = useTestGateway()

  it('runs on SQLite, the local emulator and the stub upstreams, and says so', async () => {
    const health = (await (await fetch(`${embedded.url}/healthz`)).json()) as Record<
      string,
      unknown
    >
    expect(health.ledger).toEqual({
      url: embedded.emulator?.url,
      network: 'sui:mainnet',
      emulated: true,
      local: {
        mode: 'started',
        note: `the embedded local ledger listens on ${embedded.emulator?.url}`,
      },
    })
    expect(health).toMatchObject({ store: 'sqlite', upstreams: 'stub' })
  })

  it('a buyer who hangs up while its paid call waits on the upstream is served (the upstream was asked) once it answers; nothing stays in flight', async () => {
    const emulator = embedded.emulator
    const stubs = embedded.stubs as NonNullable<typeof embedded.stubs>
    const payer = emulator.createTestWallet({ usdc: '1', sui: '1' })
    const ledger = new SuiGrpcClient({ network: 'mainnet', baseUrl: emulator.url })
    const balance = async () =>
      BigInt(
        (await ledger.core.getBalance({ owner: payer.toSuiAddress(), coinType: emulator.usdcType }))
          .balance.balance,
      )
    const start = await balance()
    const pay = createPayingFetch({
      signer: payer,
      ledger: emulator.url,
      maxPrice: '0.05',
      limits: { file: join(embedded.dataDir, 'spending-hangup.json') },
    })
    const held = stubs.holdNext('/anthropic/')
    const callsBefore = stubs.calls.length
    const hangUp = new AbortController()
    const call = pay(`${embedded.url}/anthropic/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'claude-sonnet-4-5',
        max_tokens: 16,
        messages: [{ role: 'user', content: 'hi' }],
      }),
      signal: hangUp.signal,
    })
    await held.arrived
    hangUp.abort()
    await expect(call).rejects.toThrow()
    // Served (the provider was asked), recorded once the handler is done: in flight, its serve
    // lease held, until the upstream answers.
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(embedded.gateway.paidInFlight()).toBe(1)
    held.release()
    await until(async () => embedded.gateway.paidInFlight() === 0, 5_000)
    await until(async () => stubs.calls.length > callsBefore)
    expect(stubs.calls.slice(callsBefore)).toMatchObject([
      { provider: 'anthropic', answered: true },
    ])
    await embedded.gateway.paywall.seller.refunder.runOnce()
    expect(await embedded.gateway.paywall.seller.refunder.owed()).toEqual([])
    const paid = await balance()
    expect(paid).toBeLessThan(start)
    expect(start - paid).toBeLessThanOrEqual(50_000n)
  })

  it('a paid call is answered by the stub upstream; shutdown finishes an in-flight paid call', async () => {
    const emulator = embedded.emulator
    const payer = emulator.createTestWallet({ usdc: '1', sui: '1' })
    const pay = createPayingFetch({
      signer: payer,
      ledger: emulator.url,
      maxPrice: '0.05',
      limits: { file: join(embedded.dataDir, 'spending.json') },
    })
    embedded.stubs?.delayNext('/anthropic/', 800)
    const call = pay(`${embedded.url}/anthropic/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'claude-sonnet-4-5',
        max_tokens: 16,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    })
    // Stop while the paid call waits on its upstream: it still completes, paid and served.
    await until(async () => embedded.gateway.paidInFlight() > 0)
    const stopped = embedded.stop()
    const response = await call
    expect(response.status).toBe(200)
    expect(((await response.json()) as { type: string }).type).toBe('message')
    expect(paymentOf(response)?.digest).toBeTruthy()
    await stopped
    await expect(fetch(`${embedded.url}/healthz`)).rejects.toThrow()
  })
})
