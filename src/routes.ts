/**
 * Route tables for sellers: `{ 'POST /v1/things/:id': '0.02', ... }` compiled once, and matched on a
 * normalised path so that a priced route cannot be reached unpaid by spelling its path differently.
 *
 * Matching is deliberately a SUPERSET of what Express, Koa (+ `@koa/router`) and Hono route to a
 * handler: a spelling that no framework routes anywhere may still be priced (a harmless 402 instead
 * of a 404), but no spelling that reaches the handler escapes the price. The rules, applied by
 * {@link normalizePath} in this order:
 *
 * 1. The query (`?…`) and fragment (`#…`) are dropped; an absolute-form target
 *    (`GET http://host/x HTTP/1.1`, which Express routes by its path) is reduced to its path.
 * 2. Backslash is matched both ways: as a separator (`\x` → `/x`), as WHATWG URL parsing and so
 *    Hono treat it, and as a character inside one segment, as Express and `@koa/router` route a
 *    raw one (`/things/\` reaches `/things/:id` with the id `\`).
 * 3. Percent-encoding is decoded exactly once (`%2561` is the literal `%61`, never `a`); an invalid
 *    escape (`%zz`) is kept as written.
 * 4. An encoded separator (`%2F`, `%5C`) is matched both ways: as a separator (`/a%2Fb` = `/a/b`)
 *    and as a character inside one segment (so `/things/a%2Fb` still meets `/things/:id`).
 * 5. Empty segments are dropped (`//x///y` = `/x/y`), which also removes a trailing slash.
 * 6. Dot segments are matched both ways: resolved (`/./x`, `/y/../x`, `%2e%2e` included; `..` never
 *    climbs above `/`), as WHATWG URL parsing and so Hono see the path, and kept as literal
 *    segments, as Express and `@koa/router` route them (`/things/..` reaches `/things/:id` with
 *    the id `..`).
 * 7. Case-insensitive by default (`/PAID` = `/paid`), as Express and `@koa/router` match by
 *    default; `caseSensitive: true` turns it off (Hono is case-sensitive, so over-matching there is
 *    harmless).
 * 8. `HEAD` requests match `GET` routes (Express and Koa run GET handlers for HEAD).
 *
 * Patterns: literal segments, `:name` (exactly one non-empty segment) and a final `*` (any rest,
 * including nothing). A key without a method (`'/x'`) or with `*` or `ALL` prices every method.
 *
 * @module
 */

import type { PaidRoute } from './engine/types.js'
import { PaymentError } from './errors.js'
import type { PriceInput } from './money.js'

/** One entry of a route table: a full {@link PaidRoute} or just its price (`'0.02'`, `'$0.02'`). */
export type RouteEntry = PaidRoute | PriceInput

/**
 * A route table: `'METHOD /path/:param'` (or `'/path'` for every method) → route or price. Paths are
 * full paths from the server root (Express `originalUrl`, Koa `ctx.originalUrl`, Hono `c.req.path`).
 */
export type RouteTable = Readonly<Record<string, RouteEntry>>

/** Options of {@link compileRoutes} and {@link normalizePath}. */
export type RouteMatchOptions = {
  /** Match letter case exactly. Default `false` (Express/Koa default). */
  caseSensitive?: boolean | undefined
}

/** One segment of a compiled path pattern: literal text, a `:param`, or the `*` rest. */
export type Segment = { kind: 'literal'; value: string } | { kind: 'param' } | { kind: 'rest' }

/** One compiled route. */
export type CompiledRoute = {
  /** The table key, as written. */
  readonly key: string
  /** Upper-case method, or `undefined` for every method. */
  readonly method: string | undefined
  readonly route: PaidRoute
  readonly segments: readonly Segment[]
}

/** A compiled route table; see {@link compileRoutes}. */
export type CompiledRoutes = {
  readonly routes: readonly CompiledRoute[]
  readonly caseSensitive: boolean
}

const methodPattern = /^[A-Za-z]{1,16}$/
const maxPathLength = 16 * 1024

/**
 * Turns a price or route into a {@link PaidRoute}.
 *
 * @example
 * toPaidRoute('0.02') // { price: '0.02' }
 */
export function toPaidRoute(entry: RouteEntry): PaidRoute {
  return typeof entry === 'object' && entry !== null ? entry : { price: entry }
}

/**
 * Compiles a route table once. Throws a `PaymentError` `invalid_config` naming a malformed key (a
 * programming error, found at start-up).
 *
 * @param table - `'POST /v1/things/:id'` → `'0.02'` or a {@link PaidRoute}.
 * @param options - `caseSensitive` (default false).
 * @example
 * const routes = compileRoutes({ 'POST /v1/answer': '0.02', 'GET /v1/files/*': { price: '0.01' } })
 */
export function compileRoutes(table: RouteTable, options: RouteMatchOptions = {}): CompiledRoutes {
  const caseSensitive = options.caseSensitive === true
  const routes: CompiledRoute[] = []
  for (const [key, entry] of Object.entries(table)) {
    const trimmed = key.trim()
    const space = trimmed.search(/\s/)
    const methodText = space === -1 ? undefined : trimmed.slice(0, space)
    const path = space === -1 ? trimmed : trimmed.slice(space).trim()
    if (methodText !== undefined && !methodPattern.test(methodText) && methodText !== '*') {
      throw routeError(key, 'the method must be letters, like "POST /path".')
    }
    if (!path.startsWith('/')) throw routeError(key, 'the path must start with "/".')
    const upper = methodText?.toUpperCase()
    const method = upper === undefined || upper === '*' || upper === 'ALL' ? undefined : upper
    const parts = splitNormalised(path, caseSensitive, false)
    const segments: Segment[] = parts.map((part, index) => {
      if (part === '*') {
        if (index !== parts.length - 1) {
          throw routeError(key, '"*" is only allowed as the last segment.')
        }
        return { kind: 'rest' }
      }
      if (part.startsWith(':') && part.length > 1) return { kind: 'param' }
      return { kind: 'literal', value: part }
    })
    routes.push({ key, method, route: toPaidRoute(entry), segments })
  }
  return { routes, caseSensitive }
}

/**
 * The normalised form of a request path (rules 1–7 in the module comment), with encoded separators
 * treated as separators. Used for matching only: the request itself is never rewritten.
 *
 * @example
 * normalizePath('//v1/./Things/%61%2Fb/../c/?x=1') // '/v1/things/a/c'
 */
export function normalizePath(rawPath: string, options: RouteMatchOptions = {}): string {
  return `/${splitNormalised(pathOf(rawPath), options.caseSensitive === true, true).join('/')}`
}

/**
 * The route a request is for, or `undefined` when it is not priced.
 *
 * @param table - from {@link compileRoutes}.
 * @param method - the request method (`HEAD` also matches `GET` routes).
 * @param rawUrl - the request target as received (path and query, or absolute form), undecoded.
 * @example
 * matchRoute(routes, 'POST', '/v1//answer/')?.price // '0.02'
 */
export function matchRoute(
  table: CompiledRoutes,
  method: string,
  rawUrl: string,
): PaidRoute | undefined {
  if (table.routes.length === 0) return undefined
  const path = pathOf(rawUrl)
  const upper = method.toUpperCase()
  const cased = table.caseSensitive
  const found = find(table, upper, splitNormalised(path, cased, true))
  if (found !== undefined) return found
  // Rule 4: an encoded separator may also be a character inside one segment (`:id` = `a/b`).
  const encodedSeparator = /%(?:2f|5c)/i.test(path)
  if (encodedSeparator) {
    const inSegment = find(table, upper, splitNormalised(path, cased, false))
    if (inSegment !== undefined) return inSegment
  }
  // Rule 2: Express and Koa route a raw backslash as a character of its segment.
  if (path.includes('\\')) {
    const literal = path.replaceAll('\\', '%5C')
    const inSegment =
      find(table, upper, splitNormalised(literal, cased, false)) ??
      find(table, upper, splitNormalised(literal, cased, false, false))
    if (inSegment !== undefined) return inSegment
  }
  // Rule 6: Express and Koa route `.` and `..` as they are (`/things/..` meets `/things/:id`).
  if (!/\.|%2e/i.test(path)) return undefined
  return (
    find(table, upper, splitNormalised(path, cased, true, false)) ??
    (encodedSeparator ? find(table, upper, splitNormalised(path, cased, false, false)) : undefined)
  )
}

function find(
  table: CompiledRoutes,
  method: string,
  path: readonly string[],
): PaidRoute | undefined {
  for (const candidate of table.routes) {
    if (
      candidate.method !== undefined &&
      candidate.method !== method &&
      !(method === 'HEAD' && candidate.method === 'GET')
    ) {
      continue
    }
    if (matches(candidate.segments, path)) return candidate.route
  }
  return undefined
}

function matches(pattern: readonly Segment[], path: readonly string[]): boolean {
  for (let i = 0; i < pattern.length; i++) {
    const segment = pattern[i]!
    if (segment.kind === 'rest') return true
    const part = path[i]
    if (part === undefined) return false
    if (segment.kind === 'literal' && segment.value !== part) return false
  }
  return pattern.length === path.length
}

/** Rule 1: the path of a request target, query and fragment dropped, absolute form reduced. */
function pathOf(rawUrl: string): string {
  let target = rawUrl.length > maxPathLength ? rawUrl.slice(0, maxPathLength) : rawUrl
  const end = target.search(/[?#]/)
  if (end !== -1) target = target.slice(0, end)
  if (!target.startsWith('/') && !target.startsWith('\\')) {
    const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/\\]*/.exec(target)
    if (scheme !== null) target = target.slice(scheme[0].length)
  }
  return target
}

const plain = /^[A-Za-z0-9\-_~./:*]*$/

/**
 * Rules 2–7. `splitEncoded` decides rule 4: whether `%2F`/`%5C` split segments; `resolveDots`
 * rule 6: whether `.` and `..` are resolved or kept as segments.
 */
function splitNormalised(
  path: string,
  caseSensitive: boolean,
  splitEncoded: boolean,
  resolveDots = true,
): string[] {
  if (plain.test(path) && !path.includes('//')) {
    const cased = caseSensitive ? path : path.toLowerCase()
    const parts = cased.split('/').filter((part) => part !== '')
    if (!resolveDots || (!parts.includes('.') && !parts.includes('..'))) return parts
  }
  const out: string[] = []
  for (const raw of path.split(/[/\\]/)) {
    if (raw === '') continue
    const decoded = decodeOnce(raw)
    const pieces = splitEncoded ? decoded.split(/[/\\]/) : [decoded]
    for (const piece of pieces) {
      if (piece === '') continue
      if (resolveDots && piece === '.') continue
      if (resolveDots && piece === '..') {
        out.pop()
        continue
      }
      out.push(caseSensitive ? piece : piece.toLowerCase())
    }
  }
  return out
}

/** Rule 3: decodes valid `%XX` escapes once (UTF-8), keeping invalid ones as written. */
function decodeOnce(segment: string): string {
  if (!segment.includes('%')) return segment
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => {
      try {
        return decodeURIComponent(run)
      } catch {
        return run
      }
    })
  }
}

/** A route key that cannot be compiled: `invalid_config`, naming the route. */
function routeError(key: string, problem: string): PaymentError {
  return new PaymentError('invalid_config', `Route "${key}": ${problem}`, {
    details: { route: key.slice(0, 200) },
  })
}
