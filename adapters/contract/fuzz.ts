/**
 * Random HTTP requests for fuzzing a paid HTTP surface (fast-check): methods, raw paths (variants of
 * the priced paths and random ones), headers, bodies, and payment credentials built by mutating
 * valid ones (`X-PAYMENT`, `Authorization: Payment`, `PAYMENT-SIGNATURE`). Requests are sent over a
 * few kept-alive loopback connections with Node's `http` client, which sends the path and the
 * method exactly as given.
 *
 * @module
 */
import { Agent, request as httpRequest } from 'node:http'
import fc from 'fast-check'

/** One generated request. */
export type FuzzRequest = {
  method: string
  /** The request target as sent (not normalised). */
  path: string
  headers: Record<string, string>
  body: Uint8Array | string | undefined
}

/** What came back: a status, or a transport error (the server closed the connection). */
export type FuzzResult = { status: number } | { error: string }

/** The valid credentials to mutate, and the priced paths to aim at. */
export type FuzzPieces = {
  /** Priced paths exactly as routed (e.g. `/v1/things/1`). */
  paidPaths: readonly string[]
  /** Valid `X-PAYMENT` values. */
  x402: readonly string[]
  /** Valid `Authorization` values (`Payment …`). */
  mpp: readonly string[]
  /** Bodies the priced routes accept, sent as they are now and then. Default none. */
  bodies?: readonly string[] | undefined
  /**
   * Whole requests that pay (the right path, body and credential): sent now and then as they are
   * (each is served at most once, then a replay) or with one part changed. Default none.
   */
  paying?: readonly FuzzRequest[] | undefined
}

const tokenChars = [
  ...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789',
  ...("!#$%&'*+-.^_`|~" as string),
]
/** Printable ASCII, as a header value may carry it. */
const headerChars = Array.from({ length: 95 }, (_, i) => String.fromCharCode(0x20 + i))
/** What Node's client lets through in a request target (no space, no control, no DEL). */
const pathChars = Array.from({ length: 94 }, (_, i) => String.fromCharCode(0x21 + i))
const base64Chars = [
  ...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_',
  ...('.,:"{}[] ' as string),
]

const token = fc.string({ unit: fc.constantFrom(...tokenChars), minLength: 1, maxLength: 12 })
const headerText = (maxLength: number) =>
  fc.string({ unit: fc.constantFrom(...headerChars), maxLength })

/** Headers the transport owns: a random value would only test Node's client. */
const transportHeaders = new Set([
  'host',
  'connection',
  'content-length',
  'transfer-encoding',
  'upgrade',
  'expect',
  'keep-alive',
  'te',
  'trailer',
  'proxy-connection',
  'http2-settings',
])

/** A valid credential changed the ways an attacker or a broken client would change it. */
function mutated(valid: string): fc.Arbitrary<string> {
  const decoded = Buffer.from(valid.replace(/^Payment\s+/i, ''), 'base64').toString('utf8')
  const prefix = valid.startsWith('Payment') ? 'Payment ' : ''
  const json = (() => {
    try {
      return JSON.parse(decoded) as unknown
    } catch {
      return undefined
    }
  })()
  const reencode = (value: unknown) =>
    prefix + Buffer.from(JSON.stringify(value)).toString('base64')
  const variants: fc.Arbitrary<string>[] = [
    // One character replaced, inserted or removed.
    fc
      .tuple(fc.nat({ max: valid.length - 1 }), fc.constantFrom(...base64Chars))
      .map(([at, c]) => valid.slice(0, at) + c + valid.slice(at + 1)),
    fc
      .tuple(fc.nat({ max: valid.length }), fc.constantFrom(...base64Chars))
      .map(([at, c]) => valid.slice(0, at) + c + valid.slice(at)),
    fc.nat({ max: valid.length - 1 }).map((at) => valid.slice(0, at) + valid.slice(at + 1)),
    // Truncated, doubled, padded, re-cased.
    fc.nat({ max: valid.length }).map((at) => valid.slice(0, at)),
    fc.constant(`${valid},${valid}`),
    fc.constant(` ${valid}  `),
    fc.constant(prefix + valid.slice(prefix.length).toLowerCase()),
    // The JSON inside: a field removed, replaced by another type, or a string field mutated.
    fc.constant(prefix + Buffer.from(decoded.replace(/"/, "'")).toString('base64')),
  ]
  if (json !== null && typeof json === 'object') {
    const paths = leafPaths(json)
    const other = fc.oneof(
      fc.constant(null),
      fc.integer(),
      fc.boolean(),
      headerText(40),
      fc.constant({}),
      fc.constant([]),
      fc.constant('x'.repeat(5000)),
      fc.constant('0x'.padEnd(66, 'f')),
    )
    if (paths.length > 0) {
      variants.push(
        fc
          .tuple(fc.constantFrom(...paths), other)
          .map(([path, value]) => reencode(setAt(json, path, value))),
        fc.constantFrom(...paths).map((path) => reencode(setAt(json, path, undefined))),
        fc
          .tuple(fc.constantFrom(...paths), fc.nat(), fc.constantFrom(...base64Chars))
          .map(([path, at, c]) => {
            const current = getAt(json, path)
            if (typeof current !== 'string' || current.length === 0) return reencode(json)
            const i = at % current.length
            return reencode(setAt(json, path, current.slice(0, i) + c + current.slice(i + 1)))
          }),
      )
    }
  }
  return fc.oneof(...variants)
}

type Path = readonly (string | number)[]

function leafPaths(value: unknown, path: Path = []): Path[] {
  if (value === null || typeof value !== 'object') return path.length === 0 ? [] : [path]
  const entries = Array.isArray(value)
    ? value.map((v, i) => [i, v] as const)
    : Object.entries(value as Record<string, unknown>)
  const out: Path[] = path.length === 0 ? [] : [path]
  for (const [key, child] of entries) out.push(...leafPaths(child, [...path, key]))
  return out
}

function getAt(value: unknown, path: Path): unknown {
  let current = value
  for (const key of path) current = (current as Record<string | number, unknown>)?.[key]
  return current
}

function setAt(value: unknown, path: Path, next: unknown): unknown {
  const copy = structuredClone(value) as Record<string | number, unknown>
  let parent = copy
  for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>
  const last = path[path.length - 1] as string | number
  if (next === undefined) delete parent[last]
  else parent[last] = next
  return copy
}

/** A credential value: valid, mutated, random, or oversized. */
function credential(valid: readonly string[], scheme: string): fc.Arbitrary<string> {
  const random = fc.oneof(
    { weight: 20, arbitrary: headerText(120) },
    { weight: 20, arbitrary: fc.string({ unit: fc.constantFrom(...base64Chars), maxLength: 400 }) },
    // Over the 16 KiB credential limit (and Node's header limit: 431, the connection closed).
    { weight: 1, arbitrary: fc.constant('A'.repeat(20_000)) },
  )
  if (valid.length === 0) return random.map((v) => scheme + v)
  return fc.oneof(
    { weight: 1, arbitrary: fc.constantFrom(...valid) },
    { weight: 6, arbitrary: fc.oneof(...valid.map(mutated)) },
    { weight: 3, arbitrary: random.map((v) => scheme + v) },
  )
}

/** Random requests aimed at a paid surface. */
export function fuzzRequests(pieces: FuzzPieces): fc.Arbitrary<FuzzRequest> {
  const segment = fc.oneof(
    fc.constantFrom(
      'v1',
      'V1',
      'things',
      'THINGS',
      'echo',
      'stream',
      'quote',
      'slow',
      'free',
      '1',
      '.',
      '..',
      '',
      '%2F',
      '%2e%2e',
      '%74hings',
      '%00',
      '%zz',
      ';x=1',
      '%5C',
      '\\',
    ),
    fc.string({ unit: fc.constantFrom(...pathChars), maxLength: 8 }),
  )
  const variant = fc
    .tuple(fc.constantFrom(...pieces.paidPaths), fc.constantFrom('', '/', '//', '?', '#', '%20'))
    .chain(([path, suffix]) =>
      fc.constantFrom(
        path + suffix,
        path.toUpperCase(),
        path.replaceAll('/', '//'),
        path.replace('/v1/', '/v1/./'),
        path.replace('/v1/', '/x/../v1/'),
        path.replace('/v1/', '/v1%2F'),
        `http://127.0.0.1${path}`,
      ),
    )
  const path = fc
    .tuple(
      fc.oneof(
        { weight: 4, arbitrary: fc.constantFrom(...pieces.paidPaths) },
        { weight: 3, arbitrary: variant },
        { weight: 3, arbitrary: fc.array(segment, { maxLength: 5 }).map((s) => `/${s.join('/')}`) },
        {
          weight: 1,
          arbitrary: fc.string({ unit: fc.constantFrom(...pathChars), maxLength: 40 }),
        },
      ),
      fc.option(fc.string({ unit: fc.constantFrom(...pathChars), maxLength: 30 }), {
        freq: 4,
      }),
    )
    .map(([p, query]) => (query === null ? p : `${p}?${query}`))
    .filter((p) => p.length > 0)
  const method = fc.oneof(
    { weight: 6, arbitrary: fc.constant('POST') },
    {
      weight: 3,
      arbitrary: fc.constantFrom('GET', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS', 'post'),
    },
    { weight: 1, arbitrary: token.filter((t) => t.toUpperCase() !== 'CONNECT') },
  )
  const headers = fc
    .record(
      {
        'x-payment': credential(pieces.x402, ''),
        authorization: fc.oneof(
          credential(pieces.mpp, 'Payment '),
          headerText(60).map((v) => `Payment ${v}`),
          headerText(60),
        ),
        'payment-signature': credential(pieces.x402, ''),
        'content-type': fc.oneof(
          fc.constantFrom(
            'application/json',
            'application/json; charset=utf-8',
            'application/json; charset=utf-16',
            'text/plain',
            'application/x-www-form-urlencoded',
            'multipart/form-data; boundary=x',
          ),
          headerText(40),
        ),
        'content-encoding': fc.constantFrom('gzip', 'br', 'identity', 'x'),
        'x-forwarded-host': headerText(30),
        'x-forwarded-proto': fc.constantFrom('https', 'http', 'ftp', ''),
        accept: fc.constantFrom('*/*', 'text/event-stream', 'application/json'),
      },
      { requiredKeys: [] },
    )
    .chain((known) =>
      fc.array(fc.tuple(token, headerText(60)), { maxLength: 4 }).map((extra) => {
        const all: Record<string, string> = { ...known }
        for (const [name, value] of extra) {
          if (!transportHeaders.has(name.toLowerCase())) all[name] = value
        }
        return all
      }),
    )
  const body = fc.oneof(
    { weight: 80, arbitrary: fc.constant(undefined) },
    { weight: 60, arbitrary: fc.json({ maxDepth: 3 }) },
    { weight: 40, arbitrary: headerText(200) },
    { weight: 40, arbitrary: fc.uint8Array({ maxLength: 2048 }) },
    ...(pieces.bodies === undefined || pieces.bodies.length === 0
      ? []
      : [{ weight: 40, arbitrary: fc.constantFrom(...pieces.bodies) }]),
    {
      weight: 40,
      arbitrary: fc.constantFrom(
        '{"text":"hi"}',
        '{"text":42}',
        '{"text":"hi","extra":true}',
        '{"text":"' + 'x'.repeat(200) + '"}',
      ),
    },
    // Over the 1 MiB body limit: 413.
    { weight: 1, arbitrary: fc.constant(`{"pad":"${'x'.repeat(1_100_000)}"}`) },
  )
  const random = fc.record({ method, path, headers, body })
  const paying = pieces.paying ?? []
  if (paying.length === 0) return random
  const changed = fc.constantFrom(...paying).chain((request) =>
    fc.oneof(
      fc.constant(request),
      fc.record({
        method,
        path: fc.constant(request.path),
        headers: fc.constant(request.headers),
        body: fc.constant(request.body),
      }),
      fc.record({
        method: fc.constant(request.method),
        path,
        headers: fc.constant(request.headers),
        body: fc.constant(request.body),
      }),
      fc.record({
        method: fc.constant(request.method),
        path: fc.constant(request.path),
        headers,
        body: fc.constant(request.body),
      }),
      fc.record({
        method: fc.constant(request.method),
        path: fc.constant(request.path),
        headers: fc.constant(request.headers),
        body,
      }),
      ...Object.entries(request.headers)
        .filter(([name]) => name === 'x-payment' || name === 'authorization')
        .map(([name, value]) =>
          mutated(value).map((next) => ({
            ...request,
            headers: { ...request.headers, [name]: next },
          })),
        ),
    ),
  )
  return fc.oneof({ weight: 9, arbitrary: random }, { weight: 1, arbitrary: changed })
}

/** A client for {@link sendAll}: kept-alive loopback connections to one server. */
export function fuzzClient(baseUrl: string, connections = 8) {
  const { hostname, port } = new URL(baseUrl)
  const agent = new Agent({ keepAlive: true, maxSockets: connections })

  /**
   * Sends one request. A kept-alive connection the server closed just as it was reused fails
   * without an answer ("socket hang up"): such a request is sent once more on a fresh connection,
   * so that every request the server can answer is answered (and checked).
   */
  async function send(request: FuzzRequest): Promise<FuzzResult> {
    const result = await sendOn(request, agent)
    if (!('error' in result) || result.error.startsWith('client:')) return result
    return sendOn(request, false)
  }

  function sendOn(request: FuzzRequest, via: Agent | false): Promise<FuzzResult> {
    return new Promise((resolve) => {
      let req: ReturnType<typeof httpRequest>
      try {
        req = httpRequest(
          {
            host: hostname,
            port: Number(port),
            method: request.method,
            path: request.path,
            headers: request.headers,
            agent: via,
          },
          (res) => {
            res.resume()
            res.on('end', () => resolve({ status: res.statusCode ?? 0 }))
            res.on('error', (error) => resolve({ error: error.message }))
          },
        )
      } catch (error) {
        // Refused by Node's own client before sending (not a request the server could see).
        resolve({ error: `client: ${(error as Error).message}` })
        return
      }
      req.setTimeout(30_000, () => req.destroy(new Error('timed out')))
      req.on('error', (error) => resolve({ error: error.message }))
      req.end(request.body)
    })
  }

  return {
    /** Sends the requests, `connections` at a time; the results in the same order. */
    async sendAll(requests: readonly FuzzRequest[]): Promise<FuzzResult[]> {
      const results: FuzzResult[] = new Array(requests.length)
      let next = 0
      const worker = async () => {
        while (next < requests.length) {
          const i = next++
          results[i] = await send(requests[i] as FuzzRequest)
        }
      }
      await Promise.all(Array.from({ length: connections }, worker))
      return results
    },
    close: () => agent.destroy(),
  }
}
