/**
 * Node `http` translation shared by the Express and Koa adapters: a Web `Request` from an
 * `IncomingMessage` (headers from `rawHeaders`, the body read once), the engine's response written to
 * a `ServerResponse`, and a paid response's success headers and outcome hooked onto it.
 *
 * @module
 */
import type {
  IncomingHttpHeaders,
  IncomingMessage,
  OutgoingHttpHeaders,
  ServerResponse,
} from 'node:http'
import type { RequestView } from '../engine/requestView.js'
import type { PaidDecision, PlainResponse } from '../engine/types.js'
import { cappedBytes } from './cappedBytes.js'

/**
 * Reads a request body once, keeping at most `limit + 1` bytes (one more than the limit is enough for
 * the engine to answer 413). When a body parser already consumed the stream, its result is turned
 * back into bytes (`Buffer` as is, string as UTF-8, anything else as JSON).
 */
export async function readNodeBody(
  request: IncomingMessage,
  limit: number,
  parsed: unknown,
): Promise<Uint8Array | undefined> {
  if (request.readableEnded || (request as { _body?: unknown })._body === true) {
    if (parsed === undefined) return undefined
    if (parsed instanceof Uint8Array) return parsed
    return Buffer.from(typeof parsed === 'string' ? parsed : JSON.stringify(parsed), 'utf8')
  }
  const length = request.headers['content-length']
  if (length === undefined && request.headers['transfer-encoding'] === undefined) return undefined
  if (Number(length ?? '0') > limit) return undefined
  return new Promise((resolve, reject) => {
    const kept = cappedBytes(limit)
    const done = () => {
      request.off('data', onData)
      request.off('end', done)
      request.off('error', reject)
      resolve(kept.size === 0 ? undefined : kept.bytes())
    }
    const onData = (chunk: Buffer) => {
      if (!kept.push(chunk)) {
        // Enough to answer 413; the rest stays unread (the connection is not reused).
        request.pause()
        done()
      }
    }
    request.on('data', onData)
    request.once('end', done)
    request.once('error', reject)
  })
}

/**
 * The engine's view of a Node request: its absolute URL (`http(s)://Host` + the request target as
 * received), a header look-up over Node's parsed headers, and the body bytes when they were read.
 * No Web `Request` is built: on the 402 path that construction cost more than the decision itself.
 */
export function nodeRequestView(
  request: IncomingMessage,
  rawUrl: string,
  bodyBytes: Uint8Array | undefined,
): RequestView {
  const scheme = (request.socket as { encrypted?: boolean }).encrypted === true ? 'https' : 'http'
  const { headers } = request
  return {
    url: absoluteUrl(scheme, headers.host ?? (headers[':authority'] as string | undefined), rawUrl),
    method: request.method,
    headers: nodeHeaders(headers),
    bodyBytes,
  }
}

/**
 * The engine's view of a Node request whose absolute URL a server already built (as
 * `@hono/node-server` does for its `Request`): the same as {@link nodeRequestView} without working
 * the URL out a second time.
 */
export function nodeRequestViewAt(
  request: IncomingMessage,
  url: string,
  bodyBytes: Uint8Array | undefined,
): RequestView {
  return { url, method: request.method, headers: nodeHeaders(request.headers), bodyBytes }
}

/**
 * `Headers.get` over a Node request's parsed headers: the engine asks in lower case, as Node keys
 * them; another spelling is lower-cased on a miss; repeated values are joined with `, `.
 */
export function nodeHeaders(headers: IncomingHttpHeaders): Pick<Headers, 'get'> {
  return {
    get(name: string): string | null {
      let value = headers[name]
      if (value === undefined) {
        const lower = name.toLowerCase()
        if (lower !== name) value = headers[lower]
      }
      return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value
    },
  }
}

/**
 * The absolute URL of a request target as received: `scheme://host` + the target when the host is
 * well-formed and the target is a path (what every request but a proxy's looks like), else worked
 * out by the URL parser (`localhost` for a host that is not one).
 */
function absoluteUrl(scheme: string, host: string | undefined, rawUrl: string): string {
  if (host !== undefined && rawUrl.startsWith('/') && hostPattern.test(host)) {
    return `${scheme}://${host}${rawUrl}`
  }
  return urlOf(scheme, host, rawUrl)
}

/** A host name or IP literal with an optional port; anything else in `Host` is not used. */
const hostPattern =
  /^(?:[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.?|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?$/

function urlOf(scheme: string, host: string | undefined, rawUrl: string): string {
  const target = rawUrl.startsWith('/') ? rawUrl : pathOfAbsolute(rawUrl)
  const authority = host !== undefined && hostPattern.test(host) ? host : 'localhost'
  try {
    return new URL(`${scheme}://${authority}${target}`).href
  } catch {
    try {
      return new URL(`${scheme}://localhost${target}`).href
    } catch {
      return `${scheme}://localhost/`
    }
  }
}

function pathOfAbsolute(rawUrl: string): string {
  try {
    const url = new URL(rawUrl)
    return url.pathname + url.search
  } catch {
    return '/'
  }
}

/** The full headers of an engine answer, with `Content-Length` in bytes. */
export type EncodedPlain = { headers: Readonly<Record<string, string>> }

/** Encoded answers, per answer object: the engine hands out the same 402 until its expiry moves. */
const encoded = new WeakMap<PlainResponse, EncodedPlain>()

/**
 * The full headers of an engine answer (remembered per answer object). The body is written as the
 * string it is: Node then sends the status line, the headers and the body in one write, where a
 * `Buffer` body would be a second chunk of a `writev`.
 */
export function encodePlain(plain: PlainResponse): EncodedPlain {
  let out = encoded.get(plain)
  if (out === undefined) {
    const length = String(Buffer.byteLength(plain.body, 'utf8'))
    out = { headers: { ...plain.headers, 'Content-Length': length } }
    encoded.set(plain, out)
  }
  return out
}

/** Writes an engine answer (400/402/413/503) to a Node response, with its exact bytes. */
export function sendPlain(target: ServerResponse, plain: PlainResponse): void {
  target.writeHead(plain.status, encodePlain(plain).headers)
  target.end(plain.body, 'utf8')
}

/**
 * Hooks a paid decision onto a Node response: the success headers are added when the status line
 * is written (every write path goes through `writeHead`, so it is before the first byte, and no
 * byte is held back), and the outcome is recorded when the response finishes — or, when it is torn
 * down early: a failure if the server destroyed it with an error, served if the buyer hung up after
 * the status line was written (mid-stream), and a hang-up (`{ hungUp: true }`) if the buyer hung up
 * before it: refunded when the paid work had not started, served once it had.
 *
 * Call it just BEFORE the handler runs, so that a hang-up during the handler is seen: it starts the
 * paid work ({@link PaidDecision.start}; with the route's default `commit`, a hang-up from now on
 * is served). With `untilHandled` the mount calls {@link PaidDecision.handled} once its handler is
 * done, and a hang-up after the work started is recorded served then. Returns `false`
 * when the buyer is already gone (it hung up while the payment settled): the refund is recorded at
 * once and the handler should not run.
 */
export function attachPaidResponse(
  target: ServerResponse,
  decision: PaidDecision,
  options?: { readonly untilHandled?: boolean | undefined },
): boolean {
  const ignore = () => {}
  if (target.destroyed || target.socket?.destroyed === true) {
    void decision.complete({ hungUp: true }).catch(ignore)
    return false
  }
  const writeHead = target.writeHead
  target.writeHead = function paidWriteHead(
    this: ServerResponse,
    statusCode: number,
    ...rest: unknown[]
  ) {
    const extra = decision.isFailure({ status: statusCode }) ? {} : decision.headersFor(statusCode)
    const last = rest[rest.length - 1]
    if (Array.isArray(last)) {
      // Raw header arrays cannot be merged with setHeader(); append to the array instead.
      for (const [name, value] of Object.entries(extra)) {
        if (Array.isArray(last[0])) last.push([name, value])
        else last.push(name, value)
      }
    } else if (last !== undefined && typeof last === 'object' && last !== null) {
      Object.assign(last as OutgoingHttpHeaders, extra)
    } else if (!this.headersSent) {
      for (const [name, value] of Object.entries(extra)) this.setHeader(name, value)
    }
    return (writeHead as (...args: unknown[]) => ServerResponse).call(this, statusCode, ...rest)
  } as ServerResponse['writeHead']
  decision.start(options)
  // Whether 'finish' was emitted. Not `writableFinished`: a response destroyed and then ended reads
  // as finished (nothing left to write, no socket) though it never finished.
  let finished = false
  target.once('finish', () => {
    finished = true
    void decision.complete({ status: target.statusCode }).catch(ignore)
  })
  target.once('close', () => {
    if (finished) return
    const errored = target.errored
    void decision
      .complete(
        errored
          ? { error: errored }
          : target.headersSent
            ? { status: target.statusCode }
            : { hungUp: true },
      )
      .catch(ignore)
  })
  return true
}
