/**
 * Request shapes of the data services whose upstream is a query-string GET (weather, maps, crypto
 * and stock prices; the others are in `shapesSearch.ts`): every field the gateway puts in the
 * query is validated here first, so nothing unchecked reaches a provider URL.
 *
 * @module
 */
import { z } from 'zod'
import type { Shape } from './shapes.js'

const place = z.string().trim().min(1, 'must not be empty').max(200)
const latitude = z.number().min(-90).max(90)
const longitude = z.number().min(-180).max(180)

/** OpenWeather units. */
export const weatherUnits = ['metric', 'imperial', 'standard'] as const

const weatherFields = {
  city: place.optional(),
  lat: latitude.optional(),
  lon: longitude.optional(),
  units: z.enum(weatherUnits).optional(),
  lang: z
    .string()
    .regex(/^[a-z]{2}(?:_[a-z]{2})?$/i, 'must be a language code')
    .optional(),
}

function cityOrCoordinates(body: {
  city?: string | undefined
  lat?: number | undefined
  lon?: number | undefined
}): boolean {
  return body.city !== undefined || (body.lat !== undefined && body.lon !== undefined)
}
const whereMessage = { message: 'city, or lat and lon, is required', path: ['city'] }

/** Shape WEATHER: current weather by city or coordinates (metric by default). */
export const weather: Shape = {
  name: 'WEATHER',
  description: 'Current weather: city (or lat and lon), optional units (metric default), lang',
  schema: z.object(weatherFields).refine(cityOrCoordinates, whereMessage),
  example: { city: 'Lisbon' },
}

/** Shape FORECAST: 5-day / 3-hour forecast by city or coordinates. */
export const forecast: Shape = {
  name: 'FORECAST',
  description:
    '5-day forecast in 3-hour steps: city (or lat and lon), optional cnt (1–40), units, lang',
  schema: z
    .object({ ...weatherFields, cnt: z.int().min(1).max(40).optional() })
    .refine(cityOrCoordinates, whereMessage),
  example: { city: 'Lisbon', cnt: 8 },
}

const language = z
  .string()
  .regex(/^[a-z]{2,3}(?:-[A-Za-z]{2,4})?$/, 'must be a language code')
  .optional()

/** Shape GEOCODE: an address, or coordinates to reverse-geocode. */
export const geocode: Shape = {
  name: 'GEOCODE',
  description: 'Geocoding: address (or latlng "lat,lng" to reverse), optional language, region',
  schema: z
    .object({
      address: place.optional(),
      latlng: z
        .string()
        .regex(/^-?\d{1,2}(?:\.\d+)?,-?\d{1,3}(?:\.\d+)?$/, 'must be "lat,lng"')
        .optional(),
      language,
      region: z
        .string()
        .regex(/^[a-z]{2}$/i, 'must be a two-letter region code')
        .optional(),
    })
    .refine((b) => b.address !== undefined || b.latlng !== undefined, {
      message: 'address or latlng is required',
      path: ['address'],
    }),
  example: { address: '1600 Amphitheatre Parkway, Mountain View, CA' },
}

/** Shape PLACES: a text search for places. */
export const places: Shape = {
  name: 'PLACES',
  description: 'Place search: query, optional location "lat,lng", radius (m), type, language',
  schema: z.object({
    query: place,
    location: z
      .string()
      .regex(/^-?\d{1,2}(?:\.\d+)?,-?\d{1,3}(?:\.\d+)?$/, 'must be "lat,lng"')
      .optional(),
    radius: z.int().min(1).max(50_000).optional(),
    type: z
      .string()
      .regex(/^[a-z_]{1,40}$/)
      .optional(),
    language,
  }),
  example: { query: 'coffee near Times Square' },
}

/** Travel modes of DIRECTIONS. */
export const travelModes = ['driving', 'walking', 'bicycling', 'transit'] as const

/** Shape DIRECTIONS: a route between two places. */
export const directions: Shape = {
  name: 'DIRECTIONS',
  description:
    'Directions: origin, destination, optional mode (driving, walking, bicycling, transit), alternatives, language',
  schema: z.object({
    origin: place,
    destination: place,
    mode: z.enum(travelModes).optional(),
    alternatives: z.boolean().optional(),
    avoid: z.enum(['tolls', 'highways', 'ferries']).optional(),
    units: z.enum(['metric', 'imperial']).optional(),
    language,
  }),
  example: { origin: 'Lisbon', destination: 'Porto', mode: 'driving' },
}

const coinId = z.string().regex(/^[a-z0-9][a-z0-9-]{0,99}$/, 'must be a CoinGecko coin id')
const currency = z.string().regex(/^[a-z]{3,5}$/, 'must be a lower-case currency code like usd')

/** Shape COIN-PRICE: prices of coins in currencies. */
export const coinPrice: Shape = {
  name: 'COIN-PRICE',
  description:
    'Prices: ids (CoinGecko coin ids, 1–50), vs_currencies (1–10), optional market cap, 24 h volume and change',
  schema: z.object({
    ids: z.array(coinId).min(1).max(50),
    vs_currencies: z.array(currency).min(1).max(10),
    include_market_cap: z.boolean().optional(),
    include_24hr_vol: z.boolean().optional(),
    include_24hr_change: z.boolean().optional(),
  }),
  example: { ids: ['bitcoin', 'sui'], vs_currencies: ['usd'] },
}

/** Orders of COIN-MARKETS. */
export const marketOrders = [
  'market_cap_desc',
  'market_cap_asc',
  'volume_desc',
  'volume_asc',
  'id_asc',
  'id_desc',
] as const

/** Shape COIN-MARKETS: coins with market data, one page. */
export const coinMarkets: Shape = {
  name: 'COIN-MARKETS',
  description:
    'Markets: vs_currency, optional ids, order, per_page (1–250), page (1–1000), price_change_percentage',
  schema: z.object({
    vs_currency: currency,
    ids: z.array(coinId).min(1).max(250).optional(),
    order: z.enum(marketOrders).optional(),
    per_page: z.int().min(1).max(250).optional(),
    page: z.int().min(1).max(1000).optional(),
  }),
  example: { vs_currency: 'usd', per_page: 10 },
}

/** Shape EMPTY: no parameters (any JSON object; its fields are ignored). */
export const empty: Shape = {
  name: 'EMPTY',
  description: 'No parameters: send {}',
  schema: z.object({}),
  example: {},
}

const symbol = z
  .string()
  .regex(/^[A-Za-z0-9.^=-]{1,16}$/, 'must be a ticker symbol like IBM or BRK.B')

/** Shape SYMBOL: a stock ticker. */
export const quote: Shape = {
  name: 'SYMBOL',
  description: 'Latest quote: symbol',
  schema: z.object({ symbol }),
  example: { symbol: 'IBM' },
}

/** Shape DAILY: daily prices of a ticker. */
export const daily: Shape = {
  name: 'DAILY',
  description: 'Daily prices: symbol, optional outputsize (compact = 100 days, full)',
  schema: z.object({ symbol, outputsize: z.enum(['compact', 'full']).optional() }),
  example: { symbol: 'IBM', outputsize: 'compact' },
}

/** Shape KEYWORDS: a ticker search. */
export const keywords: Shape = {
  name: 'KEYWORDS',
  description: 'Ticker search: keywords',
  schema: z.object({ keywords: z.string().trim().min(1).max(100) }),
  example: { keywords: 'microsoft' },
}
