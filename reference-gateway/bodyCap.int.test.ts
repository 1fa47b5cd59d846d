/**
 * Request bodies are read with a cap on every route of the gateway that reads one: a body that
 * never ends (chunked, on a real socket) is answered 413, the connection is closed, and the
 * gateway read at most the route's cap plus one chunk of it — it does not buffer the whole body.
 * The unpaid routes (the activity report, the signed agent routes, reviews, escrowed jobs) read it
 * through `requestBody.ts`; the paid routes through the paywall (kept as it was).
 */
import { connect, type Socket } from 'node:net'
import { beforeAll, describe, expect, it } from 'vitest'
import { examplePathOf, paidEntries } from './catalog/catalog.js'
import { useTestGateway } from './server/testHelpers.js'

/** Bytes the gateway read from each client connection, by the client's local port. */
const bytesReadByPort = new Map<number, Promise<number>>()

/** The paid routes' body cap in this gateway (`MAX_BODY_BYTES`). */
const paidCap = 64 * 1024
const gateway = useTestGateway({ config: { store: 'sqlite', maxBodyBytes: paidCap } })

beforeAll(async () => {
  gateway.server.on('connection', (socket: Socket) => {
    const port = socket.remotePort
    if (port === undefined) return
    bytesReadByPort.set(
      port,
      new Promise((resolve) => socket.once('close', () => resolve(socket.bytesRead))),
    )
  })
})

/** The size of one chunk of the body as sent. */
const frame = 16 * 1024
/** The most a Node socket reads at once: "one chunk" on the gateway's side. */
const socketRead = 64 * 1024
/** The client stops here at the latest (and then ends the body), so a failing run still ends. */
const sendLimit = 16 * 1024 * 1024

type Outcome = { status: number; closedByServer: boolean; head: number; gatewayRead: number }

/**
 * POSTs a chunked body of JSON whitespace that never ends (until the gateway closes the
 * connection, or `sendLimit` as a safety net), and reports the answer and how many bytes the
 * gateway read from the connection.
 */
async function endlessBody(path: string): Promise<Outcome> {
  const url = new URL(gateway.url)
  const socket = connect(Number(url.port), url.hostname)
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve)
    socket.once('error', reject)
  })
  const localPort = socket.localPort as number
  const head = Buffer.from(
    `POST ${path} HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\n` +
      'transfer-encoding: chunked\r\n\r\n',
  )
  let answer = ''
  socket.setEncoding('latin1')
  socket.on('data', (text: string) => {
    answer += text
  })
  socket.on('error', () => {})
  let closed = false
  let sent = 0
  const done = new Promise<void>((resolve) => socket.once('close', () => resolve()))
  socket.once('close', () => {
    closed = true
  })
  const chunk = Buffer.concat([
    Buffer.from(`${frame.toString(16)}\r\n`),
    Buffer.alloc(frame, 0x20),
    Buffer.from('\r\n'),
  ])
  socket.write(head)
  const pump = () => {
    while (!closed) {
      if (sent >= sendLimit) {
        socket.end('0\r\n\r\n')
        return
      }
      sent += frame
      if (!socket.write(chunk)) {
        socket.once('drain', pump)
        return
      }
    }
  }
  pump()
  const timer = setTimeout(() => socket.destroy(), 20_000)
  await done
  clearTimeout(timer)
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0)
  const gatewayRead = (await bytesReadByPort.get(localPort)) ?? Number.NaN
  return { status, closedByServer: sent < sendLimit, head: head.length, gatewayRead }
}

/**
 * Node's own read-ahead, whatever the body's length: the request stream's buffer (16 KiB) and the
 * Web stream's queue over it, at most one more socket read.
 */
const readAhead = 64 * 1024

/**
 * The bytes of `cap` plus one chunk (a socket read) plus Node's fixed read-ahead, in whole frames
 * as sent, after the head. A reader that buffers the whole body reads all `sendLimit` bytes.
 */
function allowance(cap: number, head: number): number {
  const frames = Math.ceil((cap + socketRead + readAhead) / frame) + 1
  return head + frames * (frame + 8)
}

const job = `0x${'ab'.repeat(32)}`
const unpaid: { path: string; cap: number }[] = [
  { path: '/api/mpp/report', cap: 16 * 1024 },
  { path: '/v1/agent/endpoint/prepare', cap: 64 * 1024 },
  { path: '/v1/agent/endpoint/submit', cap: 64 * 1024 },
  { path: '/v1/agent/service', cap: 64 * 1024 },
  { path: '/v1/reviews', cap: 64 * 1024 },
  { path: '/v1/jobs', cap: 96 * 1024 },
  { path: '/v1/jobs/fund', cap: 96 * 1024 },
  ...['deliver', 'release', 'reject', 'refund', 'review'].map((move) => ({
    path: `/v1/jobs/${job}/${move}`,
    cap: 96 * 1024,
  })),
]

describe('a body that never ends is cut at the cap on every route that reads one', () => {
  it.each(unpaid)('$path (cap $cap bytes)', async ({ path, cap }) => {
    const outcome = await endlessBody(path)
    expect(outcome.status).toBe(413)
    expect(outcome.closedByServer).toBe(true)
    expect(outcome.gatewayRead).toBeLessThanOrEqual(allowance(cap, outcome.head))
  })

  it('a paid catalog route (the paywall reads it, with MAX_BODY_BYTES)', async () => {
    const entry = paidEntries(gateway.catalog).find(
      (e) => (e.endpoint.maxBodyBytes ?? paidCap) === paidCap,
    )
    if (entry === undefined) throw new Error('the catalog has no paid route with the default cap')
    const outcome = await endlessBody(examplePathOf(entry.endpoint))
    expect(outcome.status).toBe(413)
    expect(outcome.closedByServer).toBe(true)
    expect(outcome.gatewayRead).toBeLessThanOrEqual(allowance(paidCap, outcome.head))
  })

  it.each([
    { path: '/v1/chat/completions', cap: paidCap },
    { path: '/open/v1/chat/completions', cap: 256 * 1024 },
    { path: '/v1/aci/anchor/rcpt_1', cap: 0 },
  ])('$path (the inference API: read with its cap, or not at all)', async ({ path, cap }) => {
    const outcome = await endlessBody(path)
    expect(outcome.status).toBeGreaterThanOrEqual(400)
    expect(outcome.status).toBeLessThan(500)
    expect(outcome.closedByServer).toBe(true)
    expect(outcome.gatewayRead).toBeLessThanOrEqual(allowance(cap, outcome.head))
  })

  it('a paid credit top-up', async () => {
    const outcome = await endlessBody('/v1/credit/1')
    expect(outcome.status).toBe(413)
    expect(outcome.closedByServer).toBe(true)
    expect(outcome.gatewayRead).toBeLessThanOrEqual(allowance(4096, outcome.head))
  })
})
