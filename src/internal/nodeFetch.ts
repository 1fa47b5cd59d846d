/**
 * A `fetch` over undici's `request()` with a keep-alive `Agent`: the ledger's gRPC-web calls and the
 * reference gateway's upstream calls use it on Node, where it costs markedly less CPU per call than
 * the global `fetch` (`bench/transport.ts`, `bench/settleLoad.ts`).
 *
 * What it does: method, headers and body of a URL + init or of a `Request` (its body is read whole
 * first, so `FormData` and the like are encoded as `fetch` would); `signal` (an aborted call rejects
 * with the signal's reason, also mid-body; the signal is the only timeout: undici's own headers and
 * body timeouts are off). Answers whose type is JSON, gRPC or text are read whole (up to
 * `maxBufferedBytes`) before the `Response` is returned; any other answer (`text/event-stream`,
 * audio, images, …) is returned as soon as its headers arrive, its body streamed as it comes.
 * Redirects are not followed (as `redirect: 'manual'`). A call sent on a kept-alive connection that
 * the server had closed before answering is sent once more on a new one.
 *
 * @module
 */
import { Readable } from 'node:stream'
import { Agent, buildConnector, type Dispatcher, request } from 'undici'
import { PaymentError } from '../errors.js'
import { isNullBodyStatus } from './nullBody.js'

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
  /**
   * The undici dispatcher the calls go through. Default: an `Agent` of this `fetch`'s own, keeping
   * connections alive. Tests pass a `MockAgent` (or another interception) here.
   */
  dispatcher?: Dispatcher | undefined
}

type Body = Uint8Array | string | null | undefined

/** Creates a Node `fetch` (see the module's description). */
export function createNodeFetch(options: NodeFetchOptions = {}): typeof fetch {
  const maxBufferedBytes = options.maxBufferedBytes ?? 16 * 1024 * 1024
  const resetWhenReused = new WeakSet<object>()
  const dispatcher = options.dispatcher ?? keepAliveAgent(resetWhenReused)
  const nodeFetch: typeof fetch = async (input, init = {}) => {
    const encoded = init.body
    if (encoded != null && typeof encoded !== 'string' && !(encoded instanceof Uint8Array)) {
      // FormData, Blob, streams …: let a Request encode it (with its content type), then send that.
      return nodeFetch(new Request(input, init))
    }
    const given = input instanceof Request ? input : undefined
    const url = given?.url ?? (input instanceof URL ? input.href : String(input))
    const headers = headersOf(init.headers ?? given?.headers)
    const signal = init.signal ?? given?.signal ?? undefined
    let body = init.body as Body
    if (body === undefined && given !== undefined && given.body !== null) {
      body = new Uint8Array(await given.arrayBuffer())
    }
    const call: Call = {
      url,
      method: (init.method ?? given?.method ?? 'GET').toUpperCase() as Dispatcher.HttpMethod,
      headers,
      body: body ?? null,
      signal,
      dispatcher,
      resetWhenReused,
    }
    return answer(await send(call), maxBufferedBytes)
  }
  return nodeFetch
}

/** The headers of a call as undici takes them (names lowercase, as `Headers` has them). */
function headersOf(given: HeadersInit | undefined): Record<string, string> {
  const headers: Record<string, string> = {}
  if (given === undefined) return headers
  if (given instanceof Headers || Array.isArray(given)) {
    const all = given instanceof Headers ? given : new Headers(given)
    all.forEach((value, name) => {
      headers[name] = value
    })
    return headers
  }
  // A plain record (the usual case): copied without building a `Headers` first.
  for (const [name, value] of Object.entries(given)) {
    const key = name.toLowerCase()
    headers[key] =
      key in headers ? `${headers[key]}, ${String(value).trim()}` : String(value).trim()
  }
  return headers
}

type Call = {
  url: string
  method: Dispatcher.HttpMethod
  headers: Record<string, string>
  body: Uint8Array | string | null
  signal: AbortSignal | undefined
  dispatcher: Dispatcher
  resetWhenReused: WeakSet<object>
}

/**
 * An `Agent` that keeps connections alive, with no timeouts of its own (the caller's signal bounds
 * a call), whose connections mark a reset or broken pipe suffered by a connection that had already
 * read answers (`resetWhenReused`): undici reports those as the socket's own error, which does not
 * say whether the connection was a reused one.
 */
function keepAliveAgent(resetWhenReused: WeakSet<object>): Agent {
  const connect = buildConnector({})
  return new Agent({
    headersTimeout: 0,
    bodyTimeout: 0,
    connect: (options, callback) =>
      connect(options, (error, socket) => {
        // Registered before undici's own listener, so the mark is set when undici sees the error.
        socket?.on('error', (failure: unknown) => {
          if (socket.bytesRead > 0 && typeof failure === 'object' && failure !== null) {
            resetWhenReused.add(failure)
          }
        })
        if (error === null) callback(null, socket!)
        else callback(error, null)
      }),
  })
}

async function send(call: Call): Promise<Dispatcher.ResponseData> {
  const options = {
    method: call.method,
    headers: call.headers,
    body: call.body,
    signal: call.signal,
    dispatcher: call.dispatcher,
  }
  try {
    return await request(call.url, options)
  } catch (error) {
    if (call.signal?.aborted === true) throw call.signal.reason
    if (!closedWhileIdle(error, call.resetWhenReused)) throw error
    return await request(call.url, options)
  }
}

/**
 * Whether a call failed because the kept-alive connection it was sent on had been closed by the
 * server (idle, the usual race of keep-alive: the server gives up on a connection just as the client
 * reuses it) before any answer came. undici says so with a `SocketError` ("other side closed") whose
 * socket had already read bytes (earlier answers: a reused connection), or with a reset / broken pipe
 * that {@link keepAliveAgent} marked as suffered by such a connection. The server almost certainly did not take the request (a server that fails while
 * handling one answers or times out, it does not reset a reused connection at once), so it is sent
 * once more on a new connection, as browsers do; calls that reach the ledger are idempotent by
 * digest, and the gateway's upstream calls are retried within a budget anyway. A connection that
 * carried no earlier answer is not retried: the server saw the call and refused it.
 */
function closedWhileIdle(error: unknown, resetWhenReused: WeakSet<object>): boolean {
  if (typeof error !== 'object' || error === null) return false
  if (resetWhenReused.has(error)) return true
  const { code, socket } = error as { code?: unknown; socket?: { bytesRead?: unknown } }
  return code === 'UND_ERR_SOCKET' && typeof socket?.bytesRead === 'number' && socket.bytesRead > 0
}

/** The `Response` of an answer: no body, the body read whole, or the body streamed. */
async function answer(data: Dispatcher.ResponseData, maxBufferedBytes: number): Promise<Response> {
  const headers = new Headers()
  for (const [name, value] of Object.entries(data.headers)) {
    if (Array.isArray(value)) for (const one of value) headers.append(name, one)
    else if (value !== undefined) headers.append(name, value)
  }
  const init = { status: data.statusCode, statusText: data.statusText ?? '', headers }
  if (isNullBodyStatus(data.statusCode)) {
    await data.body.dump()
    return new Response(null, init)
  }
  if (!bufferedTypes.test(headers.get('content-type') ?? 'text/plain')) {
    return new Response(Readable.toWeb(data.body) as ReadableStream<Uint8Array>, init)
  }
  const bytes = await readWhole(data.body, maxBufferedBytes)
  const response = new Response(bytes as Uint8Array<ArrayBuffer>, init)
  buffered.set(response, bytes)
  return response
}

/** The whole of a body, or a `too_large` rejection (the body destroyed) past `max` bytes. */
function readWhole(body: Readable, max: number): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    body.on('data', (chunk: Buffer) => {
      size += chunk.byteLength
      if (size > max) {
        body.destroy()
        reject(new PaymentError('too_large', 'the response is too large'))
        return
      }
      chunks.push(chunk)
    })
    body.once('error', reject)
    body.once('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)))
  })
}

/** The ledger's `fetch`: answers (gRPC-web) up to 16 MiB, read whole. */
export const nodeFetch: typeof fetch = createNodeFetch()
