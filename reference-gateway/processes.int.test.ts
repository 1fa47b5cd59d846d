/**
 * Two `tollgate gateway` processes (the real CLI, configured by environment variables only) share
 * one PostgreSQL database or one Redis: both serve paid calls, and a payment accepted by one is
 * rejected as a replay by the other — also when both receive it at the same moment. And a gateway
 * killed (SIGKILL) with paid calls in flight, on SQLite, PostgreSQL and Redis: each of its buyers
 * is served once when it presents the payment again, or refunded within the stated window.
 */
import type { ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import pg from 'pg'
import { useTestLedger } from 'tollgate/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { serviceUrl, uniqueName } from '../src/stores/contract.js'
import { x402PaymentHeader } from '../src/testing/payments.js'
import { type StubUpstreams, startStubUpstreams } from '../src/testing/upstreams/stub.js'
import { parsePaymentRequired, x402Headers } from '../src/x402.js'
import { type GatewayProcess, startGatewayProcess as startProcess } from './testHelpers.js'

const databaseUrl = serviceUrl('DATABASE_URL')
const redisUrl = serviceUrl('REDIS_URL')
const publicBaseUrl = 'http://gateway.test'
const path = '/openai/v1/chat/completions'
const body = JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] })

const chain = useTestLedger({ beforeAll, afterAll }, { latencyMs: 20 })
let operatorKey: string
let folder: string
const children = new Set<ChildProcess>()

beforeAll(async () => {
  operatorKey = chain.createTestWallet({ usdc: '10', sui: '10' }).getSecretKey()
  folder = mkdtempSync(join(tmpdir(), 'tollgate-gateways-'))
})

/** PostgreSQL schemas the gateways created (dropped at the end, when they exist). */
const schemas: string[] = []

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL')
  if (databaseUrl !== undefined) {
    const client = new pg.Client({ connectionString: databaseUrl })
    await client.connect()
    for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await client.end()
  }
  if (folder) rmSync(folder, { recursive: true, force: true })
})

type Gateway = GatewayProcess

/** A gateway process on the shared ledger, with `env` over the settings both processes share. */
function startGatewayProcess(env: Record<string, string>): Promise<Gateway> {
  return startProcess(
    {
      LEDGER_URL: chain.url,
      OPERATOR_KEY: operatorKey,
      CHALLENGE_SECRETS: 'one-secret-shared-by-both-gateway-processes',
      PUBLIC_BASE_URL: publicBaseUrl,
      UPSTREAMS: 'stub',
      LOG_LEVEL: 'warn',
      DATA_DIR: folder,
      ...env,
    },
    children,
  )
}

function post(gateway: Gateway, headers: Record<string, string> = {}) {
  return fetch(`${gateway.url}${path}`, {
    method: 'POST',
    // The public URL both processes share (they sit behind one load balancer).
    headers: { 'content-type': 'application/json', ...headers },
    body,
  })
}

async function payment(gateway: Gateway, payer: Ed25519Keypair) {
  const challenge = await post(gateway)
  expect(challenge.status).toBe(402)
  const requirement = parsePaymentRequired(await challenge.json()).accepts[0]
  if (!requirement) throw new Error('no requirement')
  expect(requirement.resource).toBe(`${publicBaseUrl}${path}`)
  return { [x402Headers.payment]: await x402PaymentHeader(chain.client, payer, requirement) }
}

const stores = [
  { name: 'PostgreSQL', url: databaseUrl, env: (url: string) => ({ DATABASE_URL: url }) },
  { name: 'Redis', url: redisUrl, env: (url: string) => ({ REDIS_URL: url, STORE: 'redis' }) },
]

for (const store of stores) {
  // Skipped without the service URL (DATABASE_URL / REDIS_URL unset); CI_REQUIRE_SERVICES=1 fails instead.
  describe.skipIf(store.url === undefined)(`two gateway processes on one ${store.name}`, () => {
    let a: Gateway
    let b: Gateway
    beforeAll(async () => {
      const prefix = uniqueName('gw').toLowerCase()
      const env = {
        ...store.env(store.url as string),
        STORE_PREFIX: prefix,
        // The relational tables (API keys, credit) in a schema of their own, dropped afterwards.
        ...(store.name === 'PostgreSQL' ? { DATABASE_SCHEMA: prefix } : {}),
      }
      schemas.push(prefix)
      ;[a, b] = await Promise.all([startGatewayProcess(env), startGatewayProcess(env)])
    })
    afterAll(async () => {
      for (const g of [a, b]) g?.child.kill('SIGTERM')
      await Promise.all([a?.exited, b?.exited])
    })

    it('both serve paid calls, and a payment served by one is a rejected replay at the other', async () => {
      for (const [first, second] of [
        [a, b],
        [b, a],
      ] as const) {
        const payer = chain.createTestWallet({ usdc: '1', sui: '1' })
        const headers = await payment(first, payer)
        const paid = await post(first, headers)
        expect(paid.status).toBe(200)
        expect(((await paid.json()) as { object: string }).object).toBe('chat.completion')
        const replay = await post(second, headers)
        expect(replay.status).toBe(402)
        const again = await post(first, headers)
        expect(again.status).toBe(402)
      }
    })

    it('one payment sent to both at once is served exactly once', async () => {
      for (let round = 0; round < 3; round++) {
        const payer = chain.createTestWallet({ usdc: '1', sui: '1' })
        const headers = await payment(a, payer)
        const answers = await Promise.all([
          post(a, headers),
          post(b, headers),
          post(a, headers),
          post(b, headers),
        ])
        const statuses = answers.map((r) => r.status).sort()
        expect(statuses.filter((s) => s === 200)).toHaveLength(1)
        expect(statuses.filter((s) => s !== 200 && s !== 402 && s !== 409)).toEqual([])
      }
    })
  })
}

/**
 * The OpenAI-style upstream of the crash test: while `hanging`, it counts each request and never
 * answers it (the paid calls are in flight); afterwards it answers from the stub upstreams.
 */
async function startHangingUpstream(stubs: StubUpstreams) {
  const state = { hanging: true, arrived: 0 }
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    if (state.hanging) {
      state.arrived++
      return
    }
    const answer = await fetch(`${stubs.origin}${req.url ?? '/'}`, {
      method: req.method ?? 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: req.headers.authorization ?? '',
      },
      body: Buffer.concat(chunks),
    })
    res.writeHead(answer.status, {
      'content-type': answer.headers.get('content-type') ?? 'application/json',
    })
    res.end(Buffer.from(await answer.arrayBuffer()))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    state,
    baseUrl: `http://127.0.0.1:${port}/openai/v1`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

const usdc = (address: string) => chain.usdcBalance(address)

const crashStores = [{ name: 'SQLite', url: 'sqlite', env: () => ({ STORE: 'sqlite' }) }, ...stores]

describe('a gateway killed (SIGKILL) with paid calls in flight', () => {
  const calls = 12
  // Short, so that the test runs in seconds (the defaults are 30 s, 10 s and 10 s), yet long enough
  // that the first re-presentation surely meets the dead process's lease on a loaded machine.
  const lease = { SERVE_LEASE_MS: '5000', LEASE_SWEEP_GRACE_MS: '3000' }
  const sweep = { LEASE_SWEEP_INTERVAL_MS: '200', REFUND_INTERVAL_MS: '200' }

  for (const store of crashStores) {
    it.skipIf(store.url === undefined)(
      `${store.name}: presented again, each payment is told to retry, then served once; the others are refunded`,
      async () => {
        const stubs = await startStubUpstreams()
        const upstream = await startHangingUpstream(stubs)
        const prefix = uniqueName('gwcrash').toLowerCase()
        const dataDir = mkdtempSync(join(folder, 'crash-'))
        const env = {
          ...store.env(store.url as string),
          ...lease,
          ...sweep,
          STORE_PREFIX: prefix,
          DATA_DIR: dataDir,
          UPSTREAM_URL_OPENAI: upstream.baseUrl,
          ...(store.name === 'PostgreSQL' ? { DATABASE_SCHEMA: prefix } : {}),
        }
        if (store.name === 'PostgreSQL') schemas.push(prefix)
        // A dies mid-call; B shares its store (another process behind the same balancer).
        const [doomed, next] = await Promise.all([
          startGatewayProcess(env),
          startGatewayProcess(env),
        ])
        try {
          const buyers = await Promise.all(
            Array.from({ length: calls }, async () => {
              const wallet = chain.createTestWallet({ usdc: '1', sui: '1' })
              const address = wallet.toSuiAddress()
              return { address, headers: await payment(doomed, wallet), start: await usdc(address) }
            }),
          )
          const inFlight = buyers.map((b) => post(doomed, b.headers).catch(() => null))
          // Every call is paid, settled, and its upstream request sent: the gateway dies.
          await expect.poll(() => upstream.state.arrived, { timeout: 30_000 }).toBe(calls)
          doomed.child.kill('SIGKILL')
          await doomed.exited
          expect(await Promise.all(inFlight)).toEqual(buyers.map(() => null))
          upstream.state.hanging = false
          const returning = buyers.slice(0, calls / 2)
          const away = buyers.slice(calls / 2)
          // Presented again at once: told to retry while the dead process's lease may run.
          const first = await post(next, returning[0]!.headers)
          expect(first.status).toBe(402)
          expect(((await first.json()) as { code?: string }).code).toBe('settlement_pending')
          expect(Number(first.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
          // Every buyer was charged once (the ledger's balances).
          const price = buyers[0]!.start - (await usdc(buyers[0]!.address))
          expect(price).toBeGreaterThan(0n)
          for (const b of buyers) expect(await usdc(b.address)).toBe(b.start - price)
          // Following Retry-After, each returning buyer is served once.
          const outcomes = await Promise.all(
            returning.map(async (b) => {
              for (let attempt = 0; attempt < 10; attempt++) {
                const response = await post(next, b.headers)
                if (response.status === 200) {
                  return ((await response.json()) as { object?: string }).object
                }
                const body = (await response.json()) as { code?: string }
                if (body.code !== 'settlement_pending') {
                  return `${response.status} ${JSON.stringify(body).slice(0, 300)}`
                }
                const wait = Number(response.headers.get('retry-after')) * 1000
                await new Promise((resolve) => setTimeout(resolve, wait))
              }
              return 'gave up'
            }),
          )
          expect(outcomes).toEqual(returning.map(() => 'chat.completion'))
          // The others never come back: refunded in full, read from the ledger.
          await expect
            .poll(
              async () => Promise.all(away.map(async (b) => (await usdc(b.address)) - b.start)),
              { timeout: 20_000, interval: 250 },
            )
            .toEqual(away.map(() => 0n))
          await new Promise((resolve) => setTimeout(resolve, 1_000))
          for (const b of returning) expect(await usdc(b.address)).toBe(b.start - price)
          for (const b of away) expect(await usdc(b.address)).toBe(b.start)
        } finally {
          next.child.kill('SIGTERM')
          await next.exited
          await upstream.stop()
          await stubs.stop()
        }
      },
    )
  }
})
