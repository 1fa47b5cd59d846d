/**
 * Listing end to end on the local stack: an agent registered on the ledger emulator prepares,
 * signs and submits a seller built with each adapter (Express, Koa, Hono), and it is listed; a
 * seller failing exactly one of the four gates is not listed, and the answer names that gate (and
 * why, never what the seller answered).
 */
import type { AddressInfo } from 'node:net'
import { createAdaptorServer } from '@hono/node-server'
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { MAINNET_USDC_TYPE, useTestLedger } from 'tollgate/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { registerAgent } from '../../conformance/fixtures/agent.js'
import {
  type AdapterName,
  adapterNames,
  type RunningSeller,
  startSeller,
} from '../../conformance/fixtures/sellers.js'
import { type GatewayDatabase, openDatabase } from '../db/database.js'
import { createReprober, nextState } from './reprobe.js'
import { marketplaceRoutes } from './routes.js'
import { createMutationSigner } from './signing.js'
import { createMarketplaceStore, type MarketplaceStore } from './store.js'
import { putListingOf, submitListing } from './testHelpers.js'

const chain = useTestLedger({ beforeAll, afterAll })
let agent: Ed25519Keypair
let database: GatewayDatabase
let store: MarketplaceStore
let server: ReturnType<typeof createAdaptorServer>
let base: string

beforeAll(async () => {
  agent = chain.createTestWallet({ usdc: '0' })
  await registerAgent(chain.client, agent, chain.modulesPackage)
  database = await openDatabase({ kind: 'sqlite', file: ':memory:' })
  store = createMarketplaceStore(database.db)
  const routes = marketplaceRoutes({
    store,
    signer: createMutationSigner({ store }),
    gates: {
      client: chain.client,
      registryPackage: chain.modulesPackage,
      network: 'sui:mainnet',
      usdc: MAINNET_USDC_TYPE,
      // The sellers listen on 127.0.0.1.
      allowPrivateNetwork: true,
    },
  })
  server = createAdaptorServer({ fetch: (request) => routes.fetch(request) })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve))
  await database?.close()
})

/** Prepares, signs and submits `url` as `signer`. */
const submit = (url: string, signer: Ed25519Keypair, name = 'Answer') =>
  submitListing(base, signer, { url, name, description: 'Answers', tags: ['qa'] })

const startWith = (adapter: AdapterName, payTo: string) =>
  startSeller({ ledgerUrl: chain.url, wallet: payTo }, { adapter })

describe.each(adapterNames)('a seller built with %s', (name) => {
  it('is listed after prepare, sign and submit', async () => {
    const running = await startWith(name, agent.toSuiAddress())
    try {
      const answer = await submit(running.url, agent, `Answer (${name})`)
      expect(answer.status, JSON.stringify(answer.json)).toBe(201)
      expect(answer.json).toMatchObject({
        seller: agent.toSuiAddress(),
        url: running.url,
        state: 'listed',
        price: '20000',
        payTo: agent.toSuiAddress(),
        network: 'sui:mainnet',
      })
      const stored = await store.getListing(answer.json.id as string)
      expect(stored?.state).toBe('listed')
      const probes = await store.probesOf(answer.json.id as string, 10)
      expect(probes.map((p) => [p.kind, p.passed])).toEqual([['submission', true]])
    } finally {
      await running.close()
    }
  })
})

describe('a seller failing one gate is not listed, and the gate is named', () => {
  const cases: {
    gate: 'a' | 'b' | 'c' | 'd'
    start: (env: { wallet: string; stranger: string }) => Promise<RunningSeller>
    signer: () => Ed25519Keypair
  }[] = [
    {
      gate: 'a',
      // A good seller paying its signer, but the signer has no identity record.
      signer: () => chain.createTestWallet({ usdc: '0' }),
      start: (env) => startSeller({ ledgerUrl: chain.url, ...env }),
    },
    {
      gate: 'b',
      signer: () => agent,
      start: (env) =>
        startSeller(
          { ledgerUrl: chain.url, ...env },
          { wrap: () => async () => Response.json({ answer: 42 }) },
        ),
    },
    {
      gate: 'c',
      signer: () => agent,
      start: (env) => startSeller({ ledgerUrl: chain.url, ...env }, { payTo: 'stranger' }),
    },
    {
      gate: 'd',
      signer: () => agent,
      start: (env) => startSeller({ ledgerUrl: chain.url, ...env }, { price: '5.000001' }),
    },
  ]
  it.each(cases)('gate $gate', async ({ gate, start, signer }) => {
    const keypair = signer()
    const running = await start({
      wallet: keypair.toSuiAddress(),
      stranger: chain.createTestWallet({ usdc: '0' }).toSuiAddress(),
    })
    try {
      const answer = await submit(running.url, keypair)
      expect(answer.status).toBe(422)
      expect(answer.json).toMatchObject({ code: 'listing_refused', failedGates: [gate] })
      const [failure] = answer.json.failures as { gate: string; checks: { message: string }[] }[]
      expect(failure?.gate).toBe(gate)
      expect(failure?.checks.length).toBeGreaterThan(0)
      // Without a 402 there is no challenge to judge gates c and d on; without an identity
      // record nothing is probed at all.
      expect(answer.json.notJudged).toEqual(
        gate === 'a' ? ['b', 'c', 'd'] : gate === 'b' ? ['c', 'd'] : [],
      )
      expect(await store.listingsOf(keypair.toSuiAddress())).toEqual(
        expect.not.arrayContaining([expect.objectContaining({ url: running.url })]),
      )
    } finally {
      await running.close()
    }
  })
})

describe('the public profile', () => {
  it('shows the identity, the endpoints with their states and their probes', async () => {
    const running = await startWith('hono', agent.toSuiAddress())
    try {
      expect((await submit(running.url, agent, 'Profiled')).status).toBe(201)
    } finally {
      await running.close()
    }
    const response = await fetch(`${base}/${agent.toSuiAddress()}`)
    expect(response.status).toBe(200)
    const profile = (await response.json()) as {
      identity: { status: string; name?: string; agent?: string }
      endpoints: { url: string; state: string; probes: { kind: string; passed: boolean }[] }[]
    }
    expect(profile.identity).toMatchObject({
      status: 'found',
      name: 'fixture-seller',
      agent: agent.toSuiAddress(),
    })
    const shown = profile.endpoints.find((e) => e.url === running.url)
    expect(shown).toMatchObject({ state: 'listed', probes: [{ kind: 'submission', passed: true }] })
  })

  it('shows an address with no identity and no endpoints, and refuses a malformed one', async () => {
    const nobody = chain.createTestWallet({ usdc: '0' }).toSuiAddress()
    const profile = await (await fetch(`${base}/${nobody}`)).json()
    expect(profile).toEqual({ address: nobody, identity: { status: 'not_found' }, endpoints: [] })
    expect((await fetch(`${base}/not-an-address`)).status).toBe(400)
  })
})

describe('re-probes, with an injected clock', () => {
  it('moves listed → suspended after 3 failed probes in a row, and back when one passes', () => {
    expect(nextState('listed', 0, false)).toEqual({ state: 'listed', consecutiveFailures: 1 })
    expect(nextState('listed', 1, false)).toEqual({ state: 'listed', consecutiveFailures: 2 })
    expect(nextState('listed', 2, false)).toEqual({ state: 'suspended', consecutiveFailures: 3 })
    expect(nextState('listed', 2, true)).toEqual({ state: 'listed', consecutiveFailures: 0 })
    expect(nextState('suspended', 5, false)).toEqual({ state: 'suspended', consecutiveFailures: 6 })
    expect(nextState('suspended', 5, true)).toEqual({ state: 'listed', consecutiveFailures: 0 })
  })

  it('suspends a real seller that stops answering 402, hides it, and lists it again', async () => {
    let broken = false
    const running = await startSeller(
      {
        ledgerUrl: chain.url,
        wallet: agent.toSuiAddress(),
        stranger: chain.createTestWallet({ usdc: '0' }).toSuiAddress(),
      },
      {
        wrap: (handler) => (request) =>
          broken ? Promise.resolve(Response.json({})) : handler(request),
      },
    )
    const interval = 86_400_000
    let clock = 10_000_000
    const gates = {
      client: chain.client,
      registryPackage: chain.modulesPackage,
      network: 'sui:mainnet',
      usdc: MAINNET_USDC_TYPE,
      allowPrivateNetwork: true,
    }
    const reprober = (holder: string) =>
      createReprober({ store, gates, holder, intervalMs: interval, jitterMs: 0, now: () => clock })
    try {
      const listing = await putListingOf(
        store,
        { seller: agent.toSuiAddress(), url: running.url, name: 'Re-probed', tag: 'reprobe-test' },
        clock,
        clock,
      )
      const one = reprober('process-1')
      const visible = async () =>
        (await store.searchListings({ state: 'listed', tag: 'reprobe-test', limit: 10, offset: 0 }))
          .total
      broken = true
      const states: string[] = []
      for (let i = 0; i < 3; i++) {
        expect(await one.runOnce()).toBeGreaterThanOrEqual(1)
        const now = await store.getListing(listing.id)
        states.push(`${now?.state}/${now?.consecutiveFailures}`)
        // Not due again within the interval; another process does not probe while the lease is held.
        expect(await one.runOnce()).toBe(0)
        expect(await reprober('process-2').runOnce()).toBe(0)
        clock += interval
      }
      expect(states).toEqual(['listed/1', 'listed/2', 'suspended/3'])
      expect(await visible()).toBe(0)
      broken = false
      expect(await one.runOnce()).toBeGreaterThanOrEqual(1)
      expect(await store.getListing(listing.id)).toMatchObject({
        state: 'listed',
        consecutiveFailures: 0,
      })
      expect(await visible()).toBe(1)
      const probes = await store.probesOf(listing.id, 10)
      expect(probes.map((p) => [p.kind, p.passed, p.failedGate])).toEqual([
        ['reprobe', true, null],
        ['reprobe', false, 'b'],
        ['reprobe', false, 'b'],
        ['reprobe', false, 'b'],
      ])
    } finally {
      await running.close()
    }
  })
})
