/**
 * The gateway's upstream transport for the tests that intercept upstreams with nock: the real
 * transport (`createNodeFetch`, undici's `request()` — request building, answers read whole or
 * streamed, caps) whose connections are made by Node's `http`/`https` instead of undici's sockets,
 * because nock sees those and not undici's. With `nock.disableNetConnect()` a call to any upstream
 * nock was not told about still fails, so "no other upstream was called" keeps its strength.
 * Test support only.
 *
 * @module
 */
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { createNodeFetch } from 'tollgate/node'
import { Dispatcher } from 'undici'

/** undici's dispatch, carried out over `node:http` (the handler API `request()` hands over). */
class ThroughNodeHttp extends Dispatcher {
  override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler) {
    const { onConnect, onHeaders, onData, onComplete, onError } = handler
    if (!onConnect || !onHeaders || !onData || !onComplete || !onError) {
      throw new Error('ThroughNodeHttp expects the handler of undici request()')
    }
    const url = new URL(options.path, String(options.origin))
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest
    const headers = headersOf(options.headers)
    let settled = false
    const fail = (error: Error) => {
      if (settled) return
      settled = true
      onError.call(handler, error)
    }
    const outgoing = send(url, { method: options.method, headers })
    onConnect.call(handler, (reason?: Error) => outgoing.destroy(reason ?? new Error('aborted')))
    outgoing.once('response', (incoming: IncomingMessage) => {
      const raw = incoming.rawHeaders.map((value) => Buffer.from(value))
      const resume = () => incoming.resume()
      const status = incoming.statusCode ?? 502
      if (onHeaders.call(handler, status, raw, resume, incoming.statusMessage ?? '') === false) {
        incoming.pause()
      }
      incoming.on('data', (chunk: Buffer) => {
        if (onData.call(handler, chunk) === false) incoming.pause()
      })
      incoming.once('end', () => {
        if (settled) return
        settled = true
        onComplete.call(handler, [])
      })
      incoming.once('error', fail)
    })
    outgoing.once('error', fail)
    const body = options.body
    if (body === undefined || body === null) outgoing.end()
    else if (typeof body === 'string' || body instanceof Uint8Array) outgoing.end(body)
    else throw new Error('ThroughNodeHttp sends string and byte bodies only')
    return true
  }

  override close(): Promise<void> {
    return Promise.resolve()
  }

  override destroy(): Promise<void> {
    return Promise.resolve()
  }
}

function headersOf(given: Dispatcher.DispatchOptions['headers']): Record<string, string> {
  const out: Record<string, string> = {}
  if (given == null) return out
  if (Array.isArray(given)) {
    for (let i = 0; i + 1 < given.length; i += 2) out[String(given[i])] = String(given[i + 1])
    return out
  }
  for (const [name, value] of Object.entries(given as Record<string, unknown>)) {
    if (value !== undefined) out[name] = Array.isArray(value) ? value.join(', ') : String(value)
  }
  return out
}

/** The gateway's upstream `fetch` (64 MiB read whole, as `startGateway` makes it), seen by nock. */
export function nockVisibleFetch(): typeof fetch {
  return createNodeFetch({ maxBufferedBytes: 64 * 1024 * 1024, dispatcher: new ThroughNodeHttp() })
}
