import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import fc from 'fast-check'
import nock from 'nock'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { nodeFetch } from '../../src/internal/nodeFetch.js'
import { decodeBase64File, fetchMedia, mediaUnavailable, readLimited } from './http.js'
import { redact } from './upstream.js'

describe('fetchMedia', () => {
  let inside: Server
  let port: number
  const seen: string[] = []
  const publicAddress = async () => [{ address: '93.184.215.14' }]

  beforeAll(async () => {
    nock.disableNetConnect()
    nock.enableNetConnect((host) => host.startsWith('127.0.0.1'))
    inside = createServer((req, res) => {
      seen.push(req.url ?? '')
      if (req.url === '/missing') res.writeHead(404)
      res.end('internal secret')
    })
    await new Promise<void>((resolve) => inside.listen(0, '127.0.0.1', resolve))
    port = (inside.address() as AddressInfo).port
  })
  afterAll(async () => {
    nock.cleanAll()
    nock.enableNetConnect()
    inside.closeAllConnections()
    await new Promise((resolve) => inside.close(resolve))
  })

  it('refuses non-http(s) URLs', async () => {
    for (const url of ['file:///etc/passwd', 'ftp://e.com/a', 'not a url']) {
      expect((await fetchMedia(url)).status).toBe('failed')
    }
  })

  it.each([
    ['http://[::ffff:127.0.0.1]:PORT/a.mp3', 'IPv4-mapped loopback (Node writes [::ffff:7f00:1])'],
    ['http://[::ffff:7f00:1]:PORT/a.mp3', 'IPv4-mapped loopback, hex'],
    ['http://2130706433:PORT/a.mp3', 'decimal loopback'],
    ['http://0x7f.1:PORT/a.mp3', 'hex short loopback'],
    ['http://127.0.0.1:PORT/a.mp3', 'loopback'],
    ['http://0.0.0.0:PORT/a.mp3', 'unspecified'],
    ['http://[::1]:PORT/a.mp3', 'IPv6 loopback'],
    ['http://media.example:PORT/a.mp3', 'a name that resolves to loopback'],
    ['http://169.254.169.254/latest/meta-data/', 'cloud metadata'],
  ])('never downloads %s (%s)', async (url) => {
    seen.length = 0
    const result = await fetchMedia(url.replace('PORT', String(port)), {
      resolveHost: async () => [{ address: '127.0.0.1' }],
    })
    expect(result).toEqual({ status: 'failed', reason: mediaUnavailable, retryable: false })
    expect(seen).toEqual([])
  })

  it('judges every redirect hop: a public file that redirects inside is refused', async () => {
    seen.length = 0
    nock('https://cdn.example.com')
      .get('/a.png')
      .reply(302, '', { location: `http://127.0.0.1:${port}/secret` })
    nock('https://cdn.example.com')
      .get('/b.png')
      .reply(302, '', { location: `http://[::ffff:127.0.0.1]:${port}/secret` })
    for (const path of ['/a.png', '/b.png']) {
      expect(
        await fetchMedia(`https://cdn.example.com${path}`, { resolveHost: publicAddress }),
      ).toEqual({ status: 'failed', reason: mediaUnavailable, retryable: false })
    }
    expect(nock.isDone()).toBe(true)
    expect(seen).toEqual([])
  })

  it('fails a blocked, a refused, an unresolvable and a missing file with the same reason', async () => {
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const closedPort = (closed.address() as AddressInfo).port
    await new Promise((resolve) => closed.close(resolve))
    nock('https://cdn.example.com').get('/gone.png').reply(404)
    const outcomes = [
      await fetchMedia(`http://127.0.0.1:${port}/a.png`),
      await fetchMedia(`http://127.0.0.1:${closedPort}/a.png`, { allowInternalHosts: true }),
      await fetchMedia(`http://127.0.0.1:${port}/missing`, { allowInternalHosts: true }),
      await fetchMedia('https://nowhere.example/a.png', {
        resolveHost: async () => {
          throw new Error('ENOTFOUND')
        },
      }),
      await fetchMedia('https://cdn.example.com/gone.png', { resolveHost: publicAddress }),
    ]
    for (const outcome of outcomes) {
      expect(outcome).toEqual({ status: 'failed', reason: mediaUnavailable, retryable: false })
    }
  })

  it('downloads from a public host (no credentials) and, when allowed, from a local one', async () => {
    nock('https://cdn.example.com', { badheaders: ['authorization', 'cookie'] })
      .get('/ok.png')
      .reply(200, Buffer.from([1, 2, 3]), { 'content-type': 'image/png' })
    expect(
      await fetchMedia('https://cdn.example.com/ok.png', { resolveHost: publicAddress }),
    ).toEqual({
      status: 'ok',
      media: { bytes: new Uint8Array([1, 2, 3]), contentType: 'image/png' },
    })
    const local = await fetchMedia(`http://127.0.0.1:${port}/a.mp3`, { allowInternalHosts: true })
    expect(local.status).toBe('ok')
    expect(
      await fetchMedia(`http://127.0.0.1:${port}/a.mp3`, { allowInternalHosts: true, maxBytes: 4 }),
    ).toMatchObject({ status: 'failed', reason: 'media file is too large' })
  })
})

describe('readLimited', () => {
  it('reads up to the limit and refuses beyond it', async () => {
    expect(await readLimited(new Response('abcd'), 4)).toEqual(new TextEncoder().encode('abcd'))
    expect(await readLimited(new Response('abcde'), 4)).toBeUndefined()
    const declared = new Response('ab', { headers: { 'content-length': '999' } })
    expect(await readLimited(declared, 10)).toBeUndefined()
  })

  it('takes an answer the Node fetch read whole from its buffer, with the same limit', async () => {
    const server = createServer((_req, res) => {
      res.setHeader('content-type', 'application/json')
      res.end('{"a":1}')
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
    try {
      const whole = await nodeFetch(url)
      expect(new TextDecoder().decode(await readLimited(whole, 7))).toBe('{"a":1}')
      // The buffer was handed over: the Response itself is still unread and reads the same.
      expect(await whole.text()).toBe('{"a":1}')
      expect(await readLimited(await nodeFetch(url), 6)).toBeUndefined()
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
  })
})

describe('decodeBase64File', () => {
  it('takes raw base64 and data: URLs', () => {
    expect(decodeBase64File('aGVsbG8=')).toEqual({
      bytes: new TextEncoder().encode('hello'),
      contentType: 'application/octet-stream',
    })
    expect(decodeBase64File('data:audio/wav;base64,aGVsbG8=').contentType).toBe('audio/wav')
  })
  it('round-trips any bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 512 }), (bytes) => {
        const decoded = decodeBase64File(Buffer.from(bytes).toString('base64'))
        expect(decoded.bytes).toEqual(new Uint8Array(bytes))
      }),
    )
  })
})

describe('redact', () => {
  it('removes the key and its prefix from provider text', () => {
    const key = 'sk-live-abcdefghijklmnop'
    const out = redact(`bad key ${key} (starts ${key.slice(0, 9)}…)`, key)
    expect(out).not.toContain(key)
    expect(out).not.toContain(key.slice(0, 8))
  })
  it('never leaves the key in any text (property)', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 12, maxLength: 40 }),
        fc.string(),
        fc.string(),
        (key, a, b) => {
          expect(redact(`${a}${key}${b}`, key)).not.toContain(key)
        },
      ),
    )
  })
})
