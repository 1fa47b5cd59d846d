/**
 * A `fetch` for the ledger's gRPC-web calls over Node's `http`/`https` modules, with keep-alive
 * connections. The SDK's transport takes any `fetch`; on Node this one costs about a quarter less
 * CPU per call than the global (undici) `fetch`, which is most of what a seller spends per payment
 * besides the signature check (`bench/settle-load.ts`).
 *
 * Scope: unary calls, which are all the ledger makes. The response body is read whole before the
 * `Response` is returned, so it does not suit a server-streaming call.
 *
 * @module
 */
import http from 'node:http'
import https from 'node:https'

const agents = {
  'http:': new http.Agent({ keepAlive: true }),
  'https:': new https.Agent({ keepAlive: true }),
} as const

/** Statuses whose `Response` must not have a body. */
const nullBodyStatuses = new Set([101, 103, 204, 205, 304])

/** Largest response accepted (a transaction with its effects is a few KiB). */
const MAX_RESPONSE_BYTES = 16 * 1024 * 1024

/**
 * `fetch(url, init)` for unary gRPC-web calls. Honours `method`, `headers`, a byte or string
 * `body`, and `signal` (an aborted call rejects with the signal's `AbortError`).
 */
export function nodeFetch(
  input: string | URL | Request,
  init: RequestInit = {},
): Promise<Response> {
  const url = new URL(typeof input === 'object' && 'url' in input ? input.url : String(input))
  const agent = url.protocol === 'https:' ? agents['https:'] : agents['http:']
  const module = url.protocol === 'https:' ? https : http
  const headers: Record<string, string> = {}
  new Headers(init.headers).forEach((value, name) => {
    headers[name] = value
  })
  const body = init.body as Uint8Array | string | null | undefined
  return new Promise((resolve, reject) => {
    const request = module.request(
      url,
      { method: init.method ?? 'GET', headers, agent, signal: init.signal ?? undefined },
      (response) => {
        const chunks: Buffer[] = []
        let size = 0
        response.on('data', (chunk: Buffer) => {
          size += chunk.byteLength
          if (size > MAX_RESPONSE_BYTES) {
            response.destroy(new Error('the ledger response is too large'))
            return
          }
          chunks.push(chunk)
        })
        response.once('error', reject)
        response.once('end', () => {
          const out = new Headers()
          const raw = response.rawHeaders
          for (let i = 0; i + 1 < raw.length; i += 2) out.append(raw[i]!, raw[i + 1]!)
          const status = response.statusCode ?? 502
          const bytes = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)
          resolve(
            new Response(nullBodyStatuses.has(status) ? null : (bytes as Uint8Array<ArrayBuffer>), {
              status,
              statusText: response.statusMessage ?? '',
              headers: out,
            }),
          )
        })
      },
    )
    request.once('error', reject)
    request.end(body ?? undefined)
  })
}
