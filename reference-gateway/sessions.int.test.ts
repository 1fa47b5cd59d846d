/**
 * The gateway's sessions, end to end on its embedded default (SQLite, the ledger emulator, the stub
 * upstreams and model server): a catalog route paid per call over one channel (one ledger
 * transaction for many calls), closed later by a buyer that starts afresh from its channel book
 * (the close reads the challenge with a bare request, no body) and recorded as the gateway's one
 * sale from the channel; the keyless inference route paid
 * per streamed token — what the channel spent is exactly the text chunks sent — and a buffered
 * session call refused before anything is charged.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { Session } from 'tollgate'
import { createChannelBook, createSessionFetch, type SessionFetchOptions } from 'tollgate/client'
import { afterAll, describe, expect, it } from 'vitest'
import { serviceUrl, uniqueName } from '../src/stores/contract.js'
import { examplePathOf, paidEntries, priceOf } from './catalog/catalog.js'
import { type TestGateway, useTestGateway } from './server/testHelpers.js'

const gateway = useTestGateway()
const folder = mkdtempSync(join(tmpdir(), 'tollgate-gateway-sessions-'))
const databaseUrl = serviceUrl('DATABASE_URL')
const redisUrl = serviceUrl('REDIS_URL')

function buyer(name: string, on: TestGateway = gateway) {
  const wallet = on.emulator.createTestWallet({ usdc: '5', sui: '1' })
  const options: SessionFetchOptions = {
    signer: wallet,
    client: on.ledgerClient,
    pinned: [
      {
        network: 'mainnet',
        package: on.emulator.modulesPackage,
        registry: on.emulator.channel.registry,
      },
    ],
    maxDeposit: 1_000_000n,
    deposit: () => 500_000n,
    book: createChannelBook(join(folder, `${name}.json`)),
  }
  return { wallet, options, sessions: createSessionFetch(options) }
}

/** The gateway's books of a channel. */
const booksOf = (channelId: string | undefined, on: TestGateway = gateway) => {
  const sessions = on.sessions
  if (sessions === undefined) throw new Error('the embedded gateway offers sessions')
  return sessions.store.get(channelId ?? '')
}

/**
 * A catalog route paid per call over one channel on `on`; the channel closed by a buyer that starts
 * afresh from its book (it reads the challenge with a bare POST, no body).
 */
async function payCatalogOverSession(on: TestGateway, name: string): Promise<void> {
  const entry = paidEntries(on.catalog).find(
    (e) => e.endpoint.path === '/openai/v1/chat/completions',
  )
  if (entry === undefined) throw new Error('no chat endpoint in the catalog')
  const url = `${on.url}${examplePathOf(entry.endpoint)}`
  const body = JSON.stringify(entry.endpoint.shape.example)
  const init = { method: 'POST', headers: { 'content-type': 'application/json' }, body }

  // The 402 offers the one-off charge and the session, per call.
  const offered = await fetch(url, init)
  expect(offered.status).toBe(402)
  const challenges = offered.headers.get('www-authenticate') ?? ''
  expect(challenges).toMatch(/intent="charge"/)
  expect(challenges).toMatch(/intent="session"/)

  const b = buyer(name, on)
  for (let i = 0; i < 3; i++) {
    const answer = await b.sessions.fetch(url, init)
    expect(answer.status).toBe(200)
    await answer.arrayBuffer()
  }
  const [channel] = await b.sessions.list()
  const price = priceOf(entry.endpoint)
  // A call's price is committed once its answer was handed to the server: a moment after the
  // buyer has read it.
  await expect.poll(async () => (await booksOf(channel?.channelId, on))?.spent).toBe(3n * price)

  // A buyer starting afresh (a new process): the offer is read again with a bare POST.
  const later = createSessionFetch(b.options)
  const closed = await later.close(channel?.channelId ?? '')
  expect(closed).toMatchObject({ spent: 3n * price, refunded: 500_000n - 3n * price })
  expect(await on.usdcBalance(b.wallet.toSuiAddress())).toBe(5_000_000n - 3n * price)

  // The gateway's sales: the close that paid it, once — not a sale per call (the calls moved no
  // money on the ledger).
  const feed = (await (await fetch(`${on.url}/v1/activity?limit=100`)).json()) as {
    items: { buyer: string; digest: string; amount: string; resource: string | null }[]
  }
  const payer = b.wallet.toSuiAddress()
  expect(feed.items.filter((item) => item.buyer === payer)).toEqual([
    expect.objectContaining({
      digest: closed.digest,
      amount: (3n * price).toString(),
      resource: null,
    }),
  ])
}

describe('the gateway with sessions', () => {
  it('serves a catalog route per call over one channel, and closes it for a buyer that starts afresh', () =>
    payCatalogOverSession(gateway, 'catalog'))

  it('meters the keyless route per streamed token, and refuses a buffered session call', async () => {
    const [model] = (
      (await (await fetch(`${gateway.url}/open/v1/models`)).json()) as { data: { id: string }[] }
    ).data
    const url = `${gateway.url}/open/v1/chat/completions`
    const ask = (stream: boolean) => ({
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        model: model?.id,
        messages: [{ role: 'user', content: 'Count to twenty.' }],
        max_tokens: 64,
        stream,
      }),
    })
    const b = buyer('tokens')
    const answer = await b.sessions.fetch(url, ask(true))
    expect(answer.status).toBe(200)
    expect(answer.headers.get('content-type')).toMatch(/text\/event-stream/)
    let chunks = 0
    let receipt: Record<string, string> | undefined
    if (answer.body === null) throw new Error('no body')
    for await (const event of Session.sseEvents(answer.body)) {
      const { name, data } = Session.sseFields(event)
      if (name === 'payment-receipt') receipt = JSON.parse(data ?? '{}')
      else if (name === 'message' && data !== undefined && data !== '[DONE]') {
        const content = (JSON.parse(data) as { choices?: { delta?: { content?: string } }[] })
          .choices?.[0]?.delta?.content
        if (typeof content === 'string' && content !== '') chunks++
      }
    }
    expect(chunks).toBeGreaterThan(3)
    const [channel] = await b.sessions.list()
    const books = await booksOf(channel?.channelId)
    const tokenPrice = gateway.sessions?.tokenPrice ?? 0n
    expect(books?.spent).toBe(BigInt(chunks) * tokenPrice)
    expect(receipt).toMatchObject({ spent: String(BigInt(chunks) * tokenPrice) })

    const buffered = await b.sessions.fetch(url, ask(false))
    expect(buffered.status).toBe(400)
    expect(((await buffered.json()) as { error: { code: string } }).error.code).toBe(
      'stream_required',
    )
    expect((await booksOf(channel?.channelId))?.spent).toBe(books?.spent)
  })
})

describe('the gateway with sessions and SESSION_UNIT_WINDOW', () => {
  const windowOfOne = useTestGateway({ config: { sessionUnitWindow: 1 } })
  it("meters the keyless route with the configured window (the library's default otherwise)", () => {
    expect(windowOfOne.sessions?.perToken.unitWindow).toBe(1)
    expect(gateway.sessions?.perToken.unitWindow).toBe(16)
  })
})

// The channel books beside a PostgreSQL or Redis payment store (every process shares them).
describe.skipIf(databaseUrl === undefined)('the gateway with sessions on PostgreSQL', () => {
  const prefix = uniqueName('gw_sessions').toLowerCase()
  // The relational tables (API keys, credit) in a schema of their own, dropped afterwards.
  const onPostgres = useTestGateway({
    config: { store: 'postgres', databaseUrl, storePrefix: prefix, databaseSchema: prefix },
  })
  afterAll(async () => {
    const pool = new pg.Pool({ connectionString: databaseUrl })
    await pool.query(`DROP SCHEMA IF EXISTS "${prefix}" CASCADE`)
    await pool.end()
  })
  it('keeps the channel books in PostgreSQL', () => payCatalogOverSession(onPostgres, 'postgres'))
})

describe.skipIf(redisUrl === undefined)('the gateway with sessions on Redis', () => {
  const onRedis = useTestGateway({
    config: { store: 'redis', redisUrl, storePrefix: uniqueName('gw_sessions').toLowerCase() },
  })
  it('keeps the channel books in Redis', () => payCatalogOverSession(onRedis, 'redis'))
})
