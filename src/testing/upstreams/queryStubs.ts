/**
 * Deterministic fakes of the query-string GET providers (OpenWeather, Google Maps, CoinGecko, Alpha
 * Vantage, NewsAPI, Hunter, IPinfo, SerpAPI, ExchangeRate-API): each requires its key where the
 * provider does (query, header or path) and answers in the provider's shape.
 *
 * @module
 */
import { json, type StubHandler, type StubRequest, stubError } from './handlers.js'

function query(request: StubRequest): URLSearchParams {
  return new URL(request.url).searchParams
}

/** OpenWeather `/weather`, `/forecast` (`appid` in the query). */
export const openweatherStub: StubHandler = async (request, rest) => {
  const q = query(request)
  if (!q.get('appid')) return json({ cod: 401, message: 'Invalid API key' }, 401)
  const name = q.get('q') ?? `${q.get('lat')},${q.get('lon')}`
  const main = { temp: 18.5, feels_like: 18.1, humidity: 60 }
  if (request.method === 'GET' && rest === '/weather') {
    return json({ name, main, weather: [{ main: 'Clear' }], units: q.get('units'), cod: 200 })
  }
  if (request.method === 'GET' && rest === '/forecast') {
    const count = Number(q.get('cnt') ?? 40)
    const list = Array.from({ length: count }, (_, i) => ({ dt: 1_700_000_000 + i * 10_800, main }))
    return json({ cod: '200', cnt: count, list, city: { name } })
  }
  return json({ cod: 404, message: 'Internal error' }, 404)
}

/** Google Maps geocode, place text search, directions (`key` in the query; errors as `status`). */
export const googlemapsStub: StubHandler = async (request, rest) => {
  const q = query(request)
  if (!q.get('key')) {
    return json({ status: 'REQUEST_DENIED', error_message: 'You must use an API key' })
  }
  switch (request.method === 'GET' ? rest : '') {
    case '/geocode/json':
      return json({
        status: 'OK',
        results: [
          {
            formatted_address: q.get('address') ?? q.get('latlng'),
            geometry: { location: { lat: 37.422, lng: -122.084 } },
          },
        ],
      })
    case '/place/textsearch/json':
      return json({ status: 'OK', results: [{ name: `Place for ${q.get('query')}` }] })
    case '/directions/json':
      return json({
        status: 'OK',
        routes: [
          {
            summary: `${q.get('origin')} to ${q.get('destination')} (${q.get('mode') ?? 'driving'})`,
          },
        ],
      })
    default:
      return json({ status: 'INVALID_REQUEST' }, 404)
  }
}

/** CoinGecko simple price, markets, trending (`x_cg_demo_api_key` in the query). */
export const coingeckoStub: StubHandler = async (request, rest) => {
  const q = query(request)
  if (!q.get('x_cg_demo_api_key')) return json({ status: { error_code: 10002 } }, 401)
  if (request.method !== 'GET') return stubError(404, 'not found')
  if (rest === '/simple/price') {
    const currencies = (q.get('vs_currencies') ?? '').split(',')
    return json(
      Object.fromEntries(
        (q.get('ids') ?? '')
          .split(',')
          .map((id, i) => [id, Object.fromEntries(currencies.map((c) => [c, 100 + i]))]),
      ),
    )
  }
  if (rest === '/coins/markets') {
    const count = Number(q.get('per_page') ?? 100)
    return json(
      Array.from({ length: Math.min(count, 3) }, (_, i) => ({
        id: `coin-${i}`,
        current_price: 10 * (i + 1),
        currency: q.get('vs_currency'),
      })),
    )
  }
  if (rest === '/search/trending') return json({ coins: [{ item: { id: 'sui' } }] })
  return stubError(404, 'not found')
}

/** Alpha Vantage `/query?function=…` (`apikey` in the query; errors as 200s). */
export const alphavantageStub: StubHandler = async (request, rest) => {
  const q = query(request)
  if (!q.get('apikey')) return json({ 'Error Message': 'the parameter apikey is invalid' })
  if (request.method !== 'GET' || rest !== '/query') return stubError(404, 'not found')
  const symbol = q.get('symbol') ?? ''
  switch (q.get('function')) {
    case 'GLOBAL_QUOTE':
      return json({ 'Global Quote': { '01. symbol': symbol, '05. price': '100.0000' } })
    case 'TIME_SERIES_DAILY':
      return json({
        'Meta Data': { '2. Symbol': symbol, '4. Output Size': q.get('outputsize') ?? 'compact' },
        'Time Series (Daily)': { '2026-11-20': { '4. close': '100.0000' } },
      })
    case 'SYMBOL_SEARCH':
      return json({ bestMatches: [{ '1. symbol': 'MSFT', '2. name': q.get('keywords') }] })
    default:
      return json({ 'Error Message': 'Invalid API call' })
  }
}

/** NewsAPI top headlines and everything (`X-Api-Key`). */
export const newsapiStub: StubHandler = async (request, rest) => {
  if (!request.headers.get('x-api-key')) {
    return json({ status: 'error', code: 'apiKeyMissing', message: 'Your API key is missing' }, 401)
  }
  const q = query(request)
  if (request.method !== 'GET' || (rest !== '/top-headlines' && rest !== '/everything')) {
    return stubError(404, 'not found')
  }
  const topic = q.get('q') ?? q.get('category') ?? q.get('country') ?? ''
  return json({
    status: 'ok',
    totalResults: 1,
    articles: [{ title: `News about ${topic}`, url: 'https://example.com/news/1' }],
  })
}

/** Hunter domain search and e-mail verifier (`api_key` in the query). */
export const hunterStub: StubHandler = async (request, rest) => {
  const q = query(request)
  if (!q.get('api_key')) return json({ errors: [{ id: 'authentication_failed' }] }, 401)
  if (request.method === 'GET' && rest === '/domain-search') {
    const domain = q.get('domain')
    return json({ data: { domain, emails: [{ value: `info@${domain}`, type: 'generic' }] } })
  }
  if (request.method === 'GET' && rest === '/email-verifier') {
    return json({ data: { email: q.get('email'), status: 'valid', score: 91 } })
  }
  return stubError(404, 'not found')
}

/** IPinfo `/<ip>/json` (`token` in the query). */
export const ipinfoStub: StubHandler = async (request, rest) => {
  const q = query(request)
  if (!q.get('token')) return json({ status: 403, error: { title: 'Unknown token' } }, 403)
  const match = /^\/([0-9a-fA-F.:]+)\/json$/.exec(rest)
  if (request.method !== 'GET' || !match) return stubError(404, 'not found')
  return json({ ip: match[1], city: 'Mountain View', country: 'US', org: 'AS15169 Stub' })
}

/** SerpAPI `/search.json` (engines google, google_flights; `api_key`) and `/locations.json`. */
export const serpapiStub: StubHandler = async (request, rest) => {
  const q = query(request)
  if (request.method === 'GET' && rest === '/locations.json') {
    return json([{ name: q.get('q'), canonical_name: `${q.get('q')},Texas,United States` }])
  }
  if (!q.get('api_key')) return json({ error: 'Invalid API key.' }, 401)
  if (request.method !== 'GET' || rest !== '/search.json') return stubError(404, 'not found')
  if (q.get('engine') === 'google_flights') {
    return json({
      search_parameters: { engine: 'google_flights' },
      best_flights: [
        { price: 500, departure: q.get('departure_id'), arrival: q.get('arrival_id') },
      ],
    })
  }
  return json({
    search_parameters: { engine: q.get('engine'), q: q.get('q') },
    organic_results: [{ position: 1, title: `Result for ${q.get('q')}` }],
  })
}

/** ExchangeRate-API v6 `/<key>/latest/<base>`, `/<key>/pair/<from>/<to>[/<amount>]`. */
export const exchangerateStub: StubHandler = async (request, rest) => {
  const latest = /^\/([^/]+)\/latest\/([A-Z]{3})$/.exec(rest)
  const pair = /^\/([^/]+)\/pair\/([A-Z]{3})\/([A-Z]{3})(?:\/([0-9.]+))?$/.exec(rest)
  const key = latest?.[1] ?? pair?.[1]
  if (request.method !== 'GET' || !key)
    return json({ result: 'error', 'error-type': 'malformed-request' }, 404)
  const updated = 'Fri, 20 Nov 2026 00:00:01 +0000'
  if (latest) {
    return json({
      result: 'success',
      base_code: latest[2],
      time_last_update_utc: updated,
      conversion_rates: { [latest[2] as string]: 1, EUR: 0.9, JPY: 150, GBP: 0.8 },
    })
  }
  const amount = Number(pair?.[4] ?? 1)
  return json({
    result: 'success',
    base_code: pair?.[2],
    target_code: pair?.[3],
    conversion_rate: 0.9,
    ...(pair?.[4] === undefined ? {} : { conversion_result: Math.round(amount * 0.9 * 1e4) / 1e4 }),
    time_last_update_utc: updated,
  })
}
