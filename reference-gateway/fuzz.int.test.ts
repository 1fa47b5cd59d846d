/**
 * The gateway's HTTP surface under fuzz (fast-check): 10 000 random requests — methods, raw paths
 * (catalog paths, their variants, random ones), headers, bodies (random, and the catalog's
 * examples), and payment credentials made by mutating valid ones — over kept-alive loopback
 * connections to a gateway on the ledger emulator and the stub upstreams. Two properties:
 *
 * - the gateway never answers 5xx (the stub upstreams do not fail);
 * - a paid handler never runs without a settled payment: the handler's upstream call (the only
 *   thing a paid handler does) goes through the gateway's upstream `fetch`, which asks, as it is
 *   called, whether a settled payment is in flight (the free model list aside).
 *
 * `FUZZ_SEED` replays a run; `FUZZ_RUNS` changes the number of batches of 50 (default 200).
 */
import fc from 'fast-check'
import { useTestLedger } from 'tollgate/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  type FuzzRequest,
  type FuzzResult,
  fuzzClient,
  fuzzRequests,
} from '../adapters/contract/fuzz.js'
import type { SellerEvent } from '../src/engine/sellerTypes.js'
import { parseChallenge } from '../src/mpp.js'
import { mppAuthorization, x402PaymentHeader } from '../src/testing/payments.js'
import { parsePaymentRequired } from '../src/x402.js'
import { paidEntries } from './catalog/catalog.js'
import { defaultCatalog } from './catalog/default.js'
import { useTestGateway } from './server/testHelpers.js'

const runs = Number(process.env.FUZZ_RUNS ?? 200)
const batch = 50
const seed = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED)
/** A few paid endpoints of the catalog, of different families. */
const targets = paidEntries(defaultCatalog())
  .filter((entry, i, all) => all.findIndex((e) => e.service.family === entry.service.family) === i)
  .slice(0, 6)

const chain = useTestLedger({ beforeAll, afterAll })
const events: SellerEvent[] = []
/** Upstream calls made while no paid call was in flight. */
const violations: string[] = []
/** Whether the gateway has started (its own start-up calls are not counted). */
let started = false

const gateway = useTestGateway(() => ({
  config: {
    ledgerUrl: chain.url,
    payTo: chain.createTestWallet({ usdc: '1' }).toSuiAddress(),
    challengeSecrets: 'a-test-secret-of-at-least-thirty-two-bytes',
    store: 'memory',
    upstreams: 'stub',
  },
  onEvent: (event) => events.push(event),
  fetch: (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url
    // The model list and the confidential model's scheduled re-attestation (every minute, with
    // a fresh nonce) are the gateway's own calls, not a paid call's upstream request.
    const own = /\/(models|attestation)$/.test(new URL(url).pathname)
    if (!own && started && gateway.gateway.paidInFlight() === 0) {
      violations.push(`an upstream call with no paid call in flight: ${url}`)
    }
    return globalThis.fetch(input, init)
  },
}))

beforeAll(() => {
  started = true
})

describe('the gateway under fuzz', () => {
  it(`answers ${runs * batch} random requests without a 5xx, and runs no handler unpaid`, async () => {
    const running = gateway
    // Each credential from its own payer (signed transfers of one coin would compete for it).
    const payer = () => chain.createTestWallet({ usdc: '5' })
    const bodies = targets.map((entry) => JSON.stringify(entry.endpoint.shape.example))
    const challenge = async (path: string, body: string) => {
      const response = await fetch(running.url + path, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      })
      expect(response.status).toBe(402)
      return {
        requirement: parsePaymentRequired(await response.json()).accepts[0]!,
        mpp: parseChallenge(response.headers.get('www-authenticate') ?? ''),
      }
    }
    const x402: string[] = []
    const mpp: string[] = []
    const paying: FuzzRequest[] = []
    const json = { 'content-type': 'application/json' }
    for (const [i, entry] of targets.slice(0, 2).entries()) {
      const path = entry.endpoint.path
      const body = bodies[i]!
      const header = await x402PaymentHeader(
        chain.client,
        payer(),
        (await challenge(path, body)).requirement,
      )
      x402.push(header)
      paying.push({ method: 'POST', path, headers: { ...json, 'x-payment': header }, body })
      const { authorization } = await mppAuthorization(
        chain.client,
        payer(),
        (await challenge(path, body)).mpp,
      )
      mpp.push(authorization)
      paying.push({ method: 'POST', path, headers: { ...json, authorization }, body })
    }

    const http = fuzzClient(running.url)
    let sent = 0
    const statuses = new Map<number | string, number>()
    /** Requests the server closed the connection on without an answer, even on a fresh one. */
    const errorSamples: string[] = []
    const started = performance.now()
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(
            fuzzRequests({
              paidPaths: targets.map((entry) => entry.endpoint.path),
              x402,
              mpp,
              bodies,
              paying,
            }),
            { minLength: batch, maxLength: batch },
          ),
          async (requests) => {
            const results: FuzzResult[] = await http.sendAll(requests)
            sent += requests.length
            results.forEach((result, i) => {
              const key = 'status' in result ? result.status : `error: ${result.error}`
              statuses.set(key, (statuses.get(key) ?? 0) + 1)
              if ('error' in result && errorSamples.length < 5) {
                const request = requests[i]!
                errorSamples.push(`${result.error} for ${request.method} ${request.path}`)
              }
              if ('status' in result && result.status >= 500) {
                const request = requests[i]!
                throw new Error(`a ${result.status} for ${request.method} ${request.path}`)
              }
            })
            if (violations.length > 0) throw new Error(violations.join('\n'))
          },
        ),
        { numRuns: runs, ...(seed === undefined ? {} : { seed }) },
      )
    } finally {
      http.close()
    }
    const seconds = (performance.now() - started) / 1000
    const settled = events.filter((e) => e.type === 'settled').length
    console.info(
      `gateway: ${sent} requests in ${seconds.toFixed(1)} s, ${settled} settled payments,`,
      Object.fromEntries(statuses),
      errorSamples,
    )
    expect(sent).toBeGreaterThanOrEqual(runs * batch)
    expect(violations).toEqual([])
    expect(errorSamples).toEqual([])
  }, 240_000)
})
