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

  it('checks every redirect hop', async () => {
    const onlyThisServer = (address: string) => address === '127.0.0.1'
    const metadata = `${base}/to?where=${encodeURIComponent('http://169.254.169.254/')}`
    await expect(probe(metadata, { allowAddress: onlyThisServer })).rejects.toMatchObject({
      code: 'bad_url',
    })
    const port = new URL(base).port
    const v6 = `${base}/to?where=${encodeURIComponent(`http://[::1]:${port}/`)}`
    await expect(probe(v6, { allowAddress: onlyThisServer })).rejects.toMatchObject({
      code: 'bad_url',
    })
    const sameOrigin = `${base}/to?where=${encodeURIComponent('/final')}`
    const answer = await probe(sameOrigin, { allowAddress: onlyThisServer })
    expect(answer).toMatchObject({ status: 200, url: `${base}/final` })
  })

  it('follows no redirect to another host, even with allowPrivateNetwork (--allow-private-network)', async () => {
    const port = new URL(base).port
    for (const where of [
      'http://169.254.169.254/latest/meta-data/iam/security-credentials/',
      `http://localhost:${port}/final`,
      `http://127.0.0.1:1/final`,
      `http://[::1]:${port}/final`,
    ]) {
      seen.length = 0
      await expect(
        probe(`${base}/to?where=${encodeURIComponent(where)}`, {
          allowPrivateNetwork: true,
          headers: { 'x-payment': 'secret-payment' },
        }),
      ).rejects.toMatchObject({ code: 'bad_url', message: expect.stringContaining('another host') })
      expect(seen.map((s) => s.path)).toEqual([`/to?where=${encodeURIComponent(where)}`])
    }
    // On the same host it follows, a POST turned into a GET by a 302.
    seen.length = 0
    const answer = await probe(`${base}/to?where=${encodeURIComponent(`${base}/final`)}`, {
      allowPrivateNetwork: true,
      method: 'POST',
      body: '{}',
    })
    expect(answer).toMatchObject({ status: 200, url: `${base}/final` })
    expect(seen.map((s) => s.path)).toEqual([expect.stringMatching(/^\/to/), '/final'])
  })

  it('refuses the metadata address directly, even with allowPrivateNetwork', async () => {
    await expect(
      probe('http://169.254.169.254/latest/meta-data/', { allowPrivateNetwork: true }),
    ).rejects.toMatchObject({ code: 'unreachable' })
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
