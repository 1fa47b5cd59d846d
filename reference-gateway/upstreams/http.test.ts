import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { nodeFetch } from '../../src/internal/nodeFetch.js'
import { decodeBase64File, fetchMedia, isInternalHost, readLimited } from './http.js'
import { redact } from './upstream.js'

describe('isInternalHost', () => {
  it.each([
    'localhost',
    'api.localhost',
    'printer.local',
    'metadata.google.internal',
    '127.0.0.1',
    '127.9.9.9',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '::1',
    '[::1]',
    '::',
    'fc00::1',
    'fd12::3',
    'fe80::1',
    '::ffff:127.0.0.1',
  ])('%s is internal', (host) => {
    expect(isInternalHost(host)).toBe(true)
  })
  it.each([
    'example.com',
    'v3.fal.media',
    '8.8.8.8',
    '172.32.0.1',
    '192.169.0.1',
    '2606:4700::1111',
  ])('%s is public', (host) => {
    expect(isInternalHost(host)).toBe(false)
  })
  it('never throws on arbitrary input', () => {
    fc.assert(fc.property(fc.string(), (s) => typeof isInternalHost(s) === 'boolean'))
  })
})

describe('fetchMedia', () => {
  const never = (() => {
    throw new Error('must not fetch')
  }) as unknown as typeof fetch
  it('refuses non-http(s) URLs and internal hosts without fetching', async () => {
    for (const url of ['file:///etc/passwd', 'ftp://e.com/a', 'not a url', 'http://10.0.0.1/a']) {
      expect((await fetchMedia(url, { fetch: never })).status).toBe('failed')
    }
  })
  it('does not follow redirects (a redirect to an internal host cannot sneak in)', async () => {
    let seen: RequestInit | undefined
    const fake = (async (_url: URL, init: RequestInit) => {
      seen = init
      return new Response(null, { status: 302, headers: { location: 'http://127.0.0.1/' } })
    }) as unknown as typeof fetch
    expect(await fetchMedia('https://e.com/a.png', { fetch: fake })).toMatchObject({
      status: 'failed',
      reason: 'media download answered 302',
    })
    expect(seen?.redirect).toBe('manual')
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
