/**
 * Test-only set-up of the engine's end-to-end suites (the paywall's and x402 version 2's), not
 * exported: one paywall over the test ledger with the memory store, its routes served by a real
 * HTTP server on 127.0.0.1.
 *
 * @module
 */
import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { afterAll, beforeAll } from 'vitest'
import { createLedger } from '../ledger/index.js'
import { createMemoryStore } from '../stores/memory.js'
import type { PaymentStore } from '../stores/types.js'
import type { TestLedger } from '../testing/index.js'
import { createPaywall } from './paywall.js'
import type { Paywall, PaywallOptions } from './types.js'

/** The paywall's options, less those the set-up provides (`ledger`: the test ledger; `store`). */
export type TestPaywallOptions = Omit<PaywallOptions, 'ledger' | 'store'>

/** What {@link useTestPaywall} started, readable from `beforeAll` on. */
export type TestPaywall = {
  readonly paywall: Paywall
  /** The paywall's memory store. */
  readonly store: PaymentStore
  /** `http://127.0.0.1:<port>`, where the routes are served. */
  readonly base: string
}

/**
 * Before the tests, creates a paywall over `chain` with a fresh memory store and serves
 * `routes(paywall)` on a free loopback port; closes the server after them. Call it after
 * `useTestLedger`, so that the ledger is up first.
 */
export function useTestPaywall(
  chain: TestLedger,
  options: TestPaywallOptions,
  routes: (paywall: Paywall) => (request: Request) => Response | Promise<Response>,
): TestPaywall {
  let started: (TestPaywall & { close(): void }) | undefined
  const running = () => {
    if (!started) throw new Error('useTestPaywall: the paywall is readable from beforeAll on')
    return started
  }
  beforeAll(async () => {
    const store = createMemoryStore()
    const paywall = createPaywall({ ...options, ledger: createLedger({ url: chain.url }), store })
    const server = serve({ port: 0, hostname: '127.0.0.1', fetch: routes(paywall) })
    await new Promise((resolve) => server.once('listening', resolve))
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    started = { paywall, store, base, close: () => server.close() }
  })
  afterAll(() => {
    started?.close()
  })
  return {
    get paywall() {
      return running().paywall
    },
    get store() {
      return running().store
    },
    get base() {
      return running().base
    },
  }
}
