/**
 * The SSRF-safe fetch against real loopback servers: every spelling of an internal address and every
 * host name that resolves to one is refused before a connection is made, redirect hops are judged
 * one by one, the connection goes to the judged address, and a refused, blocked or unresolvable
 * target fails the same way.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  type HostResolver,
  isInternalAddress,
  type SafeFetchOptions,
  safeFetch,
  unreachableMessage,
} from './index.js'

let server: Server
let port: number
let base: string
let connections = 0
const seen: { path: string; host: string | undefined }[] = []

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push({ path: req.url ?? '', host: req.headers.host })
    const url = new URL(req.url ?? '/', 'http://x')
    if (url.pathname === '/to') {
      res.writeHead(302, { location: url.searchParams.get('where') ?? '/' })
      res.end()
    } else if (url.pathname === '/loop') {
      res.writeHead(301, { location: '/loop' })
      res.end()
    } else if (url.pathname === '/big') {
      res.end('x'.repeat(300 * 1024))
    } else if (url.pathname === '/slow') {
      setTimeout(() => res.end('late'), 2_000)
    } else {
      res.end('inside')
    }
  })
  server.on('connection', () => {
    connections++
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  port = (server.address() as AddressInfo).port
  base = `http://127.0.0.1:${port}`
})

afterAll(() => {
  server.closeAllConnections()
  server.close()
})

/** A resolver with fixed answers; anything else does not resolve. */
function resolver(table: Record<string, string[]>, calls: string[] = []): HostResolver {
  return async (hostname) => {
    calls.push(hostname)
    const found = table[hostname]
    if (found === undefined) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' })
    return found.map((address) => ({ address }))
  }
}

const names = resolver({
  'loopback.test': ['127.0.0.1'],
  'mapped.test': ['::ffff:127.0.0.1'],
  'nat64.test': ['64:ff9b::7f00:1'],
  'octal.test': ['0177.0.0.1'],
  'metadata.test': ['169.254.169.254'],
  'mixed.test': ['8.8.8.8', '127.0.0.1'],
  'empty.test': [],
})

async function refusedWithoutConnecting(url: string, options: SafeFetchOptions = {}) {
  const before = { connections, requests: seen.length }
  const result = await safeFetch(url, { resolve: names, ...options })
  expect(result).toEqual({ status: 'failed', code: 'unreachable', message: unreachableMessage })
  expect({ connections, requests: seen.length }).toEqual(before)
}

describe('safeFetch refuses internal targets before connecting', () => {
  it.each([
    ['http://127.0.0.1:PORT/', 'IPv4 loopback'],
    ['http://127.1:PORT/', 'short IPv4'],
    ['http://2130706433:PORT/', 'decimal IPv4'],
    ['http://0x7f.0.0.1:PORT/', 'hex IPv4'],
    ['http://0177.0.0.1:PORT/', 'octal IPv4'],
    ['http://0.0.0.0:PORT/', 'unspecified'],
    ['http://[::]:PORT/', 'IPv6 unspecified'],
    ['http://[::1]:PORT/', 'IPv6 loopback'],
    ['http://[::ffff:127.0.0.1]:PORT/', 'IPv4-mapped loopback'],
    ['http://[::ffff:7f00:1]:PORT/', 'IPv4-mapped loopback, hex'],
    ['http://[64:ff9b::7f00:1]:PORT/', 'NAT64 loopback'],
    ['http://[2002:7f00:1::]:PORT/', '6to4 loopback'],
    ['http://169.254.169.254/latest/meta-data/', 'cloud metadata'],
    ['http://[fd00:ec2::254]/latest/meta-data/', 'AWS metadata over IPv6'],
    ['http://100.100.100.200/', 'carrier-grade NAT metadata'],
    ['http://10.0.0.1/', 'private'],
    ['http://192.168.1.1/', 'private'],
    ['http://localhost:PORT/', 'localhost through the system resolver'],
  ])('%s (%s)', async (url) => {
    await refusedWithoutConnecting(url.replace('PORT', String(port)), { resolve: undefined })
  })

  it.each([
    ['loopback.test', 'a name that resolves to loopback'],
    ['mapped.test', 'a name that resolves to IPv4-mapped loopback'],
    ['nat64.test', 'a name that resolves to NAT64 loopback'],
    ['octal.test', 'a name whose answer is an octal spelling of loopback'],
    ['metadata.test', 'a name that resolves to the metadata address'],
    ['mixed.test', 'a name with one public and one loopback address'],
    ['empty.test', 'a name with no address'],
    ['nowhere.test', 'a name that does not resolve'],
  ])('%s (%s)', async (host) => {
    await refusedWithoutConnecting(`http://${host}:${port}/`)
  })

  it('says a refused connection exactly as it says a blocked address', async () => {
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const closedPort = (closed.address() as AddressInfo).port
    await new Promise<void>((resolve) => closed.close(() => resolve()))
    const refused = await safeFetch(`http://127.0.0.1:${closedPort}/`, {
      allowPrivateNetwork: true,
    })
    const blocked = await safeFetch(`http://127.0.0.1:${port}/`)
    const unresolved = await safeFetch('http://nowhere.test/', { resolve: names })
    expect(refused).toEqual(blocked)
    expect(unresolved).toEqual(blocked)
  })
})

describe('safeFetch refuses link-local and metadata addresses even with allowPrivateNetwork', () => {
  // Each name also resolves to this loopback server first: were the second address allowed, the
  // connection would go to the first, and the server would see it.
  const linkLocal = [
    '169.254.169.254',
    '169.254.1.1',
    'fe80::1',
    'fd00:ec2::254',
    '100.100.100.200',
    '192.0.0.192',
    '::ffff:169.254.169.254',
    '64:ff9b::a9fe:a9fe',
    '2002:a9fe:a9fe::',
  ]
  const withLoopback = resolver(
    Object.fromEntries(linkLocal.map((address, i) => [`ll${i}.test`, ['127.0.0.1', address]])),
  )
  it.each(linkLocal.map((address, i) => [address, i]))(
    'a name that resolves to loopback and %s',
    async (_address, i) => {
      await refusedWithoutConnecting(`http://ll${i}.test:${port}/`, {
        allowPrivateNetwork: true,
        resolve: withLoopback,
      })
      // allowAddress does not lift it either.
      await refusedWithoutConnecting(`http://ll${i}.test:${port}/`, {
        allowAddress: () => true,
        resolve: withLoopback,
      })
    },
  )

  it('a redirect hop to a name that resolves to the metadata address', async () => {
    seen.length = 0
    const where = `http://ll0.test:${port}/latest/meta-data/`
    const result = await safeFetch(`${base}/to?where=${encodeURIComponent(where)}`, {
      allowPrivateNetwork: true,
      resolve: withLoopback,
    })
    expect(result).toEqual({ status: 'failed', code: 'unreachable', message: unreachableMessage })
    expect(seen.map((s) => s.path)).toEqual([`/to?where=${encodeURIComponent(where)}`])
  })

  it('still reaches loopback with allowPrivateNetwork', async () => {
    const result = await safeFetch(`${base}/`, { allowPrivateNetwork: true })
    expect(result).toMatchObject({ status: 'answered', response: { status: 200 } })
  })
})

describe('safeFetch on the way to an allowed address', () => {
  it('connects to the judged address once resolved, keeping the name as Host', async () => {
    const calls: string[] = []
    const result = await safeFetch(`http://seller.test:${port}/hello`, {
      allowAddress: (address) => address === '127.0.0.1',
      resolve: resolver({ 'seller.test': ['127.0.0.1'] }, calls),
    })
    expect(result.status).toBe('answered')
    if (result.status !== 'answered') return
    expect(new TextDecoder().decode(result.response.body)).toBe('inside')
    expect(seen.at(-1)).toEqual({ path: '/hello', host: `seller.test:${port}` })
    expect(calls).toEqual(['seller.test'])
  })

  it('judges every redirect hop: a loopback server allowed as the first hop cannot redirect inside', async () => {
    const firstHopOnly = (address: string, hop: number) =>
      hop === 0 ? address === '127.0.0.1' : !isInternalAddress(address)
    for (const where of [
      `http://loopback.test:${port}/secret`,
      `http://[::ffff:127.0.0.1]:${port}/secret`,
      `http://127.0.0.1:${port}/secret`,
      'http://169.254.169.254/latest/meta-data/',
      `http://mixed.test:${port}/secret`,
    ]) {
      seen.length = 0
      const result = await safeFetch(`${base}/to?where=${encodeURIComponent(where)}`, {
        allowAddress: firstHopOnly,
        resolve: names,
      })
      expect(result).toEqual({ status: 'failed', code: 'unreachable', message: unreachableMessage })
      expect(seen.map((s) => s.path)).toEqual([`/to?where=${encodeURIComponent(where)}`])
    }
  })

  it('bounds the redirects, the body and the time', async () => {
    const local = { allowPrivateNetwork: true }
    expect(await safeFetch(`${base}/loop`, { ...local, maxRedirects: 3 })).toMatchObject({
      status: 'failed',
      code: 'too_many_redirects',
    })
    expect(await safeFetch(`${base}/big`, { ...local, maxBodyBytes: 1024 })).toMatchObject({
      status: 'failed',
      code: 'too_large',
    })
    expect(await safeFetch(`${base}/slow`, { ...local, timeoutMs: 200 })).toMatchObject({
      status: 'failed',
      code: 'timeout',
    })
    const controller = new AbortController()
    const pending = safeFetch(`${base}/slow`, { ...local, signal: controller.signal })
    controller.abort()
    expect(await pending).toMatchObject({ status: 'failed', code: 'aborted' })
  })

  it('answers a redirect itself with maxRedirects 0, and refuses other schemes and credentials', async () => {
    const answer = await safeFetch(`${base}/loop`, { allowPrivateNetwork: true, maxRedirects: 0 })
    expect(answer).toMatchObject({ status: 'answered', response: { status: 301 } })
    for (const url of [
      'file:///etc/passwd',
      'ftp://example.com/',
      'http://u:p@example.com/',
      '::',
    ]) {
      expect(await safeFetch(url)).toMatchObject({ status: 'failed', code: 'bad_url' })
    }
  })
})
