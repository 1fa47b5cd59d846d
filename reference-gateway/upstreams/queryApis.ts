/**
 * The query-string GET families: the validated body becomes the query of a `GET` (OpenWeather,
 * Google Maps, CoinGecko, Alpha Vantage, NewsAPI, Hunter, IPinfo, SerpAPI) or the path
 * (ExchangeRate-API). Each provider's key goes where the provider wants it (the query, a header or
 * the path); request URLs are never logged nor echoed in errors. Answers that are errors dressed as
 * 200s (Google's `status`, Alpha Vantage's `Error Message`/`Note`, ExchangeRate-API's `result`) are
 * failures, so the call is refunded.
 *
 * @module
 */
import { failed, jsonResult, readJson } from './http.js'
import { getWithQuery, listAnswer } from './kit.js'
import type { Family, Operation, OperationContext, UpstreamResult } from './upstream.js'

type Body = Record<string, unknown>
const str = (value: unknown) => (value === undefined ? undefined : String(value))

/** OpenWeather: `city` → `q`, `appid` and `units=metric` by default. */
function weatherQuery(body: Body, ctx: OperationContext) {
  return {
    q: str(body.city),
    lat: str(body.lat),
    lon: str(body.lon),
    cnt: str(body.cnt),
    units: str(body.units) ?? 'metric',
    lang: str(body.lang),
    appid: ctx.apiKey,
  }
}

/** The OpenWeather family (`/weather`, `/forecast`). */
export const openweather: Family = {
  id: 'openweather',
  timeoutMs: 10_000,
  operations: {
    weather: { request: (body, ctx) => getWithQuery(ctx, '/weather', weatherQuery(body, ctx)) },
    forecast: { request: (body, ctx) => getWithQuery(ctx, '/forecast', weatherQuery(body, ctx)) },
  },
}

/** Google's JSON APIs answer 200 with a `status`; only OK and ZERO_RESULTS are answers. */
async function googleStatus(answer: Response): Promise<UpstreamResult> {
  const read = await readJson(answer)
  if (read.status === 'failed') return read
  const status = read.value.status
  if (status !== 'OK' && status !== 'ZERO_RESULTS') {
    return failed(`upstream googlemaps answered status ${String(status).slice(0, 40)}`)
  }
  return jsonResult(read.value)
}

function maps(path: string, query: (body: Body) => Record<string, string | undefined>): Operation {
  return {
    request: (body, ctx) => getWithQuery(ctx, path, { ...query(body), key: ctx.apiKey }),
    response: googleStatus,
  }
}

/** The Google Maps family (geocode, place text search, directions). */
export const googlemaps: Family = {
  id: 'googlemaps',
  timeoutMs: 10_000,
  operations: {
    geocode: maps('/geocode/json', (b) => ({
      address: str(b.address),
      latlng: str(b.latlng),
      language: str(b.language),
      region: str(b.region),
    })),
    places: maps('/place/textsearch/json', (b) => ({
      query: str(b.query),
      location: str(b.location),
      radius: str(b.radius),
      type: str(b.type),
      language: str(b.language),
    })),
    directions: maps('/directions/json', (b) => ({
      origin: str(b.origin),
      destination: str(b.destination),
      mode: str(b.mode),
      alternatives: str(b.alternatives),
      avoid: str(b.avoid),
      units: str(b.units),
      language: str(b.language),
    })),
  },
}

/** The CoinGecko family (demo API: `x_cg_demo_api_key` in the query). */
export const coingecko: Family = {
  id: 'coingecko',
  timeoutMs: 10_000,
  operations: {
    price: {
      request: (b, ctx) =>
        getWithQuery(ctx, '/simple/price', {
          ids: b.ids as string[],
          vs_currencies: b.vs_currencies as string[],
          include_market_cap: b.include_market_cap as boolean | undefined,
          include_24hr_vol: b.include_24hr_vol as boolean | undefined,
          include_24hr_change: b.include_24hr_change as boolean | undefined,
          x_cg_demo_api_key: ctx.apiKey,
        }),
    },
    markets: {
      request: (b, ctx) =>
        getWithQuery(ctx, '/coins/markets', {
          vs_currency: str(b.vs_currency),
          ids: b.ids as string[] | undefined,
          order: str(b.order),
          per_page: str(b.per_page),
          page: str(b.page),
          x_cg_demo_api_key: ctx.apiKey,
        }),
      response: (answer) => listAnswer(answer, 'coins'),
    },
    trending: {
      request: (_b, ctx) =>
        getWithQuery(ctx, '/search/trending', { x_cg_demo_api_key: ctx.apiKey }),
    },
  },
}

/** Alpha Vantage answers 200 with `Error Message`, `Note` or `Information` when it refuses. */
async function alphaAnswer(answer: Response): Promise<UpstreamResult> {
  const read = await readJson(answer)
  if (read.status === 'failed') return read
  if ('Error Message' in read.value) return failed('upstream alphavantage refused the request')
  if ('Note' in read.value || 'Information' in read.value) {
    return failed('upstream alphavantage is rate limited', true)
  }
  return jsonResult(read.value)
}

function alpha(fn: string, query: (body: Body) => Record<string, string | undefined>): Operation {
  return {
    request: (body, ctx) =>
      getWithQuery(ctx, '/query', { function: fn, ...query(body), apikey: ctx.apiKey }),
    response: alphaAnswer,
  }
}

/** The Alpha Vantage family (`/query?function=…`). */
export const alphavantage: Family = {
  id: 'alphavantage',
  timeoutMs: 15_000,
  operations: {
    quote: alpha('GLOBAL_QUOTE', (b) => ({ symbol: str(b.symbol) })),
    daily: alpha('TIME_SERIES_DAILY', (b) => ({
      symbol: str(b.symbol),
      outputsize: str(b.outputsize),
    })),
    search: alpha('SYMBOL_SEARCH', (b) => ({ keywords: str(b.keywords) })),
  },
}

function news(path: string): Operation {
  return {
    request: (body, ctx) =>
      getWithQuery(
        ctx,
        path,
        Object.fromEntries(Object.entries(body).map(([k, v]) => [k, str(v)])),
        { 'x-api-key': ctx.apiKey },
      ),
  }
}

/** The NewsAPI family (`X-Api-Key` header). */
export const newsapi: Family = {
  id: 'newsapi',
  timeoutMs: 10_000,
  operations: { headlines: news('/top-headlines'), search: news('/everything') },
}

/** The Hunter family (`api_key` in the query). */
export const hunter: Family = {
  id: 'hunter',
  timeoutMs: 20_000,
  operations: {
    search: {
      request: (b, ctx) =>
        getWithQuery(ctx, '/domain-search', {
          domain: str(b.domain),
          limit: str(b.limit),
          offset: str(b.offset),
          type: str(b.type),
          api_key: ctx.apiKey,
        }),
    },
    verify: {
      request: (b, ctx) =>
        getWithQuery(ctx, '/email-verifier', { email: str(b.email), api_key: ctx.apiKey }),
    },
  },
}

/** The IPinfo family: `GET /<ip>/json?token=…` (never `/me`: that is the gateway's own address). */
export const ipinfo: Family = {
  id: 'ipinfo',
  timeoutMs: 10_000,
  operations: {
    lookup: {
      request: (b, ctx) =>
        getWithQuery(ctx, `/${encodeURIComponent(String(b.ip))}/json`, { token: ctx.apiKey }),
    },
  },
}

/** The SerpAPI family (`/search.json?engine=…`, `api_key` in the query; locations take no key). */
export const serpapi: Family = {
  id: 'serpapi',
  timeoutMs: 30_000,
  operations: {
    search: {
      request: (b, ctx) =>
        getWithQuery(ctx, '/search.json', {
          engine: 'google',
          q: str(b.q),
          location: str(b.location),
          hl: str(b.hl),
          gl: str(b.gl),
          num: str(b.num),
          start: str(b.start),
          api_key: ctx.apiKey,
        }),
    },
    flights: {
      request: (b, ctx) =>
        getWithQuery(ctx, '/search.json', {
          engine: 'google_flights',
          departure_id: str(b.departure_id),
          arrival_id: str(b.arrival_id),
          outbound_date: str(b.outbound_date),
          return_date: str(b.return_date),
          type: str(b.type ?? 1),
          adults: str(b.adults),
          travel_class: str(b.travel_class),
          stops: str(b.stops),
          currency: str(b.currency),
          hl: str(b.hl),
          api_key: ctx.apiKey,
        }),
    },
    locations: {
      request: (b, ctx) =>
        getWithQuery(ctx, '/locations.json', { q: str(b.q), limit: str(b.limit) }),
      response: (answer) => listAnswer(answer, 'locations'),
    },
  },
}

/** ExchangeRate-API answers `result: "error"` (with an `error-type`) when it refuses. */
async function rateAnswer(
  answer: Response,
  map: (value: Record<string, unknown>) => Record<string, unknown>,
): Promise<UpstreamResult> {
  const read = await readJson(answer)
  if (read.status === 'failed') return read
  if (read.value.result !== 'success') {
    return failed(`upstream exchangerate answered ${String(read.value['error-type']).slice(0, 40)}`)
  }
  return jsonResult(map(read.value))
}

const keyPath = (ctx: OperationContext) => `/${encodeURIComponent(ctx.apiKey)}`

/** The ExchangeRate-API family (v6: the key is a path segment). */
export const exchangerate: Family = {
  id: 'exchangerate',
  timeoutMs: 10_000,
  operations: {
    rates: {
      request: (b, ctx) => getWithQuery(ctx, `${keyPath(ctx)}/latest/${String(b.base)}`, {}),
      response: (answer, _ctx, body) =>
        rateAnswer(answer, (value) => {
          const all = (value.conversion_rates ?? {}) as Record<string, number>
          const symbols = body.symbols as string[] | undefined
          return {
            base: value.base_code,
            time_last_update_utc: value.time_last_update_utc,
            rates: symbols
              ? Object.fromEntries(symbols.filter((s) => s in all).map((s) => [s, all[s]]))
              : all,
          }
        }),
    },
    convert: {
      request: (b, ctx) =>
        getWithQuery(
          ctx,
          `${keyPath(ctx)}/pair/${String(b.from)}/${String(b.to)}${b.amount === undefined ? '' : `/${String(b.amount)}`}`,
          {},
        ),
      response: (answer, _ctx, body) =>
        rateAnswer(answer, (value) => ({
          from: value.base_code,
          to: value.target_code,
          rate: value.conversion_rate,
          ...(body.amount === undefined
            ? {}
            : { amount: body.amount, result: value.conversion_result }),
          time_last_update_utc: value.time_last_update_utc,
        })),
    },
  },
}
