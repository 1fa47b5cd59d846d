/**
 * The adapter contract: the same scenarios through Express, Koa and Hono, each a real HTTP server
 * on 127.0.0.1, paid by a real buyer (real keys and signatures) on the ledger emulator.
 */
import { Agent, request as httpRequest } from 'node:http'
import { connect, type Socket } from 'node:net'
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { useTestLedger } from 'tollgate/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { SellerEvent } from '../src/engine/sellerTypes.js'
import { createLedger } from '../src/ledger/index.js'
import type { Ledger } from '../src/ledger/types.js'
import { decodeReceipt, parseChallenge } from '../src/mpp.js'
import { createMemoryStore } from '../src/stores/memory.js'
import type { PaymentStore } from '../src/stores/types.js'
import { mppAuthorization, x402PaymentHeader } from '../src/testing/payments.js'
import { decodeXPaymentResponse, parsePaymentRequired, x402Headers } from '../src/x402.js'
import {
  createGate,
  type Framework,
  frameworks,
  type StartedApp,
  startApp,
  streamEvents,
  streamGapMs,
} from './contract/apps.js'

const secret = 'a-challenge-secret-of-at-least-32-bytes!'
const publicBaseUrl = 'https://api.example.com'
/** One fixed clock for every framework, so that their challenges are byte-identical. */
const clock = Date.now()
const chain = useTestLedger({ beforeAll, afterAll })
/** One seller (and refund operator) for every framework, so that their 402s can be compared. */
let seller: Ed25519Keypair

/** What each framework answered to the same requests, compared at the end. */
type Snapshot = { status: number; headers: [string, string][]; body: string }
const snapshots = new Map<Framework, Record<string, Snapshot>>()

beforeAll(async () => {
  seller = chain.createTestWallet({ usdc: '1' })
})

/** Headers that belong to the transport or the framework, not to the paywall. */
const transport = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding', 'x-powered-by'])

async function snapshot(response: Response): Promise<Snapshot> {
  const headers = [...response.headers].filter(([name]) => !transport.has(name)).sort()
  return { status: response.status, headers, body: await response.text() }
}

const usdcOf = (address: string) => chain.usdcBalance(address)

async function eventually<T>(read: () => Promise<T>, ok: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 10_000
  for (;;) {
    const value = await read()
    if (ok(value) || Date.now() > deadline) return value
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** Sends a request with the path exactly as written (fetch would normalise it). */
function rawRequest(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  const { port } = new URL(base)
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port: Number(port), method, path, headers },
      (res) => {
        let body = ''
        res.setEncoding('utf8')
        res.on('data', (chunk: string) => {
          body += chunk
        })
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
      },
    )
    req.on('error', reject)
    req.end()
  })
}

/** A paid request sent on a raw socket, so that the test can hang up at any moment. */
type RawCall = {
  socket: Socket
  /** The client's port: the server's name for this connection. */
  localPort: number
  /** Everything the server sent so far. */
  received(): string
  /** Resolves once the server has sent `text`. */
  receivedText(text: string): Promise<void>
}

async function rawCall(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string>,
): Promise<RawCall> {
  const { port } = new URL(base)
  const socket = connect(Number(port), '127.0.0.1')
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve)
    socket.once('error', reject)
  })
  socket.on('error', () => {})
  let received = ''
  const waiters: { text: string; resolve(): void }[] = []
  socket.setEncoding('latin1')
  socket.on('data', (chunk: string) => {
    received += chunk
    for (const waiter of waiters) if (received.includes(waiter.text)) waiter.resolve()
  })
  const lines = [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1', 'Content-Length: 0']
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`)
  socket.write(`${lines.join('\r\n')}\r\n\r\n`)
  return {
    socket,
    localPort: socket.localPort ?? 0,
    received: () => received,
    receivedText: (text) =>
      new Promise<void>((resolve) => {
        if (received.includes(text)) resolve()
        else waiters.push({ text, resolve })
      }),
  }
}

describe.each(frameworks)('%s adapter', (framework) => {
  let app: StartedApp
  let trusting: StartedApp
  let plain: StartedApp
  let store: PaymentStore
  const events: SellerEvent[] = []
  const seen: Record<string, Snapshot> = {}
  /** Holds the main app's settlements (the ledger's `execute`) until released, when armed. */
  const settling = createGate()

  /** Paid calls settled and not yet recorded served or refund due (the gateway's `paidInFlight`). */
  const inFlight = () =>
    events.filter((e) => e.type === 'settled').length -
    events.filter((e) => e.type === 'served' || e.type === 'refund_due').length

  /** The in-flight count once it has settled down (0), or after 10 s. */
  const inFlightLater = () =>
    eventually(
      async () => inFlight(),
      (n) => n === 0,
    )

  /** The events of one payer's payment. */
  const eventsOf = (payer: Ed25519Keypair) =>
    events.filter(
      (e) =>
        (e.type === 'settled' || e.type === 'served' || e.type === 'refund_due') &&
        e.payment.payer === payer.toSuiAddress(),
    )

  /**
   * After a buyer hung up while a handler whose work started is held: Express cannot see its
   * handler finish, so the payment is recorded served at once; every other mount keeps it settled
   * (its serve lease held) until the handler is done, so that a process dying meanwhile would leave
   * it to the lease sweeper. Returns the payment's digest.
   */
  async function hungUpWhileHeld(payer: Ed25519Keypair): Promise<string> {
    const settled = await eventually(
      async () => eventsOf(payer),
      (list) => list.length >= (framework === 'express' ? 2 : 1),
    )
    const digest = (settled[0] as { payment: { digest: string } }).payment.digest
    if (framework === 'express') {
      expect(settled.map((e) => e.type)).toEqual(['settled', 'served'])
      return digest
    }
    // Given the time a hang-up recorded at once takes to show, on a loaded machine.
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(eventsOf(payer).map((e) => e.type)).toEqual(['settled'])
    expect((await store.get(digest))?.state).toBe('settled')
    return digest
  }

  beforeAll(async () => {
    snapshots.set(framework, seen)
    store = createMemoryStore()
    const ledger = createLedger({ url: chain.url })
    const gated: Ledger = {
      ...ledger,
      async execute(...args) {
        await settling.pass()
        return ledger.execute(...args)
      },
    }
    const common = {
      payTo: seller.toSuiAddress(),
      ledger,
      store,
      secrets: [secret],
      now: () => clock,
    }
    app = await startApp(framework, {
      ...common,
      ledger: gated,
      publicBaseUrl,
      refundSigner: seller,
      refundIntervalMs: 60_000,
      onEvent: (event) => events.push(event),
    })
    trusting = await startApp(framework, { ...common, trustProxy: true })
    plain = await startApp(framework, common)
  })

  afterAll(async () => {
    await Promise.all([app?.close(), trusting?.close(), plain?.close()])
  })

  const post = (path: string, headers: Record<string, string> = {}, body?: string) =>
    fetch(app.url + path, {
      method: 'POST',
      headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body }),
    })

  async function challenge(path: string, body?: string) {
    const response = await post(path, {}, body)
    expect(response.status).toBe(402)
    const requirement = parsePaymentRequired(await response.json()).accepts[0]!
    const mpp = parseChallenge(response.headers.get('www-authenticate') ?? '')
    return { requirement, mpp }
  }

  async function x402For(payer: Ed25519Keypair, path: string, body?: string) {
    const { requirement } = await challenge(path, body)
    return x402PaymentHeader(chain.client, payer, requirement)
  }

  it('answers an unpaid request with one 402 in both dialects', async () => {
    const response = await post('/v1/things/1')
    seen.challenge = await snapshot(response.clone())
    expect(response.status).toBe(402)
    expect(response.headers.get('cache-control')).toBe('no-store')
    const body = parsePaymentRequired(await response.json())
    expect(body.accepts[0]).toMatchObject({
      scheme: 'exact',
      network: 'sui:mainnet',
      maxAmountRequired: '20000',
      resource: `${publicBaseUrl}/v1/things/1`,
      description: 'a thing',
      payTo: seller.toSuiAddress(),
    })
    const mpp = parseChallenge(response.headers.get('www-authenticate') ?? '')
    expect(mpp.id).toBe(body.accepts[0]?.extra?.challengeId)
    expect(app.calls.get('/v1/things')).toBeUndefined()
  })

  it('serves a paid x402 request once, with the settlement header, and refuses its replay', async () => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const before = await usdcOf(seller.toSuiAddress())
    const header = await x402For(payer, '/v1/things/7')
    const sent = JSON.stringify({ note: 'read by the handler itself' })
    const response = await post('/v1/things/7', { [x402Headers.payment]: header }, sent)
    expect(response.status).toBe(200)
    // A route without a body schema leaves the body unread for the handler's own parser.
    expect(await response.json()).toEqual({
      ok: true,
      id: '7',
      payer: payer.toSuiAddress(),
      received: sent,
    })
    const receipt = decodeXPaymentResponse(response.headers.get(x402Headers.paymentResponse) ?? '')
    expect(receipt).toMatchObject({ success: true, payer: payer.toSuiAddress() })
    expect(await usdcOf(seller.toSuiAddress())).toBe(before + 20_000n)
    const record = await eventually(
      () => store.get(receipt.transaction),
      (r) => r?.state === 'served',
    )
    expect(record?.state).toBe('served')

    const calls = app.calls.get('/v1/things')
    const replay = await post('/v1/things/7', { [x402Headers.payment]: header })
    expect(replay.status).toBe(402)
    expect(((await replay.json()) as { code?: string }).code).toBe('replay')
    expect(app.calls.get('/v1/things')).toBe(calls)
    expect(await usdcOf(seller.toSuiAddress())).toBe(before + 20_000n)
  })

  it('serves a paid MPP request with a receipt, and refuses its replay', async () => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const { mpp } = await challenge('/v1/things/8')
    const { authorization, digest } = await mppAuthorization(chain.client, payer, mpp)
    const response = await post('/v1/things/8', { authorization })
    expect(response.status).toBe(200)
    expect(decodeReceipt(response.headers.get('payment-receipt') ?? '')).toMatchObject({
      status: 'success',
      method: 'sui',
      reference: digest,
    })
    const replay = await post('/v1/things/8', { authorization })
    expect(replay.status).toBe(402)
    expect(((await replay.json()) as { code?: string }).code).toBe('replay')
  })

  it('prices a route with the per-route pay() form', async () => {
    const { requirement } = await challenge('/v1/quote')
    expect(requirement.maxAmountRequired).toBe('10000')
    const payer = chain.createTestWallet({ usdc: '1' })
    const header = await x402PaymentHeader(chain.client, payer, requirement)
    const response = await post('/v1/quote', { [x402Headers.payment]: header })
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ quote: true })
  })

  it('answers a malformed payment header with a 402 and a reason, running nothing', async () => {
    const calls = app.calls.get('/v1/things')
    const x402 = await post('/v1/things/1', { [x402Headers.payment]: '%%%' })
    seen.badHeader = await snapshot(x402.clone())
    expect(x402.status).toBe(402)
    expect(await x402.json()).toHaveProperty('accepts')
    const mpp = await post('/v1/things/1', { authorization: 'Payment !!!' })
    expect(mpp.status).toBe(402)
    expect(((await mpp.json()) as { code?: string }).code).toBe('malformed_credential')
    expect(app.calls.get('/v1/things')).toBe(calls)
  })

  it('refuses an invalid body with 400 before any payment: nothing charged, handler not run', async () => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const header = await x402For(payer, '/v1/echo', JSON.stringify({ text: 'hi' }))
    const before = await usdcOf(payer.toSuiAddress())
    const bad = await post(
      '/v1/echo',
      { [x402Headers.payment]: header },
      JSON.stringify({ text: 42 }),
    )
    seen.invalidBody = await snapshot(bad.clone())
    expect(bad.status).toBe(400)
    expect(await bad.json()).toMatchObject({ code: 'invalid_request_body', field: 'text' })
    expect(await usdcOf(payer.toSuiAddress())).toBe(before)
    expect(app.calls.get('/v1/echo')).toBeUndefined()

    // The same payment with a valid body: the handler reads the body the paywall read.
    const good = await post(
      '/v1/echo',
      { [x402Headers.payment]: header },
      JSON.stringify({ text: 'hi' }),
    )
    expect(good.status).toBe(200)
    expect(await good.json()).toEqual({ text: 'hi' })
  })

  it('refunds a paid call whose handler throws, exactly once, from the operator key', async () => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const start = await usdcOf(payer.toSuiAddress())
    const header = await x402For(payer, '/v1/boom')
    const response = await post('/v1/boom', { [x402Headers.payment]: header })
    expect(response.status).toBe(500)
    expect(response.headers.get(x402Headers.paymentResponse)).toBeNull()
    // Paid, then refunded: the payer's USDC comes back to where it started.
    const after = await eventually(
      () => usdcOf(payer.toSuiAddress()),
      (balance) => balance === start,
    )
    expect(after).toBe(start)
    await app.refunder.runOnce()
    await app.refunder.runOnce()
    expect(await usdcOf(payer.toSuiAddress())).toBe(start)
    const refunded = events.filter((e) => e.type === 'refunded' && e.payer === payer.toSuiAddress())
    expect(refunded).toHaveLength(1)
    expect((await store.get((refunded[0] as { digest: string }).digest))?.state).toBe('refunded')
  })

  it('refunds a status the route marks failed, and serves a 4xx the seller chose', async () => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const teapot = await post('/v1/teapot', {
      [x402Headers.payment]: await x402For(payer, '/v1/teapot'),
    })
    expect(teapot.status).toBe(418)
    const owed = events.filter(
      (e) => e.type === 'refund_due' && e.payment.payer === payer.toSuiAddress(),
    )
    expect(owed).toHaveLength(1)

    const missing = await post('/v1/missing', {
      [x402Headers.payment]: await x402For(payer, '/v1/missing'),
    })
    expect(missing.status).toBe(404)
    const receipt = decodeXPaymentResponse(missing.headers.get(x402Headers.paymentResponse) ?? '')
    const record = await eventually(
      () => store.get(receipt.transaction),
      (r) => r?.state === 'served',
    )
    expect(record?.state).toBe('served')
  })

  it('streams a paid SSE response: settled before the first byte, events arrive as they are sent', async () => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const before = await usdcOf(seller.toSuiAddress())
    const { requirement } = await (async () => {
      const response = await fetch(`${app.url}/v1/stream`)
      expect(response.status).toBe(402)
      return { requirement: parsePaymentRequired(await response.json()).accepts[0]! }
    })()
    expect(requirement.mimeType).toBe('text/event-stream')
    const header = await x402PaymentHeader(chain.client, payer, requirement)
    const response = await fetch(`${app.url}/v1/stream`, {
      headers: { [x402Headers.payment]: header },
    })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toContain('text/event-stream')
    expect(response.headers.get(x402Headers.paymentResponse)).not.toBeNull()
    // The status line arrived: the money has already moved.
    expect(await usdcOf(seller.toSuiAddress())).toBe(before + 20_000n)
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    const arrivals: { at: number; text: string }[] = []
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      arrivals.push({ at: performance.now(), text: decoder.decode(value) })
    }
    const text = arrivals.map((a) => a.text).join('')
    expect(text).toBe(
      Array.from({ length: streamEvents }, (_, i) => `data: {"n":${i}}\n\n`).join(''),
    )
    // Not buffered: the first event arrived well before the last one was written.
    expect(arrivals.length).toBeGreaterThanOrEqual(2)
    const spread = arrivals.at(-1)!.at - arrivals[0]!.at
    expect(spread).toBeGreaterThan(streamGapMs * (streamEvents - 1) * 0.6)
    const receipt = decodeXPaymentResponse(response.headers.get(x402Headers.paymentResponse)!)
    const record = await eventually(
      () => store.get(receipt.transaction),
      (r) => r?.state === 'served',
    )
    expect(record?.state).toBe('served')
  })

  it('serves a buyer who hangs up while the handler runs: the work had started; the late answer changes nothing', async () => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const start = await usdcOf(payer.toSuiAddress())
    const sellerBefore = await usdcOf(seller.toSuiAddress())
    const header = await x402For(payer, '/v1/slow')
    const held = app.slow.arm()
    const call = await rawCall(app.url, 'POST', '/v1/slow', { [x402Headers.payment]: header })
    await held.entered
    call.socket.destroy()
    await app.connectionClosed(call.localPort)
    const digest = await hungUpWhileHeld(payer)
    held.release()
    // Served once the handler is done: its work began when it was called.
    await eventually(
      async () => eventsOf(payer).length,
      (n) => n === 2,
    )
    expect(eventsOf(payer).map((e) => e.type)).toEqual(['settled', 'served'])
    expect((await store.get(digest))?.state).toBe('served')
    await app.refunder.runOnce()
    expect((await store.get(digest))?.state).toBe('served')
    // The ledger: the payer paid once, the seller kept it, no refund was sent.
    expect(await usdcOf(payer.toSuiAddress())).toBe(start - 20_000n)
    expect(await usdcOf(seller.toSuiAddress())).toBe(sellerBefore + 20_000n)
    expect(events.filter((e) => e.type === 'refunded' && e.payer === payer.toSuiAddress())).toEqual(
      [],
    )
    expect(eventsOf(payer).map((e) => e.type)).toEqual(['settled', 'served'])
    expect(call.received()).toBe('')
    expect(await inFlightLater()).toBe(0)
  })

  it("refunds a buyer who hangs up before a `commit: 'manual'` route commits; commit() then says no", async () => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const start = await usdcOf(payer.toSuiAddress())
    const header = await x402For(payer, '/v1/deferred')
    const commitsBefore = app.commits.length
    const held = app.slow.arm()
    const call = await rawCall(app.url, 'POST', '/v1/deferred', { [x402Headers.payment]: header })
    await held.entered
    call.socket.destroy()
    await app.connectionClosed(call.localPort)
    // Recorded as a failed call while the handler still runs: its work had not started.
    const owed = await eventually(
      async () => eventsOf(payer),
      (list) => list.some((e) => e.type === 'refund_due'),
    )
    expect(owed.map((e) => e.type)).toEqual(['settled', 'refund_due'])
    held.release()
    await eventually(
      async () => app.commits.length,
      (n) => n > commitsBefore,
    )
    expect(app.commits.slice(commitsBefore)).toEqual([false])
    await app.refunder.runOnce()
    const after = await eventually(
      () => usdcOf(payer.toSuiAddress()),
      (balance) => balance === start,
    )
    expect(after).toBe(start)
    const digest = (owed[0] as { payment: { digest: string } }).payment.digest
    expect((await store.get(digest))?.state).toBe('refunded')
    expect(eventsOf(payer).map((e) => e.type)).toEqual(['settled', 'refund_due'])
    expect(
      events.filter((e) => e.type === 'refunded' && e.payer === payer.toSuiAddress()),
    ).toHaveLength(1)
    expect(call.received()).toBe('')
    expect(await inFlightLater()).toBe(0)
  })

  it("serves a buyer who hangs up after a `commit: 'manual'` route committed", async () => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const start = await usdcOf(payer.toSuiAddress())
    const header = await x402For(payer, '/v1/deferred')
    const commitsBefore = app.commits.length
    const beforeCommit = app.slow.arm()
    const call = await rawCall(app.url, 'POST', '/v1/deferred', { [x402Headers.payment]: header })
    await beforeCommit.entered
    const afterCommit = app.slow.arm()
    beforeCommit.release()
    await afterCommit.entered
    expect(app.commits.slice(commitsBefore)).toEqual([true])
    call.socket.destroy()
    await app.connectionClosed(call.localPort)
    const digest = await hungUpWhileHeld(payer)
    afterCommit.release()
    await eventually(
      async () => eventsOf(payer).length,
      (n) => n === 2,
    )
    expect((await store.get(digest))?.state).toBe('served')
    await app.refunder.runOnce()
    expect(await usdcOf(payer.toSuiAddress())).toBe(start - 20_000n)
    expect(eventsOf(payer).map((e) => e.type)).toEqual(['settled', 'served'])
    expect(await inFlightLater()).toBe(0)
  })

  it('refunds a buyer who hangs up while the payment settles, and never runs the handler', async () => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const start = await usdcOf(payer.toSuiAddress())
    const header = await x402For(payer, '/v1/things/9')
    const calls = app.calls.get('/v1/things')
    const held = settling.arm()
    const call = await rawCall(app.url, 'POST', '/v1/things/9', { [x402Headers.payment]: header })
    await held.entered
    call.socket.destroy()
    await app.connectionClosed(call.localPort)
    held.release()
    const recorded = await eventually(
      async () => eventsOf(payer),
      (list) => list.some((e) => e.type === 'refund_due'),
    )
    expect(recorded.map((e) => e.type)).toEqual(['settled', 'refund_due'])
    const after = await eventually(
      () => usdcOf(payer.toSuiAddress()),
      (balance) => balance === start,
    )
    expect(after).toBe(start)
    expect(app.calls.get('/v1/things')).toBe(calls)
    expect(await inFlightLater()).toBe(0)
  })

  it('serves a buyer who hangs up mid-stream', async () => {
    const payer = chain.createTestWallet({ usdc: '1' })
    const response = await fetch(`${app.url}/v1/stream`)
    const requirement = parsePaymentRequired(await response.json()).accepts[0]!
    const header = await x402PaymentHeader(chain.client, payer, requirement)
    const call = await rawCall(app.url, 'GET', '/v1/stream', { [x402Headers.payment]: header })
    await call.receivedText('data: {"n":0}')
    call.socket.destroy()
    await app.connectionClosed(call.localPort)
    const recorded = await eventually(
      async () => eventsOf(payer),
      (list) => list.length === 2,
    )
    expect(recorded.map((e) => e.type)).toEqual(['settled', 'served'])
    expect(call.received()).toMatch(/^HTTP\/1\.1 200 /)
    expect(await inFlightLater()).toBe(0)
  })

  it('discards the unread body of an unpaid POST and keeps the connection for the next request', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    let sockets = 0
    const send = (method: string, path: string, body?: string) =>
      new Promise<number>((resolve, reject) => {
        const { port } = new URL(app.url)
        const req = httpRequest(
          {
            host: '127.0.0.1',
            port: Number(port),
            method,
            path,
            agent,
            headers: body === undefined ? {} : { 'content-type': 'application/json' },
          },
          (res) => {
            res.resume()
            res.on('end', () => resolve(res.statusCode ?? 0))
          },
        )
        req.on('socket', (socket) => {
          if (!(socket as { counted?: boolean }).counted) {
            ;(socket as { counted?: boolean }).counted = true
            sockets++
          }
        })
        req.on('error', reject)
        req.end(body)
      })
    const before = app.calls.get('/v1/things')
    try {
      // A small body, one of 256 KiB (more than the socket takes at once), and none: each
      // answered 402 without the body being read.
      expect(await send('POST', '/v1/things/1', '{"note":"unpaid"}')).toBe(402)
      expect(
        await send('POST', '/v1/things/1', JSON.stringify({ pad: 'x'.repeat(256 * 1024) })),
      ).toBe(402)
      expect(await send('POST', '/v1/things/1')).toBe(402)
      expect(await send('GET', '/free')).toBe(200)
      expect(sockets).toBe(1)
      expect(app.calls.get('/v1/things')).toBe(before)
    } finally {
      agent.destroy()
    }
  })

  it('leaves an unpriced route untouched: no payment headers, its body stream unread', async () => {
    const free = await fetch(`${app.url}/free`)
    expect(free.status).toBe(200)
    expect(await free.json()).toEqual({ free: true })
    expect(free.headers.get('www-authenticate')).toBeNull()
    expect(free.headers.get(x402Headers.paymentResponse)).toBeNull()
    const echo = await fetch(`${app.url}/free/echo`, { method: 'POST', body: 'raw bytes' })
    expect(await echo.json()).toEqual({ received: 'raw bytes' })
  })

  it.each([
    ['an encoded slash', '/v1%2Fthings/1'],
    ['an encoded slash in the id', '/v1/things/1%2F'],
    ['a double slash', '//v1//things/1'],
    ['a dot segment', '/./v1/./things/1'],
    ['a dot-dot segment', '/v1/x/../things/1'],
    ['a dot-dot segment as the id', '/V1/THINGS/..'],
    ['a dot segment as the id', '/v1/things/.'],
    ['a trailing slash', '/v1/things/1/'],
    ['upper case', '/V1/THINGS/1'],
    ['backslashes', '/v1\\things\\1'],
    ['percent-encoded letters', '/v1/%74hings/1'],
  ])('answers 402 to %s (%s), never the handler', async (_name, path) => {
    const before = app.calls.get('/v1/things')
    const response = await rawRequest(app.url, 'POST', path)
    const hono = framework.startsWith('hono')
    // @hono/node-server itself refuses a backslash in the path with 400, before any app code runs.
    const refusedByServer = hono && path.includes('\\')
    // Hono sees the path as URL parsing resolves it: a final `.` or `..` leaves `/v1/things/:id`
    // (a 404); Express and Koa route it as it is, to the handler, so it must be priced there.
    const resolvedAway = hono && /\/\.\.?$/.test(path)
    expect(response.status).toBe(refusedByServer ? 400 : resolvedAway ? 404 : 402)
    expect(app.calls.get('/v1/things')).toBe(before)
  })

  it('binds the forwarded URL into `resource` with trustProxy, and ignores it without', async () => {
    const forwarded = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'shop.example' }
    const trusted = await fetch(`${trusting.url}/v1/things/1`, {
      method: 'POST',
      headers: forwarded,
    })
    expect(parsePaymentRequired(await trusted.json()).accepts[0]?.resource).toBe(
      'https://shop.example/v1/things/1',
    )
    // Resources are remembered per URL: other forwarded values for the same URL are not mixed up.
    const other = await fetch(`${trusting.url}/v1/things/1`, {
      method: 'POST',
      headers: { 'x-forwarded-proto': 'http', 'x-forwarded-host': 'other.example:8080' },
    })
    expect(parsePaymentRequired(await other.json()).accepts[0]?.resource).toBe(
      'http://other.example:8080/v1/things/1',
    )
    const direct = await fetch(`${trusting.url}/v1/things/1`, { method: 'POST' })
    expect(parsePaymentRequired(await direct.json()).accepts[0]?.resource).toBe(
      `${trusting.url}/v1/things/1`,
    )
    const ignored = await fetch(`${plain.url}/v1/things/1`, { method: 'POST', headers: forwarded })
    expect(parsePaymentRequired(await ignored.json()).accepts[0]?.resource).toBe(
      `${plain.url}/v1/things/1`,
    )
  })
})

describe('across frameworks', () => {
  it.each(['challenge', 'badHeader', 'invalidBody'])(
    'answers %s with byte-identical status, headers and body',
    (name) => {
      const [first, ...rest] = frameworks.map((framework) => snapshots.get(framework)?.[name])
      expect(first).toBeDefined()
      for (const other of rest) expect(other).toEqual(first)
    },
  )
})
