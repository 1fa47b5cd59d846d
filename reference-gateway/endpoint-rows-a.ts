/**
 * Rows of the endpoint suite for Resend batches through NewsAPI: the exact upstream request(s) nock
 * expects (URL, method, where the key goes, body or query mapping), the answer, what the buyer gets.
 * Test support only.
 *
 * @module
 */
import { expect } from 'vitest'
import {
  b64,
  type Expectation,
  mp3,
  png,
  type RowContext,
  rowKit,
  rows,
} from './endpoint-rows-kit.js'

/** The rows, by gateway path. */
export function rowsResendToNews(context: RowContext): Record<string, Expectation> {
  const { bearer, post, get, file, chat, key, together, blob } = rowKit(context)
  return {
    '/resend/v1/emails/batch': post(
      'https://api.resend.com',
      '/emails/batch',
      { ...bearer('RESEND_API_KEY'), 'idempotency-key': /^\w{32,}$/ },
      (b) => b.emails,
      { data: [{ id: 'e1' }, { id: 'e2' }] },
    ),
    '/together/v1/chat/completions': chat(
      together,
      '/v1/chat/completions',
      'TOGETHER_API_KEY',
      'meta-llama/Llama-3.3-70B-Instruct-Turbo',
    ),
    '/together/v1/images/generations': rows(
      (b) => [
        {
          origin: together,
          method: 'POST',
          path: '/v1/images/generations',
          headers: bearer('TOGETHER_API_KEY'),
          body: { model: 'black-forest-labs/FLUX.1-schnell', n: 1, ...b },
          reply: [200, { created: 5, data: [{ url: 'https://api.together.ai/shrt/x.png' }] }],
        },
        {
          origin: 'https://api.together.ai',
          method: 'GET',
          path: '/shrt/x.png',
          absent: ['authorization'],
          reply: [200, png, { 'content-type': 'image/png' }],
        },
      ],
      async (out) => {
        const data = out.data as { url: string }[]
        expect(out.created).toBe(5)
        expect(await blob(data[0]?.url)).toEqual(png)
      },
    ),
    '/together/v1/embeddings': post(
      together,
      '/v1/embeddings',
      bearer('TOGETHER_API_KEY'),
      (b) => ({ model: 'BAAI/bge-base-en-v1.5', ...b }),
    ),
    '/elevenlabs/v1/text-to-speech/{voiceId}': file(
      (b) => [
        {
          origin: 'https://api.elevenlabs.io',
          method: 'POST',
          path: '/v1/text-to-speech/21m00Tcm4TlvDq8ikWAM',
          query: { output_format: 'mp3_44100_128' },
          headers: { 'xi-api-key': key('ELEVENLABS_API_KEY') },
          absent: ['authorization'],
          body: b,
          reply: [200, mp3, { 'content-type': 'audio/mpeg' }],
        },
      ],
      mp3,
      'audio/mpeg',
    ),
    '/elevenlabs/v1/sound-generation': file(
      (b) => [
        {
          origin: 'https://api.elevenlabs.io',
          method: 'POST',
          path: '/v1/sound-generation',
          query: { output_format: 'mp3_44100_128' },
          headers: { 'xi-api-key': key('ELEVENLABS_API_KEY') },
          body: b,
          reply: [200, mp3, { 'content-type': 'audio/mpeg' }],
        },
      ],
      mp3,
      'audio/mpeg',
    ),
    '/openweather/v1/weather': get('https://api.openweathermap.org', '/data/2.5/weather', (b) => ({
      q: String(b.city),
      units: 'metric',
      appid: key('OPENWEATHER_API_KEY'),
    })),
    '/openweather/v1/forecast': get(
      'https://api.openweathermap.org',
      '/data/2.5/forecast',
      (b) => ({
        q: String(b.city),
        cnt: String(b.cnt),
        units: 'metric',
        appid: key('OPENWEATHER_API_KEY'),
      }),
    ),
    '/googlemaps/v1/geocode': get(
      'https://maps.googleapis.com',
      '/maps/api/geocode/json',
      (b) => ({ address: String(b.address), key: key('GOOGLE_MAPS_API_KEY') }),
      { status: 'OK', results: [{ place_id: 'p' }] },
    ),
    '/googlemaps/v1/places': get(
      'https://maps.googleapis.com',
      '/maps/api/place/textsearch/json',
      (b) => ({ query: String(b.query), key: key('GOOGLE_MAPS_API_KEY') }),
      { status: 'ZERO_RESULTS', results: [] },
    ),
    '/googlemaps/v1/directions': get(
      'https://maps.googleapis.com',
      '/maps/api/directions/json',
      (b) => ({
        origin: String(b.origin),
        destination: String(b.destination),
        mode: String(b.mode),
        key: key('GOOGLE_MAPS_API_KEY'),
      }),
      { status: 'OK', routes: [{ summary: 'A1' }] },
    ),
    '/judge0/v1/submissions': rows(
      (b) => [
        {
          origin: 'https://judge0-ce.p.rapidapi.com',
          method: 'POST',
          path: '/submissions',
          query: { base64_encoded: 'true', wait: 'true' },
          headers: {
            'x-rapidapi-key': key('RAPIDAPI_KEY'),
            'x-rapidapi-host': 'judge0-ce.p.rapidapi.com',
          },
          body: { source_code: b64(String(b.source_code)), language_id: b.language_id },
          reply: [
            200,
            {
              token: 't1',
              status: { id: 3, description: 'Accepted' },
              stdout: b64('hello\n'),
              stderr: null,
              compile_output: null,
              message: null,
              time: '0.01',
              memory: 3000,
            },
          ],
        },
      ],
      (out) =>
        expect(out).toEqual({
          token: 't1',
          status: { id: 3, description: 'Accepted' },
          stdout: 'hello\n',
          stderr: null,
          compile_output: null,
          message: null,
          time: '0.01',
          memory: 3000,
        }),
    ),
    '/judge0/v1/languages': rows(
      () => [
        {
          origin: 'https://judge0-ce.p.rapidapi.com',
          method: 'GET',
          path: '/languages',
          headers: { 'x-rapidapi-key': key('RAPIDAPI_KEY') },
          reply: [200, [{ id: 71, name: 'Python (3.8.1)' }]],
        },
      ],
      (out) => expect(out).toEqual({ languages: [{ id: 71, name: 'Python (3.8.1)' }] }),
    ),
    ...Object.fromEntries(
      (
        [
          ['/lob/v1/postcards', '/v1/postcards'],
          ['/lob/v1/letters', '/v1/letters'],
          ['/lob/v1/verify', '/v1/us_verifications'],
        ] as const
      ).map(([path, upstream]) => [
        path,
        post(
          'https://api.lob.com',
          upstream,
          {
            authorization: `Basic ${Buffer.from(`${key('LOB_API_KEY')}:`).toString('base64')}`,
            'idempotency-key': /^\w{32,}$/,
          },
          (b) => b,
          { id: `lob_${upstream.slice(4)}` },
        ),
      ]),
    ),
    '/coingecko/v1/price': get(
      'https://api.coingecko.com',
      '/api/v3/simple/price',
      (b) => ({
        ids: (b.ids as string[]).join(','),
        vs_currencies: (b.vs_currencies as string[]).join(','),
        x_cg_demo_api_key: key('COINGECKO_API_KEY'),
      }),
      { bitcoin: { usd: 1 } },
    ),
    '/coingecko/v1/markets': get(
      'https://api.coingecko.com',
      '/api/v3/coins/markets',
      (b) => ({
        vs_currency: String(b.vs_currency),
        per_page: String(b.per_page),
        x_cg_demo_api_key: key('COINGECKO_API_KEY'),
      }),
      [{ id: 'bitcoin' }],
      { coins: [{ id: 'bitcoin' }] },
    ),
    '/coingecko/v1/trending': get(
      'https://api.coingecko.com',
      '/api/v3/search/trending',
      () => ({ x_cg_demo_api_key: key('COINGECKO_API_KEY') }),
      { coins: [] },
    ),
    '/alphavantage/v1/quote': get('https://www.alphavantage.co', '/query', (b) => ({
      function: 'GLOBAL_QUOTE',
      symbol: String(b.symbol),
      apikey: key('ALPHAVANTAGE_API_KEY'),
    })),
    '/alphavantage/v1/daily': get('https://www.alphavantage.co', '/query', (b) => ({
      function: 'TIME_SERIES_DAILY',
      symbol: String(b.symbol),
      outputsize: String(b.outputsize),
      apikey: key('ALPHAVANTAGE_API_KEY'),
    })),
    '/alphavantage/v1/search': get('https://www.alphavantage.co', '/query', (b) => ({
      function: 'SYMBOL_SEARCH',
      keywords: String(b.keywords),
      apikey: key('ALPHAVANTAGE_API_KEY'),
    })),
    '/newsapi/v1/headlines': {
      ...get(
        'https://newsapi.org',
        '/v2/top-headlines',
        (b) => ({ country: String(b.country), category: String(b.category), pageSize: '5' }),
        { status: 'ok', articles: [] },
        undefined,
        { 'x-api-key': key('NEWS_API_KEY') },
      ),
      invalid: { body: { pageSize: 5 }, field: 'country' },
    },
    '/newsapi/v1/search': get(
      'https://newsapi.org',
      '/v2/everything',
      (b) => ({
        q: String(b.q),
        language: String(b.language),
        sortBy: String(b.sortBy),
        pageSize: String(b.pageSize),
      }),
      { status: 'ok', articles: [] },
      undefined,
      { 'x-api-key': key('NEWS_API_KEY') },
    ),
  }
}
