/**
 * A `fetch` over Node's `http`/`https` modules, with keep-alive connections: the ledger's gRPC-web
 * calls and the reference gateway's upstream calls use it on Node, where it costs markedly less CPU
 * per call than the global (undici) `fetch` (`bench/settle-load.ts`, `bench/gateway/run.ts`).
 *
 * What it does: method, headers and body of a URL + init or of a `Request` (its body is read whole
 * first, so `FormData` and the like are encoded as `fetch` would); `signal` (an aborted call rejects
 * with the signal's reason, also mid-body). Answers whose type is JSON, gRPC or text are read whole
 * (up to `maxBufferedBytes`) before the `Response` is returned; any other answer (`text/event-stream`,
 * audio, images, …) is returned as soon as its headers arrive, its body streamed as it comes.
 * Redirects are not followed (as `redirect: 'manual'`). A call sent on a kept-alive connection that the
 * server had closed before answering is sent once more on a new one.
 *
 * @module
 */
import http from 'node:http'
import https from 'node:https'
import { Readable } from 'node:stream'
import { PaymentError } from '../errors.js'

const agents = {
  'http:': new http.Agent({ keepAlive: true }),
  'https:': new https.Agent({ keepAlive: true }),
} as const

/** Statuses whose `Response` must not have a body. */
const nullBodyStatuses = new Set([101, 103, 204, 205, 304])

/** Answer types read whole before the `Response` is returned. */
const bufferedTypes = /json|grpc|^text\/(?!event-stream)/i

/** The bytes of the answers read whole, by the `Response` that carries them. */
const buffered = new WeakMap<Response, Uint8Array>()

/**
 * The whole body of an answer of this module's `fetch` that was read before it was returned, handed
 * over once (the `Response` is consumed by this call in the reader's eyes: its own body stream is
 * left unread); `undefined` for any other `Response`, whose body is then read as usual. Spares a
 * consumer that wants the bytes the Web stream set up around them.
 */
export function takeBufferedBody(response: Response): Uint8Array | undefined {
  const bytes = buffered.get(response)
  if (bytes !== undefined) buffered.delete(response)
  return bytes
}

/** Options of {@link createNodeFetch}. */
export type NodeFetchOptions = {
  /** Largest answer read whole; a larger one rejects. Default 16 MiB. */
  maxBufferedBytes?: number | undefined
}

/** Creates a Node `fetch` (see the module's description). */
export function createNodeFetch(options: NodeFetchOptions = {}): typeof fetch {
  const maxBufferedBytes = options.maxBufferedBytes ?? 16 * 1024 * 1024
  const nodeFetch: typeof fetch = async (input, init = {}) => {
    const encoded = init.body
    if (encoded != null && typeof encoded !== 'string' && !(encoded instanceof Uint8Array)) {
      // FormData, Blob, streams …: let a Request encode it (with its content type), then send that.
      return nodeFetch(new Request(input, init))
    }
    const request = input instanceof Request ? input : undefined
    const url = new URL(request?.url ?? String(input))
    const headers: Record<string, string> = {}
    const given =
      init.headers === undefined
        ? request?.headers
        : init.headers instanceof Headers
          ? init.headers
          : new Headers(init.headers)
    given?.forEach((value, name) => {
      headers[name] = value
    })
    const signal = init.signal ?? request?.signal ?? undefined
    let body = init.body as Uint8Array | string | null | undefined
    if (body === undefined && request !== undefined && request.body !== null) {
      body = new Uint8Array(await request.arrayBuffer())
    }
    return send(
      url,
      init.method ?? request?.method ?? 'GET',
      headers,
      body,
      signal,
      maxBufferedBytes,
    )
  }
  return nodeFetch
}

/**
 * Whether a call failed because the kept-alive connection it was sent on had been closed by the
 * server (idle, the usual race of keep-alive: the server gives up on a connection just as the client
 * reuses it) before any answer came. The server almost certainly did not take the request (a server
 * that fails while handling one answers or times out, it does not reset a reused connection at
 * once), so it is sent once more on a new connection, as browsers do; calls that reach the ledger
 * are idempotent by digest, and the gateway's upstream calls are retried within a budget anyway.
 */
function closedWhileIdle(outgoing: http.ClientRequest, error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code
  return outgoing.reusedSocket && (code === 'ECONNRESET' || code === 'EPIPE')
}

function send(
  url: URL,
  method: string,
  headers: Record<string, string>,
  body: Uint8Array | string | null | undefined,
  signal: AbortSignal | undefined,
  maxBufferedBytes: number,
  retried = false,
): Promise<Response> {
  const secure = url.protocol === 'https:'
  return new Promise((resolve, reject) => {
    const outgoing = (secure ? https : http).request(
      url,
      { method, headers, agent: secure ? agents['https:'] : agents['http:'], signal },
      (incoming) => {
        const status = incoming.statusCode ?? 502
        const responseHeaders = new Headers()
        const raw = incoming.rawHeaders
        for (let i = 0; i + 1 < raw.length; i += 2) responseHeaders.append(raw[i]!, raw[i + 1]!)
        const init = { status, statusText: incoming.statusMessage ?? '', headers: responseHeaders }
        if (nullBodyStatuses.has(status)) {
          incoming.resume()
          resolve(new Response(null, init))
          return
        }
        if (!bufferedTypes.test(responseHeaders.get('content-type') ?? 'text/plain')) {
          resolve(new Response(Readable.toWeb(incoming) as ReadableStream<Uint8Array>, init))
          return
        }
        const chunks: Buffer[] = []
        let size = 0
        incoming.on('data', (chunk: Buffer) => {
          size += chunk.byteLength
          if (size > maxBufferedBytes) {
            incoming.destroy(new PaymentError('too_large', 'the response is too large'))
            return
          }
          chunks.push(chunk)
        })
        incoming.once('error', reject)
        incoming.once('end', () => {
          const bytes = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)
          const response = new Response(bytes as Uint8Array<ArrayBuffer>, init)
          buffered.set(response, bytes)
          resolve(response)
        })
      },
    )
    outgoing.once('error', (error) => {
      if (!retried && signal?.aborted !== true && closedWhileIdle(outgoing, error)) {
        resolve(send(url, method, headers, body, signal, maxBufferedBytes, true))
      } else reject(error)
    })
    outgoing.end(body ?? undefined)
  })
}

/** The ledger's `fetch`: answers (gRPC-web) up to 16 MiB, read whole. */
export const nodeFetch: typeof fetch = createNodeFetch()
