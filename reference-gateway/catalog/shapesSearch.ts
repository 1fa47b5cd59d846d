/**
 * Request shapes of the search-like data services whose upstream is a query-string GET: NewsAPI,
 * Hunter, IPinfo, ExchangeRate-API and SerpAPI (web, flights, locations).
 *
 * @module
 */
import { z } from 'zod'
import type { Shape } from './shapes.js'

/** NewsAPI categories. */
export const newsCategories = [
  'business',
  'entertainment',
  'general',
  'health',
  'science',
  'sports',
  'technology',
] as const
const pageSize = z.int().min(1).max(100)
const newsQuery = z.string().trim().min(1).max(500)

/** Shape HEADLINES: top headlines by country, category, sources or keywords. */
export const headlines: Shape = {
  name: 'HEADLINES',
  description:
    'Top headlines: at least one of country (2 letters), category, sources, q; optional pageSize, page. For a topic, use /search',
  schema: z
    .object({
      country: z
        .string()
        .regex(/^[a-z]{2}$/, 'must be a two-letter country code')
        .optional(),
      category: z.enum(newsCategories).optional(),
      sources: z
        .string()
        .regex(/^[a-z0-9-]+(?:,[a-z0-9-]+){0,19}$/, 'must be comma-separated source ids')
        .optional(),
      q: newsQuery.optional(),
      pageSize: pageSize.optional(),
      page: z.int().min(1).max(100).optional(),
    })
    .refine((b) => b.country ?? b.category ?? b.sources ?? b.q, {
      message: 'one of country, category, sources or q is required',
      path: ['country'],
    })
    .refine((b) => b.sources === undefined || (b.country ?? b.category) === undefined, {
      message: 'sources cannot be combined with country or category',
      path: ['sources'],
    }),
  example: { country: 'us', category: 'technology', pageSize: 5 },
}

const isoDate = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z?)?$/, 'must be an ISO 8601 date')

/** NewsAPI languages. */
export const newsLanguages = [
  'ar',
  'de',
  'en',
  'es',
  'fr',
  'he',
  'it',
  'nl',
  'no',
  'pt',
  'ru',
  'sv',
  'ud',
  'zh',
] as const

/** Shape NEWS-SEARCH: every article matching a query. */
export const newsSearch: Shape = {
  name: 'NEWS-SEARCH',
  description:
    'Article search on a topic: q, optional from, to (ISO dates), language, sortBy (relevancy, popularity, publishedAt), pageSize, page',
  schema: z.object({
    q: newsQuery,
    from: isoDate.optional(),
    to: isoDate.optional(),
    language: z.enum(newsLanguages).optional(),
    sortBy: z.enum(['relevancy', 'popularity', 'publishedAt']).optional(),
    pageSize: pageSize.optional(),
    page: z.int().min(1).max(100).optional(),
  }),
  example: { q: 'stablecoins', language: 'en', sortBy: 'publishedAt', pageSize: 5 },
}

const hostname = z
  .string()
  .max(253)
  .regex(
    /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i,
    'must be a domain name like example.com',
  )

/** Shape DOMAIN-SEARCH: e-mail addresses found for a domain. */
export const domainSearch: Shape = {
  name: 'DOMAIN-SEARCH',
  description: 'E-mail addresses of a domain: domain, optional limit (1–100), offset, type',
  schema: z.object({
    domain: hostname,
    limit: z.int().min(1).max(100).optional(),
    offset: z.int().min(0).max(10_000).optional(),
    type: z.enum(['personal', 'generic']).optional(),
  }),
  example: { domain: 'stripe.com', limit: 10 },
}

/** Shape EMAIL-VERIFY: deliverability of one address. */
export const emailVerify: Shape = {
  name: 'EMAIL-VERIFY',
  description: 'Verify an e-mail address: email',
  schema: z.object({ email: z.email().max(254) }),
  example: { email: 'patrick@stripe.com' },
}

/** Shape IP: one IPv4 or IPv6 address. */
export const ipLookup: Shape = {
  name: 'IP',
  description: 'IP address details: ip (IPv4 or IPv6)',
  schema: z.object({ ip: z.union([z.ipv4(), z.ipv6()], 'must be an IPv4 or IPv6 address') }),
  example: { ip: '8.8.8.8' },
}

const currencyCode = z.string().regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code like USD')

/** Shape RATES: the latest rates from a base currency, optionally filtered. */
export const rates: Shape = {
  name: 'RATES',
  description: 'Latest exchange rates: base (ISO 4217), optional symbols to keep (1–200)',
  schema: z.object({
    base: currencyCode,
    symbols: z.array(currencyCode).min(1).max(200).optional(),
  }),
  example: { base: 'USD', symbols: ['EUR', 'JPY'] },
}

/** Shape CONVERT: an amount from one currency to another. */
export const convert: Shape = {
  name: 'CONVERT',
  description: 'Currency conversion: from, to (ISO 4217), optional amount (> 0)',
  schema: z.object({
    from: currencyCode,
    to: currencyCode,
    amount: z.number().positive().max(1e12).optional(),
  }),
  example: { from: 'USD', to: 'EUR', amount: 100 },
}

const hl = z
  .string()
  .regex(/^[a-z]{2}(?:-[a-z]{2})?$/i, 'must be a language code')
  .optional()
const gl = z
  .string()
  .regex(/^[a-z]{2}$/i, 'must be a two-letter country code')
  .optional()

/** Shape SERP: a Google search through SerpAPI. */
export const serpSearch: Shape = {
  name: 'SERP',
  description: 'Google search results: q, optional location, hl, gl, num (1–100), start',
  schema: z.object({
    q: z.string().trim().min(1).max(2048),
    location: z.string().min(1).max(200).optional(),
    hl,
    gl,
    num: z.int().min(1).max(100).optional(),
    start: z.int().min(0).max(500).optional(),
  }),
  example: { q: 'sui blockchain usdc', num: 10 },
}

const airports = z
  .string()
  .regex(/^[A-Z]{3}(?:,[A-Z]{3}){0,6}$/, 'must be IATA airport codes like LIS or LIS,OPO')
const day = z
  .string()
  .regex(/^20\d{2}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])$/, 'must be a date YYYY-MM-DD')
  .refine((value) => !Number.isNaN(Date.parse(`${value}T00:00:00Z`)), 'must be a real date')

/**
 * Shape FLIGHTS: Google Flights through SerpAPI. A round trip (type 1, the default) needs a
 * return_date on or after the outbound date; the airports must differ.
 */
export const flights: Shape = {
  name: 'FLIGHTS',
  description:
    'Flights: departure_id, arrival_id (IATA codes), outbound_date, return_date (required for a round trip, type 1, the default), optional type (1 round trip, 2 one way), adults (1–9), travel_class (1–4), currency, hl',
  schema: z
    .object({
      departure_id: airports,
      arrival_id: airports,
      outbound_date: day,
      return_date: day.optional(),
      type: z.union([z.literal(1), z.literal(2)]).optional(),
      adults: z.int().min(1).max(9).optional(),
      travel_class: z.int().min(1).max(4).optional(),
      stops: z.int().min(0).max(3).optional(),
      currency: currencyCode.optional(),
      hl,
    })
    .refine((b) => b.departure_id !== b.arrival_id, {
      message: 'must differ from departure_id',
      path: ['arrival_id'],
    })
    .refine((b) => (b.type ?? 1) !== 1 || b.return_date !== undefined, {
      message: 'return_date is required for a round trip (type 1)',
      path: ['return_date'],
    })
    .refine((b) => b.return_date === undefined || b.return_date >= b.outbound_date, {
      message: 'must not be before outbound_date',
      path: ['return_date'],
    }),
  example: {
    departure_id: 'LIS',
    arrival_id: 'JFK',
    outbound_date: '2027-06-01',
    return_date: '2027-06-15',
  },
}

/** Shape LOCATIONS: SerpAPI's locations for the `location` parameter. */
export const locations: Shape = {
  name: 'LOCATIONS',
  description: 'Locations matching a name: q, optional limit (1–100)',
  schema: z.object({
    q: z.string().trim().min(1).max(200),
    limit: z.int().min(1).max(100).optional(),
  }),
  example: { q: 'Austin', limit: 5 },
}
