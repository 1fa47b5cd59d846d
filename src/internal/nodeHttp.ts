/**
 * Node `http` translation shared by the Express and Koa adapters: a Web `Request` from an
 * `IncomingMessage` (headers from `rawHeaders`, the body read once), the engine's response written to
 * a `ServerResponse`, and a paid response's success headers and outcome hooked onto it.
 *
 * @module
 */
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http'
import type { PaidDecision, PlainResponse } from '../paywall.js'

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
    const chunks: Buffer[] = []
    let size = 0
    const done = () => {
      request.off('data', onData)
      request.off('end', done)
      request.off('error', reject)
      resolve(size === 0 ? undefined : Buffer.concat(chunks, size))
    }
    const onData = (chunk: Buffer) => {
      chunks.push(chunk)
      size += chunk.byteLength
      if (size > limit) {
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
 * A Web `Request` for the engine: method, URL (`http(s)://Host` + the request target as received),
 * headers in their received order from `rawHeaders`, and the body bytes.
 */
export function toWebRequest(
  request: IncomingMessage,
  rawUrl: string,
  body: Uint8Array | undefined,
): Request {
  const headers = new Headers()
  const raw = request.rawHeaders
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!
    if (name.startsWith(':')) continue
    try {
      headers.append(name, raw[i + 1]!)
    } catch {
      // A header value the Fetch API refuses cannot matter to a payment: leave it out.
    }
  }
  const scheme = (request.socket as { encrypted?: boolean }).encrypted === true ? 'https' : 'http'
  const method = request.method ?? 'GET'
  const init: RequestInit = { method, headers }
  if (body !== undefined && method !== 'GET' && method !== 'HEAD')
    init.body = body as Uint8Array<ArrayBuffer>
  return new Request(urlOf(scheme, request.headers.host, rawUrl), init)
}

function urlOf(scheme: string, host: string | undefined, rawUrl: string): string {
  const target = rawUrl.startsWith('/') ? rawUrl : pathOfAbsolute(rawUrl)
  try {
    return new URL(`${scheme}://${host ?? 'localhost'}${target}`).href
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

/** Writes an engine answer (400/402/413/503) to a Node response, with its exact bytes. */
export function sendPlain(target: ServerResponse, plain: PlainResponse): void {
  const body = Buffer.from(plain.body, 'utf8')
  target.statusCode = plain.status
  for (const [name, value] of Object.entries(plain.headers)) target.setHeader(name, value)
  target.setHeader('Content-Length', body.byteLength)
  target.end(body)
}

/**
 * Hooks a paid decision onto a Node response: the success headers are added when the status line
 * is written (every write path goes through `writeHead`, so it is before the first byte, and no
 * byte is held back), and the outcome is recorded when the response finishes — or, when it is torn
 * down early, as a failure if the server destroyed it with an error and as served if the buyer hung
 * up.
 */
export function attachPaidResponse(target: ServerResponse, decision: PaidDecision): void {
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
  const ignore = () => {}
  target.once('finish', () => {
    void decision.complete({ status: target.statusCode }).catch(ignore)
  })
  target.once('close', () => {
    if (target.writableFinished) return
    const errored = target.errored
    void decision
      .complete(errored ? { error: errored } : { status: target.statusCode })
      .catch(ignore)
  })
}
