/**
 * The default catalog's data services, whose upstreams are query-string GETs: OpenWeather, Google
 * Maps, CoinGecko, Alpha Vantage, NewsAPI, Hunter, IPinfo, SerpAPI and ExchangeRate-API.
 *
 * @module
 */
import type { Service, Tag } from './catalog.js'
import { paid } from './paid.js'
import * as d from './shapesData.js'
import * as q from './shapesSearch.js'

const data: readonly Tag[] = ['data']
const p = '0.020000'

/** The query-string data services. */
export function dataServices(): Service[] {
  return [
    {
      segment: 'openweather',
      name: 'OpenWeather',
      summary: 'Current weather and 5-day forecasts by city or coordinates',
      tags: data,
      family: 'openweather',
      upstream: {
        baseUrl: 'https://api.openweathermap.org/data/2.5',
        credential: 'OPENWEATHER_API_KEY',
      },
      endpoints: [
        paid('/openweather/v1/weather', d.weather, p, data, 'Current weather', {
          operation: 'weather',
        }),
        paid('/openweather/v1/forecast', d.forecast, p, data, '5-day forecast, 3-hour steps', {
          operation: 'forecast',
        }),
      ],
    },
    {
      segment: 'googlemaps',
      name: 'Google Maps',
      summary: 'Geocoding, place search and directions',
      tags: data,
      family: 'googlemaps',
      upstream: {
        baseUrl: 'https://maps.googleapis.com/maps/api',
        credential: 'GOOGLE_MAPS_API_KEY',
      },
      endpoints: [
        paid('/googlemaps/v1/geocode', d.geocode, p, data, 'Address to coordinates and back', {
          operation: 'geocode',
        }),
        paid('/googlemaps/v1/places', d.places, p, data, 'Place text search', {
          operation: 'places',
        }),
        paid('/googlemaps/v1/directions', d.directions, p, data, 'Directions between places', {
          operation: 'directions',
        }),
      ],
    },
    {
      segment: 'coingecko',
      name: 'CoinGecko',
      summary: 'Crypto prices, markets and trending coins',
      tags: data,
      family: 'coingecko',
      upstream: { baseUrl: 'https://api.coingecko.com/api/v3', credential: 'COINGECKO_API_KEY' },
      endpoints: [
        paid('/coingecko/v1/price', d.coinPrice, p, data, 'Coin prices', {
          operation: 'price',
        }),
        paid('/coingecko/v1/markets', d.coinMarkets, p, data, 'Coin markets', {
          operation: 'markets',
        }),
        paid('/coingecko/v1/trending', d.empty, p, data, 'Trending coins', {
          operation: 'trending',
        }),
      ],
    },
    {
      segment: 'alphavantage',
      name: 'Alpha Vantage',
      summary: 'Stock quotes, daily prices and ticker search',
      tags: data,
      family: 'alphavantage',
      upstream: { baseUrl: 'https://www.alphavantage.co', credential: 'ALPHAVANTAGE_API_KEY' },
      endpoints: [
        paid('/alphavantage/v1/quote', d.quote, p, data, 'Latest stock quote', {
          operation: 'quote',
        }),
        paid('/alphavantage/v1/daily', d.daily, p, data, 'Daily stock prices', {
          operation: 'daily',
        }),
        paid('/alphavantage/v1/search', d.keywords, p, data, 'Ticker search', {
          operation: 'search',
        }),
      ],
    },
    {
      segment: 'newsapi',
      name: 'NewsAPI',
      summary: 'Top headlines, and article search on any topic',
      tags: ['data', 'search'],
      family: 'newsapi',
      upstream: { baseUrl: 'https://newsapi.org/v2', credential: 'NEWS_API_KEY' },
      endpoints: [
        paid(
          '/newsapi/v1/headlines',
          q.headlines,
          p,
          ['data', 'search'],
          'Top headlines by country or category (for a topic, use /newsapi/v1/search)',
          { operation: 'headlines' },
        ),
        paid('/newsapi/v1/search', q.newsSearch, p, ['data', 'search'], 'Articles on a topic', {
          operation: 'search',
        }),
      ],
    },
    {
      segment: 'hunter',
      name: 'Hunter',
      summary: "A domain's e-mail addresses, and e-mail verification",
      tags: data,
      family: 'hunter',
      upstream: { baseUrl: 'https://api.hunter.io/v2', credential: 'HUNTER_API_KEY' },
      endpoints: [
        paid(
          '/hunter/v1/search',
          q.domainSearch,
          '0.040000',
          data,
          'E-mail addresses of a domain',
          {
            operation: 'search',
          },
        ),
        paid('/hunter/v1/verify', q.emailVerify, '0.040000', data, 'Verify an e-mail address', {
          operation: 'verify',
        }),
      ],
    },
    {
      segment: 'ipinfo',
      name: 'IPinfo',
      summary: 'IP address geolocation, network and company',
      tags: data,
      family: 'ipinfo',
      upstream: { baseUrl: 'https://ipinfo.io', credential: 'IPINFO_API_KEY' },
      endpoints: [
        paid('/ipinfo/v1/lookup', q.ipLookup, p, data, 'Details of an IP address', {
          operation: 'lookup',
        }),
      ],
    },
  ]
}

/** SerpAPI and ExchangeRate-API (after the others, in the catalog's order). */
export function laterDataServices(): Service[] {
  return [
    {
      segment: 'serpapi',
      name: 'SerpAPI',
      summary: 'Google search results, Google Flights, and search locations',
      tags: ['search'],
      family: 'serpapi',
      upstream: { baseUrl: 'https://serpapi.com', credential: 'SERPAPI_API_KEY' },
      endpoints: [
        paid('/serpapi/v1/search', q.serpSearch, p, ['search'], 'Google search results', {
          operation: 'search',
        }),
        paid('/serpapi/v1/flights', q.flights, p, ['search'], 'Google Flights search', {
          operation: 'flights',
        }),
        paid('/serpapi/v1/locations', q.locations, p, ['search'], 'Locations for searches', {
          operation: 'locations',
        }),
      ],
    },
    {
      segment: 'exchangerate',
      name: 'ExchangeRate-API',
      summary: 'Currency exchange rates and conversion',
      tags: ['finance'],
      family: 'exchangerate',
      upstream: {
        baseUrl: 'https://v6.exchangerate-api.com/v6',
        credential: 'EXCHANGERATE_API_KEY',
      },
      endpoints: [
        paid('/exchangerate/v1/rates', q.rates, p, ['finance'], 'Latest exchange rates', {
          operation: 'rates',
        }),
        paid('/exchangerate/v1/convert', q.convert, p, ['finance'], 'Convert an amount', {
          operation: 'convert',
        }),
      ],
    },
  ]
}
