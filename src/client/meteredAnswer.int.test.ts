/**
 * A streamed answer paid per token through a session, end to end on the local ledger: the buyer's
 * `createSessionFetch` keeps the channel's vouchers ahead of the events (raising them with body-less
 * `POST`s answered 204), the seller commits each token into `spent` before it is sent, and the
 * stream ends with a `payment-receipt` event. A buyer who stops raising gets what its vouchers
 * cover and no more; a buyer who leaves mid-stream pays for the tokens sent, and no hold is left.
 */
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { parseCredential } from '../mpp.js'
import { sseEvents, sseFields } from '../session/sse.js'
import {
  pinnedBuyer,
  sessionTokenPrice,
  useSessionSeller,
} from '../session/testing/sessionSeller.js'
import { useCheckedLedger } from '../testing/ledger/testSetup.js'
import { type ChannelBook, createChannelBook } from './channelBook.js'
import { createSessionFetch, type SessionFetchOptions } from './sessions.js'

const chain = useCheckedLedger()
const seller = useSessionSeller(chain)
let folder: string
beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'tollgate-metered-'))
})

/** A buyer whose `fetch` counts the voucher raises it sends. */
function buyer(name: string, extra: Partial<SessionFetchOptions> = {}) {
  const counts = { raises: 0 }
  const options: SessionFetchOptions = {
    ...pinnedBuyer(chain).options,
    maxDeposit: 1_000_000n,
    deposit: () => 100_000n,
    book: createChannelBook(join(folder, `${name}.json`)),
    fetch: (input, init) => {
      // A raise is a body-less POST without the call's query (`?n=`), with a credential.
      const bare =
        init?.method === 'POST' && init.body === undefined && !String(input).includes('?')
      if (bare && new Headers(init.headers).has('authorization')) counts.raises++
      return fetch(input, init)
    },
    ...extra,
  }
  return { counts, options, sessions: createSessionFetch(options) }
}

/**
 * A book that counts its writes (each `sign` writes the file) and keeps the mark it last wrote,
 * and a `fetch` that checks every voucher it sends against that mark: the mark is written before
 * a voucher above it is sent.
 */
function countedBook(name: string) {
  const inner = createChannelBook(join(folder, `${name}.json`))
  const counts = { writes: 0, raises: 0, vouchersAboveMark: 0 }
  let mark = 0n
  const book: ChannelBook = {
    ...inner,
    async sign(channelId, next) {
      counts.writes++
      const entry = await inner.sign(channelId, next)
      mark = BigInt(entry.signed)
      return entry
    },
  }
  const send: typeof fetch = (input, init) => {
    const authorization = new Headers(init?.headers).get('authorization')
    if (authorization !== null) {
      const { payload } = parseCredential(authorization)
      if (BigInt(String(payload.cumulativeAmount ?? 0)) > mark) counts.vouchersAboveMark++
      if (init?.method === 'POST' && init.body === undefined && !String(input).includes('?')) {
        if (payload.action === 'voucher') counts.raises++
      }
    }
    return fetch(input, init)
  }
  return { counts, book, fetch: send }
}

/** Reads an event stream: its token events, and the session's own events by name. */
async function readAll(response: Response, stopAfter = Number.POSITIVE_INFINITY) {
  const tokens: string[] = []
  const named: { name: string; data: Record<string, string> }[] = []
  if (response.body === null) throw new Error('no body')
  for await (const event of sseEvents(response.body)) {
    const { name, data } = sseFields(event)
    if (name === 'message' && data !== undefined && data !== '[DONE]') tokens.push(data)
    else if (name !== 'message') named.push({ name, data: JSON.parse(data ?? '{}') })
    if (tokens.length >= stopAfter) break
  }
  return { tokens, named }
}

async function channelOf(sessions: ReturnType<typeof createSessionFetch>) {
  const [entry] = await sessions.list()
  const record = await seller.channels.get(entry?.channelId ?? '')
  if (record === undefined) throw new Error('the seller has no books for the channel')
  return record
}

describe('a stream paid per token over a session', () => {
  it('serves every token, charges exactly the tokens sent, and raises vouchers in blocks', async () => {
    const b = buyer('whole', { streamAhead: 64n })
    const response = await b.sessions.fetch(`${seller.base}/tokens?n=500`, { method: 'POST' })
    expect(response.status).toBe(200)
    const { tokens, named } = await readAll(response)
    expect(tokens).toHaveLength(500)
    expect(tokens[499]).toBe('{"token":499}')
    const receipt = named.at(-1)
    expect(receipt?.name).toBe('payment-receipt')
    const channel = await channelOf(b.sessions)
    expect(channel.spent).toBe(500n * sessionTokenPrice)
    expect(channel.held).toBe(0n)
    expect(receipt?.data).toMatchObject({
      channelId: channel.channelId,
      spent: String(500n * sessionTokenPrice),
    })
    // Vouchers came in blocks of about 48 tokens, not one per token.
    expect(b.counts.raises).toBeGreaterThan(5)
    expect(b.counts.raises).toBeLessThan(20)
    // Never above the deposit, and at most the block beyond what was served.
    expect(channel.highest).toBeLessThanOrEqual(channel.deposit)
    expect(channel.highest - channel.spent).toBeLessThanOrEqual(64n * sessionTokenPrice)
  })

  it('asks for a voucher, then ends with what the vouchers covered when none comes', async () => {
    const errors: unknown[] = []
    const { sessions: stingy } = buyer('stingy', {
      // Every raise (a body-less POST without the call's query) fails before it reaches the
      // seller: the vouchers stay where the call left them.
      fetch: (input, init) =>
        init?.method === 'POST' && !String(input).includes('?')
          ? Promise.reject(new TypeError('offline'))
          : fetch(input, init),
      onStreamError: (error) => errors.push(error),
    })
    const response = await stingy.fetch(`${seller.base}/tokens?n=50`, { method: 'POST' })
    const { tokens, named } = await readAll(response)
    // The call's voucher covered one token; the seller asked for more, waited, and stopped.
    expect(tokens).toHaveLength(1)
    expect(named.map((e) => e.name)).toEqual(['payment-need-voucher', 'payment-receipt'])
    expect(named[0]?.data).toMatchObject({
      requiredCumulative: String(2n * sessionTokenPrice),
    })
    const channel = await channelOf(stingy)
    expect(channel.spent).toBe(sessionTokenPrice)
    expect(channel.held).toBe(0n)
    expect(errors.length).toBeGreaterThan(0)
  })

  it('charges a buyer who leaves mid-stream for the tokens sent, and leaves no hold', async () => {
    const b = buyer('leaver')
    const controller = new AbortController()
    const response = await b.sessions.fetch(`${seller.base}/tokens?n=100000`, {
      method: 'POST',
      signal: controller.signal,
    })
    const { tokens } = await readAll(response, 200)
    controller.abort()
    await expect.poll(async () => (await channelOf(b.sessions)).held, { timeout: 5_000 }).toBe(0n)
    const channel = await channelOf(b.sessions)
    // What was sent was spent (the buyer read some, more were on the wire); never all of it.
    expect(channel.spent % sessionTokenPrice).toBe(0n)
    expect(channel.spent).toBeGreaterThanOrEqual(BigInt(tokens.length) * sessionTokenPrice)
    expect(channel.spent).toBeLessThan(100_000n * sessionTokenPrice)
    expect(channel.spent).toBeLessThanOrEqual(channel.highest)
  })

  it('passes a session priced per token back as its 402 when the caller pays per call', async () => {
    const b = buyer('per-call-only')
    const call = b.sessions.forCall({ metered: 'pass' })
    const answer = await call(`${seller.base}/tokens?n=5`, { method: 'POST' })
    expect(answer.status).toBe(402)
    expect(await b.sessions.list()).toEqual([])
  })

  it('counts the headroom earlier answers left: a short answer after them raises nothing', async () => {
    const b = buyer('short-answers', { streamAhead: 64n })
    const first = await b.sessions.fetch(`${seller.base}/tokens?n=16`, { method: 'POST' })
    expect((await readAll(first)).tokens).toHaveLength(16)
    const raisedFirst = b.counts.raises
    expect(raisedFirst).toBeGreaterThan(0)
    // The first answer's receipt said what was spent; the vouchers signed ahead cover the next.
    const second = await b.sessions.fetch(`${seller.base}/tokens?n=16`, { method: 'POST' })
    const { tokens, named } = await readAll(second)
    expect(tokens).toHaveLength(16)
    expect(named.map((e) => e.name)).toEqual(['payment-receipt'])
    // A raise runs beside the stream and may be sent after its last event: give it time to show.
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(b.counts.raises).toBe(raisedFirst)
    expect((await channelOf(b.sessions)).spent).toBe(32n * sessionTokenPrice)
  })

  it('signs the window ahead in the voucher of each call: short answers one after another raise nothing', async () => {
    const counted = countedBook('sequential')
    const b = buyer('sequential', { streamAhead: 64n, book: counted.book, fetch: counted.fetch })
    // The first answer has no window yet: its first units raise the voucher ahead of them.
    const opening = await b.sessions.fetch(`${seller.base}/tokens?n=16`, { method: 'POST' })
    expect((await readAll(opening)).tokens).toHaveLength(16)
    await new Promise((resolve) => setTimeout(resolve, 100))
    const before = counted.counts.raises
    // Twelve more, one after another: each call's voucher signs 64 units beyond those received,
    // so no answer runs low (raising every third answer or so, 48 units in, before).
    for (let i = 0; i < 12; i++) {
      const response = await b.sessions.fetch(`${seller.base}/tokens?n=16`, { method: 'POST' })
      expect((await readAll(response)).tokens).toHaveLength(16)
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect(counted.counts.raises - before).toBe(0)
    const channel = await channelOf(b.sessions)
    expect(channel.spent).toBe(13n * 16n * sessionTokenPrice)
    // The window, no more: at most 64 units (and the call's own) beyond those served.
    expect(channel.highest - channel.spent).toBeLessThanOrEqual(65n * sessionTokenPrice)
    expect(counted.counts.vouchersAboveMark).toBe(0)
  })

  it('shares the raises of a channel between its streams: one in flight, the window per channel', async () => {
    const counted = countedBook('shared')
    const b = buyer('shared', { streamAhead: 64n, book: counted.book, fetch: counted.fetch })
    // The channel is opened first; then 32 answers of 16 tokens stream on it at once.
    const opening = await b.sessions.fetch(`${seller.base}/tokens?n=1`, { method: 'POST' })
    expect((await readAll(opening)).tokens).toHaveLength(1)
    const before = counted.counts.raises
    const answers = await Promise.all(
      Array.from({ length: 32 }, () =>
        b.sessions.fetch(`${seller.base}/tokens?n=16`, { method: 'POST' }).then(readAll),
      ),
    )
    for (const { tokens, named } of answers) {
      expect(tokens).toHaveLength(16)
      expect(named.at(-1)?.name).toBe('payment-receipt')
    }
    // 512 tokens, 64 signed ahead per answer streaming, raised when fewer than a quarter of that
    // are left: a few raises for the channel, not one or more per answer (each answer raising on
    // its own sent 260 or so).
    await new Promise((resolve) => setTimeout(resolve, 300))
    // None at all is possible: a call whose answer starts after others have opened signs the
    // window of every answer streaming, up to the deposit, and 513 tokens fit in it (how many
    // calls do so depends on when each answer starts). The first test sees raises happen.
    const raises = counted.counts.raises - before
    expect(raises).toBeLessThanOrEqual(24)
    const channel = await channelOf(b.sessions)
    expect(channel.spent).toBe(513n * sessionTokenPrice)
    expect(channel.held).toBe(0n)
    // The window is the channel's: at most 64 tokens per answer in flight signed beyond those
    // served.
    expect(channel.highest - channel.spent).toBeLessThanOrEqual(32n * 64n * sessionTokenPrice)
    expect(counted.counts.vouchersAboveMark).toBe(0)
    // The window (32 answers of 64 tokens) is more than the deposit of 1 000 tokens: it stopped
    // at the deposit, and no top-up was made for it — nothing was owed beyond the deposit.
    expect(channel.deposit).toBe(100_000n)
    expect((await b.sessions.list())[0]?.topUps ?? []).toHaveLength(0)
  })

  it('keeps its window within the deposit, and tops up only for what the seller asks', async () => {
    // A window of 2 000 tokens on a deposit of 1 000: the raises stop at the deposit.
    const b = buyer('capped', { streamAhead: 2_000n })
    const first = await b.sessions.fetch(`${seller.base}/tokens?n=600`, { method: 'POST' })
    expect((await readAll(first)).tokens).toHaveLength(600)
    await new Promise((resolve) => setTimeout(resolve, 100))
    let [entry] = await b.sessions.list()
    expect(entry?.deposit).toBe('100000')
    expect(entry?.topUps ?? []).toHaveLength(0)
    // 600 more: the seller asks for a voucher above the deposit at the 1 000th token, and only
    // then is the deposit topped up.
    const second = await b.sessions.fetch(`${seller.base}/tokens?n=600`, { method: 'POST' })
    expect((await readAll(second)).tokens).toHaveLength(600)
    ;[entry] = await b.sessions.list()
    expect(entry?.topUps).toHaveLength(1)
    expect((await channelOf(b.sessions)).spent).toBe(1_200n * sessionTokenPrice)
  })

  it('writes the book once per block of raises, and always before a voucher above its mark', async () => {
    const counted = countedBook('blocks')
    const b = buyer('blocks', { streamAhead: 64n, book: counted.book, fetch: counted.fetch })
    const response = await b.sessions.fetch(`${seller.base}/tokens?n=500`, { method: 'POST' })
    expect((await readAll(response)).tokens).toHaveLength(500)
    // About ten raises; the call wrote the mark once, the raises once between them (a block of
    // 32 raises of their step is beyond this deposit of 1 000 tokens: the mark went to it).
    expect(counted.counts.raises).toBeGreaterThan(5)
    expect(counted.counts.writes).toBeLessThanOrEqual(2)
    expect(counted.counts.vouchersAboveMark).toBe(0)
    const [entry] = await b.sessions.list()
    expect(entry?.signed).toBe(entry?.deposit)

    // After a restart the buyer signs above the mark: the deposit is topped up first.
    const restarted = createSessionFetch({
      ...b.options,
      book: createChannelBook(join(folder, 'blocks.json')),
    })
    const again = await restarted.fetch(`${seller.base}/tokens?n=16`, { method: 'POST' })
    expect((await readAll(again)).tokens).toHaveLength(16)
    const channel = await channelOf(restarted)
    expect(channel.deposit).toBeGreaterThan(BigInt(entry?.deposit ?? 0))
    expect(channel.highest).toBeGreaterThan(BigInt(entry?.signed ?? 0))
    expect(channel.spent).toBe(516n * sessionTokenPrice)
  })
})
