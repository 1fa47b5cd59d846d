import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { MockAgent } from 'undici'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createNodeFetch, nodeFetch, takeBufferedBody } from './nodeFetch.js'

let server: Server
let base: string
const seen: { method: string | undefined; headers: Record<string, unknown>; body: string }[] = []

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      seen.push({
        method: req.method,
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
      })
      if (req.url === '/empty') {
        res.statusCode = 204
        res.end()
      } else if (req.url === '/slow') {
        setTimeout(() => res.end('late'), 2_000)
      } else if (req.url === '/events') {
        res.setHeader('content-type', 'text/event-stream')
        res.write('data: 1\n\n')
        setTimeout(() => res.end('data: 2\n\n'), 300)
      } else if (req.url === '/big') {
        res.write(Buffer.alloc(10 * 1024 * 1024))
        res.end(Buffer.alloc(10 * 1024 * 1024))
      } else {
        res.setHeader('grpc-status', '0')
        res.setHeader('set-cookie', ['a=1', 'b=2'])
        res.statusCode = 200
        res.end(Buffer.from([0, 1, 2, 255]))
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

describe('nodeFetch', () => {
  it('sends method, headers and bytes, and answers status, headers and the exact bytes', async () => {
    const response = await nodeFetch(`${base}/call`, {
      method: 'POST',
      headers: new Headers({ 'content-type': 'application/grpc-web+proto', 'x-one': '1' }),
      body: new Uint8Array([104, 105]),
    })
    expect(response.status).toBe(200)
    expect(response.headers.get('grpc-status')).toBe('0')
    expect(response.headers.get('set-cookie')).toBe('a=1, b=2')
    expect([...new Uint8Array(await response.arrayBuffer())]).toEqual([0, 1, 2, 255])
    const request = seen.at(-1)!
    expect(request.method).toBe('POST')
    expect(request.headers).toMatchObject({
      'content-type': 'application/grpc-web+proto',
      'x-one': '1',
    })
    expect(request.body).toBe('hi')
  })

  it('answers a status that carries no body with a null body', async () => {
    const response = await nodeFetch(`${base}/empty`)
    expect(response.status).toBe(204)
    expect(response.body).toBeNull()
  })

  it('rejects with the abort reason when the signal fires (timeouts become unknown outcomes)', async () => {
    const started = Date.now()
    await expect(nodeFetch(`${base}/slow`, { signal: AbortSignal.timeout(100) })).rejects.toThrow()
    expect(Date.now() - started).toBeLessThan(1_500)
  })

  it('refuses a response over 16 MiB instead of holding it', async () => {
    await expect(nodeFetch(`${base}/big`)).rejects.toThrow(/too large/)
  })

  it('sends a Request as it is: method, headers and its encoded body (FormData with its boundary)', async () => {
    const form = new FormData()
    form.append('model', 'whisper-1')
    await nodeFetch(
      new Request(`${base}/call`, { method: 'PUT', body: form, headers: { 'x-two': '2' } }),
    )
    const request = seen.at(-1)!
    expect(request.method).toBe('PUT')
    expect(request.headers['x-two']).toBe('2')
    expect(String(request.headers['content-type'])).toMatch(/^multipart\/form-data; boundary=/)
    expect(request.body).toContain('name="model"')
    expect(request.body).toContain('whisper-1')
    await nodeFetch(`${base}/call`, { method: 'POST', body: form })
    expect(seen.at(-1)!.body).toContain('whisper-1')
  })

  it('streams an answer that is not JSON or text: the first event before the last is sent', async () => {
    const started = Date.now()
    const response = await nodeFetch(`${base}/events`)
    const reader = (response.body as ReadableStream<Uint8Array>).getReader()
    const first = await reader.read()
    expect(new TextDecoder().decode(first.value)).toBe('data: 1\n\n')
    expect(Date.now() - started).toBeLessThan(250)
    let rest = ''
    for (let next = await reader.read(); !next.done; next = await reader.read())
      rest += new TextDecoder().decode(next.value)
    expect(rest).toBe('data: 2\n\n')
  })

  it('caps what it reads whole at the size it was made with', async () => {
    await expect(createNodeFetch({ maxBufferedBytes: 2 })(`${base}/call`)).rejects.toThrow(
      /too large/,
    )
  })

  it('hands over the bytes of an answer read whole once, and none of a streamed answer', async () => {
    const whole = await nodeFetch(`${base}/call`, { method: 'POST' })
    expect([...(takeBufferedBody(whole) ?? [])]).toEqual([0, 1, 2, 255])
    expect(takeBufferedBody(whole)).toBeUndefined()
    // The Response itself still reads as usual.
    expect([...new Uint8Array(await whole.arrayBuffer())]).toEqual([0, 1, 2, 255])
    const streamed = await nodeFetch(`${base}/events`)
    expect(takeBufferedBody(streamed)).toBeUndefined()
    expect(await streamed.text()).toBe('data: 1\n\ndata: 2\n\n')
    expect(takeBufferedBody(new Response('other'))).toBeUndefined()
  })

  it('rejects when nothing listens', async () => {
    await expect(nodeFetch('http://127.0.0.1:9/')).rejects.toThrow()
  })
})

describe('createNodeFetch with a dispatcher', () => {
  it('sends every call through the dispatcher it is given (a MockAgent in tests)', async () => {
    const agent = new MockAgent()
    agent.disableNetConnect()
    agent
      .get('https://upstream.test')
      .intercept({
        path: '/v1/run',
        method: 'POST',
        headers: { authorization: 'Bearer k' },
        body: '{"a":1}',
      })
      .reply(200, { ok: true }, { headers: { 'content-type': 'application/json' } })
    const through = createNodeFetch({ dispatcher: agent })
    try {
      const response = await through('https://upstream.test/v1/run', {
        method: 'POST',
        headers: { authorization: 'Bearer k' },
        body: '{"a":1}',
      })
      expect(await response.json()).toEqual({ ok: true })
      // Nothing else leaves: a call the mock was not told about fails.
      await expect(through('https://other.test/')).rejects.toThrow()
      agent.assertNoPendingInterceptors()
    } finally {
      await agent.close()
    }
  })
})

describe('nodeFetch and connections the server closed while idle', () => {
  /**
   * A server that answers the first request of each connection and closes the connection, without
   * answering, on any later one: what a client sees when a server drops an idle kept-alive
   * connection just as the client reuses it.
   */
  async function dropsReused(dropFirst = false, reset = false) {
    let connections = 0
    let requests = 0
    const served = new WeakSet<object>()
    const dropping = createServer((req, res) => {
      requests++
      req.resume()
      req.on('end', () => {
        if (dropFirst || served.has(req.socket)) {
          if (reset) req.socket.resetAndDestroy()
          else req.socket.destroy()
          return
        }
        served.add(req.socket)
        res.end(`ok ${requests}`)
      })
    })
    dropping.on('connection', () => {
      connections++
    })
    await new Promise<void>((resolve) => dropping.listen(0, '127.0.0.1', resolve))
    return {
      url: `http://127.0.0.1:${(dropping.address() as AddressInfo).port}/`,
      counts: () => ({ connections, requests }),
      close: () =>
        new Promise<void>((resolve) => {
          dropping.closeAllConnections()
          dropping.close(() => resolve())
        }),
    }
  }

  it('sends a call again, once, on a new connection when a reused one was closed unanswered', async () => {
    const server = await dropsReused()
    try {
      expect(await (await nodeFetch(server.url, { method: 'POST', body: 'a' })).text()).toBe('ok 1')
      // The connection is back in the pool once its answer is complete: the next call reuses it.
      await new Promise((resolve) => setTimeout(resolve, 20))
      const again = await nodeFetch(server.url, { method: 'POST', body: 'b' })
      expect(await again.text()).toBe('ok 3')
      expect(server.counts()).toEqual({ connections: 2, requests: 3 })
    } finally {
      await server.close()
    }
  })

  it('sends a call again, once, on a new connection when a reused one was reset unanswered', async () => {
    const server = await dropsReused(false, true)
    try {
      expect(await (await nodeFetch(server.url, { method: 'POST', body: 'a' })).text()).toBe('ok 1')
      // The connection is back in the pool once its answer is complete: the next call reuses it.
      await new Promise((resolve) => setTimeout(resolve, 20))
      const again = await nodeFetch(server.url, { method: 'POST', body: 'b' })
      expect(await again.text()).toBe('ok 3')
      expect(server.counts()).toEqual({ connections: 2, requests: 3 })
    } finally {
      await server.close()
    }
  })

  it('sends a call after the server closed the idle connection on a new one, unretried', async () => {
    let connections = 0
    let requests = 0
    const closing = createServer((req, res) => {
      requests++
      req.resume()
      req.on('end', () => res.end(`ok ${requests}`))
    })
    // The server closes a kept-alive connection after 50 ms of idleness (and says so).
    closing.keepAliveTimeout = 50
    closing.on('connection', () => {
      connections++
    })
    await new Promise<void>((resolve) => closing.listen(0, '127.0.0.1', resolve))
    const url = `http://127.0.0.1:${(closing.address() as AddressInfo).port}/`
    try {
      expect(await (await nodeFetch(url, { method: 'POST', body: 'a' })).text()).toBe('ok 1')
      await new Promise((resolve) => setTimeout(resolve, 200))
      expect(await (await nodeFetch(url, { method: 'POST', body: 'b' })).text()).toBe('ok 2')
      expect({ connections, requests }).toEqual({ connections: 2, requests: 2 })
    } finally {
      closing.closeAllConnections()
      await new Promise<void>((resolve) => closing.close(() => resolve()))
    }
  })

  it('does not send again when a new connection is closed unanswered', async () => {
    const server = await dropsReused(true)
    try {
      await expect(nodeFetch(server.url, { method: 'POST', body: 'a' })).rejects.toThrow()
      expect(server.counts()).toEqual({ connections: 1, requests: 1 })
    } finally {
      await server.close()
    }
  })
})
