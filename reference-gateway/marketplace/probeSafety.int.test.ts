/**
 * The listing probe is not an anonymous proxy: it probes only for a registered agent, never tells
 * the submitter what the probed URL answered (status, gate and why only), and reaches private
 * addresses only when the operator turns them on — off by default, on the embedded local stack
 * too, with a start-up warning when on beyond loopback. Real HTTP on loopback, the ledger emulator.
 */
import { randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createAdaptorServer } from '@hono/node-server'
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import fc from 'fast-check'
import { MAINNET_USDC_TYPE, useTestLedger } from 'tollgate/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { registerAgent } from '../../conformance/fixtures/agent.js'
import { type GatewayDatabase, openDatabase } from '../db/database.js'
import { privateProbesWarning } from '../server/server.js'
import { useTestGateway } from '../server/testHelpers.js'
import { marketplaceRoutes } from './routes.js'
import { createMutationSigner } from './signing.js'
import { createMarketplaceStore } from './store.js'
import { submitListing } from './testHelpers.js'

/** An internal service: `DELETE /secret` answers a secret in its body and a header. */
type Internal = { url: string; seen: string[]; secret: string; close(): Promise<void> }

async function startInternal(): Promise<Internal> {
  const seen: string[] = []
  const secret = `secret-${randomBytes(12).toString('hex')}`
  const server: Server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`)
    res.writeHead(200, { 'content-type': 'application/json', 'x-internal-token': secret })
    res.end(JSON.stringify({ deleted: true, token: secret, note: `internal ${secret}` }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/secret`,
    seen,
    secret,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

const listingOf = (url: string) => ({
  url,
  method: 'DELETE',
  name: 'Internal',
  description: 'not a seller',
})

describe('the listing routes, with private addresses allowed (an operator who set it)', () => {
  const chain = useTestLedger({ beforeAll, afterAll })
  let agent: Ed25519Keypair
  let database: GatewayDatabase
  let server: ReturnType<typeof createAdaptorServer>
  let base: string
  let internal: Internal

  beforeAll(async () => {
    agent = chain.createTestWallet({ usdc: '0' })
    await registerAgent(chain.client, agent, chain.modulesPackage)
    database = await openDatabase({ kind: 'sqlite', file: ':memory:' })
    const store = createMarketplaceStore(database.db)
    const routes = marketplaceRoutes({
      store,
      signer: createMutationSigner({ store }),
      gates: {
        client: chain.client,
        registryPackage: chain.modulesPackage,
        network: 'sui:mainnet',
        usdc: MAINNET_USDC_TYPE,
        allowPrivateNetwork: true,
      },
    })
    server = createAdaptorServer({ fetch: (request) => routes.fetch(request) })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    internal = await startInternal()
  })

  afterAll(async () => {
    await internal?.close()
    await new Promise((resolve) => server?.close(resolve))
    await database?.close()
  })

  it('probes nothing for a key with no agent identity record (gate a), and says so', async () => {
    const stranger = chain.createTestWallet({ usdc: '0' })
    const answer = await submitListing(base, stranger, listingOf(internal.url))
    expect(answer.status).toBe(422)
    expect(answer.json).toMatchObject({
      code: 'listing_refused',
      failedGates: ['a'],
      notJudged: ['b', 'c', 'd'],
      failures: [{ gate: 'a', checks: [{ id: 'gate.agent-identity', status: 'fail' }] }],
    })
    expect(internal.seen).toEqual([])
  })

  it('never reflects what the probed URL answered to a registered agent: status, gate, why', async () => {
    const answer = await submitListing(base, agent, listingOf(internal.url))
    // The internal service was reached (the operator allowed private addresses)…
    expect(internal.seen.length).toBeGreaterThan(0)
    // …but nothing it answered comes back, only the gate, the check, its status and why.
    expect(answer.status).toBe(422)
    const text = JSON.stringify(answer.json)
    expect(text).not.toContain(internal.secret)
    expect(text).not.toContain('deleted')
    expect(text).not.toContain('evidence')
    expect(answer.json).toMatchObject({ code: 'listing_refused', failedGates: ['b'] })
    const failures = answer.json.failures as {
      gate: string
      checks: Record<string, unknown>[]
    }[]
    for (const failure of failures) {
      for (const check of failure.checks) {
        expect(Object.keys(check).sort()).toEqual(['hint', 'id', 'message', 'status', 'title'])
      }
    }
    expect(failures[0]?.checks[0]?.message).toBe(
      'the check failed on an answer with HTTP status 200',
    )
  })

  it('reflects nothing of any answer (generated bodies and headers)', async () => {
    let body = ''
    let header = ''
    const echo = createServer((_req, res) => {
      res.writeHead(402, { 'cache-control': header, 'www-authenticate': `Payment ${header}` })
      res.end(body)
    })
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve))
    const url = `http://127.0.0.1:${(echo.address() as AddressInfo).port}/x`
    // A marker that cannot occur in the gateway's own words.
    const marker = fc.stringMatching(/^[A-Za-z0-9]{12,30}$/).map((s) => `QZXJ${s}`)
    try {
      await fc.assert(
        fc.asyncProperty(marker, fc.constantFrom('json', 'x402', 'text'), async (secret, shape) => {
          header = `secret=${secret}`
          body =
            shape === 'json'
              ? JSON.stringify({ [secret]: secret, error: secret })
              : shape === 'x402'
                ? JSON.stringify({
                    x402Version: 1,
                    accepts: [{ [secret]: secret, resource: secret }],
                  })
                : `${secret}\n${secret}`
          const answer = await submitListing(base, agent, { ...listingOf(url), method: 'POST' })
          expect(answer.status).toBe(422)
          expect(JSON.stringify(answer.json)).not.toContain(secret)
        }),
        { numRuns: 12 },
      )
    } finally {
      await new Promise<void>((resolve) => echo.close(() => resolve()))
    }
  })
})

describe('the gateway on its embedded local stack, with no setting', () => {
  let internal: Internal
  const warnings: Record<string, unknown>[] = []
  const logger = {
    info() {},
    debug() {},
    error() {},
    warn(object: Record<string, unknown>) {
      warnings.push(object)
    },
  }
  // Logged at the default level (`info`), so that a warning would be seen.
  const gateway = useTestGateway({ config: { logLevel: 'info' }, logger })

  beforeAll(async () => {
    internal = await startInternal()
  })

  afterAll(async () => {
    await internal?.close()
  })

  it('does not let a registered agent probe loopback', async () => {
    const emulator = gateway.emulator
    const client = gateway.ledgerClient
    const agent = emulator.createTestWallet({ usdc: '0' })
    await registerAgent(client, agent, emulator.modulesPackage)
    const answer = await submitListing(`${gateway.url}/v1/agent`, agent, listingOf(internal.url))
    expect(answer.status).toBe(422)
    expect(answer.json).toMatchObject({ code: 'listing_refused', failedGates: ['b'] })
    expect(internal.seen).toEqual([])
    expect(warnings.filter((w) => w.event === 'listing_private_network')).toEqual([])
  })
})

describe('the start-up warning for private probes', () => {
  it('is given when they are on and the gateway listens beyond loopback, only then', () => {
    for (const host of ['0.0.0.0', '::', '10.1.2.3', 'gateway.internal']) {
      expect(privateProbesWarning({ listingAllowPrivateNetwork: true, host })).toContain(
        'LISTING_ALLOW_PRIVATE_NETWORK is on',
      )
      expect(privateProbesWarning({ listingAllowPrivateNetwork: false, host })).toBeUndefined()
    }
    for (const host of ['127.0.0.1', '127.0.0.2', 'localhost', '::1', '[::1]']) {
      expect(privateProbesWarning({ listingAllowPrivateNetwork: true, host })).toBeUndefined()
    }
  })
})
