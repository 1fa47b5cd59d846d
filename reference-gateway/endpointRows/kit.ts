/**
 * The building blocks of the rows of the gateway's table-driven endpoint suite: an upstream request
 * (hop) installed with nock, and row constructors for JSON, query-string and file answers. Test
 * support only.
 *
 * @module
 */
import nock from 'nock'
import { expect } from 'vitest'
import { capturedForm } from '../upstreams/testHelpers.js'

/** Per endpoint: the exact upstream request nock expects, its answer, and what the buyer must get. */
export type Expectation = {
  /** Installs the interceptors for a successful call of `body` (the shape's example). */
  mock(body: Record<string, unknown>): nock.Scope[]
  /** Checks the mapped answer. */
  answer(json: Record<string, unknown>, body: Record<string, unknown>): Promise<void> | void
  /** Installs a first upstream request that fails with `status` (after any media download). */
  fail(status: number, body: Record<string, unknown>): nock.Scope
  /** A body that breaks the shape and the field the 400 names, when dropping the first field does not. */
  invalid?: { body: unknown; field: string }
}

/** What the rows need from the suite. */
export type RowContext = {
  /** The provider key the gateway is configured with, by credential name. */
  keyOf(credential: string): string
  /** Downloads a blob URL of the gateway and returns its bytes (asserting it is one). */
  blob(url: unknown): Promise<Buffer>
}

/** One upstream request: where, how, with what, and its answer. */
export type Hop = {
  origin: string
  method: 'GET' | 'POST'
  path: string
  /** Exact query (the key included where the provider wants it). */
  query?: Record<string, string>
  /** Headers that must be present (values or patterns). */
  headers?: Record<string, string | RegExp>
  /** Headers that must be absent. */
  absent?: string[]
  /** Exact JSON body, or a check of the raw request (multipart). */
  body?: unknown
  form?: (form: FormData) => Promise<boolean> | boolean
  reply: [status: number, body: unknown, headers?: Record<string, string>]
  /** A media download before the provider call (installed by `fail` too). */
  download?: boolean
}

export function install(hop: Hop): nock.Scope {
  const scope = nock(hop.origin, {
    ...(hop.headers ? { reqheaders: hop.headers } : {}),
    ...(hop.absent ? { badheaders: hop.absent } : {}),
  })
  const [status, reply, headers] = hop.reply
  let interceptor: nock.Interceptor
  if (hop.method === 'GET') interceptor = scope.get(hop.path)
  else if (hop.form) interceptor = scope.post(hop.path, () => true)
  else interceptor = scope.post(hop.path, hop.body as nock.RequestBodyMatcher)
  if (hop.query) interceptor = interceptor.query(hop.query)
  if (hop.form) {
    const check = hop.form
    return interceptor.reply(async function (_uri, body) {
      const form = await capturedForm(body, String(this.req.headers['content-type']))
      return (await check(form)) ? [status, reply as nock.Body, headers] : [418, { wrong: 'form' }]
    })
  }
  return interceptor.reply(status, reply as nock.Body, headers)
}

function failHop(hop: Hop, status: number): nock.Scope {
  const scope = nock(hop.origin)
  const interceptor = hop.method === 'GET' ? scope.get(hop.path) : scope.post(hop.path, () => true)
  return (hop.query ? interceptor.query(true) : interceptor).reply(status, {})
}

/** An expectation from the hops a body makes and the answer the buyer must get. */
export function rows(
  hops: (body: Record<string, unknown>) => Hop[],
  answer: Expectation['answer'],
  invalid?: Expectation['invalid'],
): Expectation {
  return {
    mock: (body) => hops(body).map(install),
    answer,
    fail(status, body) {
      const all = hops(body)
      for (const hop of all.filter((h) => h.download)) install(hop)
      const first = all.find((h) => !h.download) as Hop
      return failHop(first, status)
    },
    ...(invalid ? { invalid } : {}),
  }
}

/** Media bytes the rows answer with. */
export const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex')
export const mp3 = Buffer.from('494433030000000000', 'hex')
export const pdf = Buffer.from('%PDF-1.4 stub', 'utf8')
export const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64')

/** Row constructors bound to the suite's keys and blob reader. */
export function rowKit({ keyOf, blob }: RowContext) {
  const bearer = (credential: string) => ({ authorization: `Bearer ${keyOf(credential)}` })
  /** A JSON POST with a key header, answered `reply`, passed through. */
  const post = (
    origin: string,
    path: string,
    headers: Record<string, string | RegExp>,
    body: (b: Record<string, unknown>) => unknown,
    reply: unknown = { ok: path },
    expected: unknown = reply,
  ) =>
    rows(
      (b) => [{ origin, method: 'POST', path, headers, body: body(b), reply: [200, reply] }],
      (out) => expect(out).toEqual(expected),
    )
  /** A GET with an exact query, answered `reply`, mapped to `expected`. */
  const get = (
    origin: string,
    path: string,
    query: (b: Record<string, unknown>) => Record<string, string>,
    reply: unknown = { ok: path },
    expected: unknown = reply,
    headers: Record<string, string> = {},
  ) =>
    rows(
      (b) => [{ origin, method: 'GET', path, query: query(b), headers, reply: [200, reply] }],
      (out) => expect(out).toEqual(expected),
    )
  /** A file answer: stored and answered as `{ url, content_type, ...extra }`. */
  const file = (
    hops: (b: Record<string, unknown>) => Hop[],
    bytes: Buffer,
    type: string,
    extra = {},
  ) =>
    rows(hops, async (out) => {
      expect(out).toMatchObject({ content_type: type, ...extra })
      expect(await blob(out.url)).toEqual(bytes)
    })

  const together = 'https://api.together.xyz'
  const key = keyOf
  const chat = (origin: string, path: string, credential: string, model: string) =>
    post(origin, path, bearer(credential), (b) => ({ model, ...b }), {
      id: 'chatcmpl-1',
      choices: [{ index: 0 }],
    })

  return { bearer, post, get, file, chat, key, together, blob }
}
