/**
 * The SSRF-safe probe against real loopback servers: refusal after DNS resolution, on redirect
 * hops, the body cap and the timeout.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { probe } from './probe.js'

let server: Server
let base: string
const seen: { path: string; headers: Record<string, unknown> }[] = []

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push({ path: req.url ?? '', headers: req.headers })
    const url = new URL(req.url ?? '/', 'http://x')
    if (url.pathname === '/to') {
      res.writeHead(302, { location: url.searchParams.get('where') ?? '/' })
      res.end()
    } else if (url.pathname === '/big') {
      res.end('x'.repeat(300 * 1024))
    } else if (url.pathname === '/slow') {
      setTimeout(() => res.end('late'), 2_000)
    } else {
      res.end('ok')
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(() => {
  server.closeAllConnections()
  server.close()
})

describe('probe', () => {
  it.each([
    '127.0.0.1',
    '127.1',
    '127.0.1',
    '2130706433',
    '0x7f000001',
    '0x7f.0.0.1',
    '0177.0.0.1',
    '017700000001',
    '0.0.0.0',
    '0',
    '[::]',
    '[::1]',
    '[0:0:0:0:0:0:0:1]',
    '[::ffff:127.0.0.1]',
    '[::ffff:7f00:1]',
    '[64:ff9b::7f00:1]',
    '[2002:7f00:1::]',
    'localhost',
    'LOCALHOST.',
  ])('refuses the loopback spelling %s without reaching the server', async (host) => {
    const before = seen.length
    await expect(probe(`http://${host}:${new URL(base).port}/`)).rejects.toMatchObject({
      code: 'unreachable',
    })
    expect(seen.length).toBe(before)
  })

  it('refuses a name that resolves to loopback (injected resolver)', async () => {
    const resolve = async () => [{ address: '127.0.0.1' }]
    await expect(
      probe(`http://seller.example:${new URL(base).port}/`, { resolve }),
    ).rejects.toMatchObject({ code: 'unreachable' })
  })

  it('refuses loopback by default, after resolving the name itself', async () => {
    await expect(probe(`${base}/`)).rejects.toMatchObject({ code: 'unreachable' })
    const port = new URL(base).port
    await expect(probe(`http://localhost:${port}/`)).rejects.toMatchObject({
      code: 'unreachable',
    })
    await expect(probe('http://169.254.169.254/latest/meta-data/')).rejects.toMatchObject({
      code: 'unreachable',
    })
  })

  it('reaches a local server with allowPrivateNetwork', async () => {
    const answer = await probe(`${base}/`, { allowPrivateNetwork: true })
    expect(answer).toMatchObject({ status: 200, body: 'ok' })
  })

  it('checks every redirect hop and does not carry payment headers to another origin', async () => {
    const onlyThisServer = (address: string) => address === '127.0.0.1'
    const metadata = `${base}/to?where=${encodeURIComponent('http://169.254.169.254/')}`
    await expect(probe(metadata, { allowAddress: onlyThisServer })).rejects.toMatchObject({
      code: 'unreachable',
    })
    const port = new URL(base).port
    const v6 = `${base}/to?where=${encodeURIComponent(`http://[::1]:${port}/`)}`
    await expect(probe(v6, { allowAddress: onlyThisServer })).rejects.toMatchObject({
      code: 'unreachable',
    })
    const sameOrigin = `${base}/to?where=${encodeURIComponent('/final')}`
    const answer = await probe(sameOrigin, { allowAddress: onlyThisServer })
    expect(answer).toMatchObject({ status: 200, url: `${base}/final` })

    seen.length = 0
    const otherOrigin = `${base}/to?where=${encodeURIComponent(`http://localhost:${port}/final`)}`
    await probe(otherOrigin, {
      allowPrivateNetwork: true,
      headers: { 'x-payment': 'secret-payment', authorization: 'Payment abc' },
    })
    expect(seen[0]?.headers['x-payment']).toBe('secret-payment')
    expect(seen[1]?.path).toBe('/final')
    expect(seen[1]?.headers['x-payment']).toBeUndefined()
    expect(seen[1]?.headers.authorization).toBeUndefined()
  })

  it('caps the body and times out', async () => {
    await expect(probe(`${base}/big`, { allowPrivateNetwork: true })).rejects.toMatchObject({
      code: 'too_large',
    })
    await expect(
      probe(`${base}/slow`, { allowPrivateNetwork: true, timeoutMs: 200 }),
    ).rejects.toMatchObject({ code: 'timeout' })
  })

  it('refuses other schemes and URLs with credentials', async () => {
    await expect(probe('file:///etc/passwd')).rejects.toMatchObject({ code: 'bad_url' })
    await expect(probe('http://user:pw@example.com/')).rejects.toMatchObject({ code: 'bad_url' })
  })
})
