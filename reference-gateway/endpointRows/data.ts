/**
 * Rows of the endpoint suite for the data services (the catalog's `servicesData.ts`): OpenWeather, Google Maps, CoinGecko,
 * Alpha Vantage, NewsAPI, Hunter, IPinfo, SerpAPI and ExchangeRate-API: the exact upstream request(s) nock expects (URL, method,
 * where the key goes, body or query mapping), the answer, what the buyer gets. Test support only.
 *
 * @module
 */
import { expect } from 'vitest'
import { type Expectation, type RowContext, rowKit, rows } from './kit.js'

/** The rows, by gateway path. */
export function dataRows(context: RowContext): Record<string, Expectation> {
  const { get, key } = rowKit(context)
  return {
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
    '/hunter/v1/search': get('https://api.hunter.io', '/v2/domain-search', (b) => ({
      domain: String(b.domain),
      limit: String(b.limit),
      api_key: key('HUNTER_API_KEY'),
    })),
    '/hunter/v1/verify': get('https://api.hunter.io', '/v2/email-verifier', (b) => ({
      email: String(b.email),
      api_key: key('HUNTER_API_KEY'),
    })),
    '/ipinfo/v1/lookup': get('https://ipinfo.io', '/8.8.8.8/json', () => ({
      token: key('IPINFO_API_KEY'),
    })),
    '/serpapi/v1/search': get('https://serpapi.com', '/search.json', (b) => ({
      engine: 'google',
      q: String(b.q),
      num: String(b.num),
      api_key: key('SERPAPI_API_KEY'),
    })),
    '/serpapi/v1/flights': get('https://serpapi.com', '/search.json', (b) => ({
      engine: 'google_flights',
      departure_id: String(b.departure_id),
      arrival_id: String(b.arrival_id),
      outbound_date: String(b.outbound_date),
      return_date: String(b.return_date),
      type: '1',
      api_key: key('SERPAPI_API_KEY'),
    })),
    '/serpapi/v1/locations': rows(
      (b) => [
        {
          origin: 'https://serpapi.com',
          method: 'GET',
          path: '/locations.json',
          query: { q: String(b.q), limit: String(b.limit) },
          reply: [200, [{ name: 'Austin' }]],
        },
      ],
      (out) => expect(out).toEqual({ locations: [{ name: 'Austin' }] }),
    ),
    '/exchangerate/v1/rates': rows(
      (b) => [
        {
          origin: 'https://v6.exchangerate-api.com',
          method: 'GET',
          path: `/v6/${key('EXCHANGERATE_API_KEY')}/latest/${String(b.base)}`,
          reply: [
            200,
            {
              result: 'success',
              base_code: 'USD',
              time_last_update_utc: 't',
              conversion_rates: { USD: 1, EUR: 0.9, JPY: 150, GBP: 0.8 },
            },
          ],
        },
      ],
      (out) =>
        expect(out).toEqual({
          base: 'USD',
          time_last_update_utc: 't',
          rates: { EUR: 0.9, JPY: 150 },
        }),
    ),
    '/exchangerate/v1/convert': rows(
      (b) => [
        {
          origin: 'https://v6.exchangerate-api.com',
          method: 'GET',
          path: `/v6/${key('EXCHANGERATE_API_KEY')}/pair/${String(b.from)}/${String(b.to)}/${String(b.amount)}`,
          reply: [
            200,
            {
              result: 'success',
              base_code: 'USD',
              target_code: 'EUR',
              conversion_rate: 0.9,
              conversion_result: 90,
              time_last_update_utc: 't',
            },
          ],
        },
      ],
      (out) =>
        expect(out).toEqual({
          from: 'USD',
          to: 'EUR',
          rate: 0.9,
          amount: 100,
          result: 90,
          time_last_update_utc: 't',
        }),
    ),
  }
}
