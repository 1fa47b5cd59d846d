/**
 * The HTTP surface of every mount under fuzz (fast-check): 10 000 random requests per mount —
 * methods, raw paths, headers, bodies, and payment credentials made by mutating valid ones — over
 * kept-alive loopback connections to the contract app. Two properties:
 *
 * - the paywall never answers 5xx (the app's only 5xx route, `/v1/boom`, is not aimed at);
 * - a paid handler never runs without a settled payment: each paid handler, as it starts, asks the
 *   store about the payment it was handed (synchronously: the memory store reads at call time).
 *
 * `FUZZ_SEED` replays a run; `FUZZ_RUNS` changes the number of batches of 50 (default 200). Each
 * mount takes a few seconds on an idle machine; the timeout is generous for a loaded one.
 */
import fc from 'fast-check'
import { useTestLedger } from 'tollgate/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { PaidRequestInfo } from '../src/engine/sellerTypes.js'
import { createLedger } from '../src/ledger/index.js'
import { parseChallenge } from '../src/mpp.js'
import { createMemoryStore } from '../src/stores/memory.js'
import { mppAuthorization, x402PaymentHeader } from '../src/testing/payments.js'
import { parsePaymentRequired } from '../src/x402.js'
import { frameworks, type StartedApp, startApp } from './contract/apps.js'
import { type FuzzRequest, type FuzzResult, fuzzClient, fuzzRequests } from './contract/fuzz.js'

const secret = 'a-challenge-secret-of-at-least-32-bytes!'
const publicBaseUrl = 'https://api.example.com'
/** A fixed clock: the valid credentials' challenges never expire during the run. */
const clock = Date.now()
const runs = Number(process.env.FUZZ_RUNS ?? 200)
const batch = 50
const seed = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED)
/** Every priced path of the contract app but `/v1/boom`, whose handler fails on purpose. */
const paidPaths = [
  '/v1/things/1',
  '/v1/echo',
  '/v1/teapot',
  '/v1/missing',
  '/v1/stream',
  '/v1/slow',
  '/v1/quote',
]

const chain = useTestLedger({ beforeAll, afterAll })

/** A request as a failure message shows it (bodies cut short). */
function describeRequest(request: FuzzRequest, result: FuzzResult): string {
  const body =
    request.body === undefined
      ? ''
      : typeof request.body === 'string'
        ? request.body.slice(0, 80)
        : `<${request.body.byteLength} bytes>`
  const headers = Object.fromEntries(
    Object.entries(request.headers).map(([k, v]) => [k, v.length > 80 ? `${v.slice(0, 80)}…` : v]),
  )
  return `${JSON.stringify(result)} for ${request.method} ${request.path} ${JSON.stringify(headers)} ${body}`
}

describe.each(frameworks)('%s mount under fuzz', (framework) => {
  let app: StartedApp
  const store = createMemoryStore()
  /** Paid handler runs that did not see a settled payment. */
  const violations: string[] = []
  const checks: Promise<void>[] = []
  let paidRuns = 0

  function onPaidCall(path: string, info: PaidRequestInfo | undefined) {
    paidRuns++
    if (info === undefined) {
      violations.push(`${path}: the handler ran without a payment`)
      return
    }
    const digest = info.payment.digest
    checks.push(
      store.get(digest).then((record) => {
        if (record?.state !== 'settled') {
          violations.push(`${path}: the handler ran on a payment in state ${record?.state}`)
        }
      }),
    )
  }

  beforeAll(async () => {
    app = await startApp(
      framework,
      {
        payTo: chain.createTestWallet({ usdc: '1' }).toSuiAddress(),
        ledger: createLedger({ url: chain.url }),
        store,
        secrets: [secret],
        publicBaseUrl,
        now: () => clock,
      },
      { onPaidCall },
    )
  })

  afterAll(async () => {
    await app?.close()
  })

  async function challenge(path: string, body?: string) {
    const response = await fetch(app.url + path, {
      method: 'POST',
      ...(body === undefined ? {} : { body, headers: { 'content-type': 'application/json' } }),
    })
    expect(response.status).toBe(402)
    const requirement = parsePaymentRequired(await response.json()).accepts[0]!
    const mpp = parseChallenge(response.headers.get('www-authenticate') ?? '')
    return { requirement, mpp }
  }

  it(`answers ${runs * batch} random requests without a 5xx, and runs no handler unpaid`, async () => {
    // Valid credentials to mutate (and to present as they are: each is served at most once), each
    // from its own payer (signed transfers of one coin would compete for it).
    const payer = () => chain.createTestWallet({ usdc: '1' })
    const x402: string[] = []
    const paying: FuzzRequest[] = []
    const json = { 'content-type': 'application/json' }
    for (const [path, body] of [
      ['/v1/things/1', undefined],
      ['/v1/things/1', undefined],
      ['/v1/quote', undefined],
      ['/v1/echo', '{"text":"hi"}'],
    ] as const) {
      const header = await x402PaymentHeader(
        chain.client,
        payer(),
        (await challenge(path, body)).requirement,
      )
      x402.push(header)
      paying.push({ method: 'POST', path, headers: { ...json, 'x-payment': header }, body })
    }
    const mpp: string[] = []
    for (let i = 0; i < 2; i++) {
      const { authorization } = await mppAuthorization(
        chain.client,
        payer(),
        (await challenge('/v1/things/1')).mpp,
      )
      mpp.push(authorization)
      paying.push({
        method: 'POST',
        path: '/v1/things/1',
        headers: { authorization },
        body: undefined,
      })
    }

    const http = fuzzClient(app.url)
    let sent = 0
    const statuses = new Map<number | string, number>()
    /** Requests the server closed the connection on without an answer, even on a fresh one. */
    const errorSamples: string[] = []
    const started = performance.now()
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fuzzRequests({ paidPaths, x402, mpp, paying }), {
            minLength: batch,
            maxLength: batch,
          }),
          async (requests) => {
            // Each batch is judged on its own, so that shrinking narrows down the batch at fault.
            violations.splice(0)
            const results = await http.sendAll(requests)
            sent += requests.length
            await Promise.all(checks.splice(0))
            results.forEach((result, i) => {
              const key = 'status' in result ? result.status : `error: ${result.error}`
              statuses.set(key, (statuses.get(key) ?? 0) + 1)
              if ('error' in result && errorSamples.length < 5) {
                errorSamples.push(describeRequest(requests[i]!, result))
              }
              if ('status' in result && result.status >= 500) {
                throw new Error(`a 5xx: ${describeRequest(requests[i]!, result)}`)
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
    console.info(
      `${framework}: ${sent} requests in ${seconds.toFixed(1)} s, ${paidRuns} paid handler runs,`,
      Object.fromEntries(statuses),
      errorSamples,
    )
    expect(sent).toBeGreaterThanOrEqual(runs * batch)
    expect(violations).toEqual([])
    expect(errorSamples).toEqual([])
  }, 240_000)
})
