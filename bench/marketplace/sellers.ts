/**
 * The stub sellers of `bench/marketplace/run.ts`, in their own process: the ledger emulator, one
 * agent registered on it, and one Hono paywall on 127.0.0.1 answering every `POST /s/{n}` with a
 * 402 that pays the agent (each listing is its own URL). Prints one JSON line:
 * `{ url, ledgerUrl, modulesPackage, agent }` (`url` + `/s/<n>` is a seller).
 */
import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import { createLedger, createMemoryStore } from 'tollgate'
import { registerAgent } from 'tollgate/conformance'
import { paywall, type TollgateEnv } from 'tollgate/hono'
import { startLedger } from 'tollgate/testing'

const chain = await startLedger({ latencyMs: 0 })
const agent = chain.createTestWallet({ usdc: '0', sui: '1' })
const registered = await registerAgent({
  ledger: createLedger({ url: chain.url }),
  signer: agent,
  name: 'bench-seller',
  registryPackage: chain.modulesPackage,
})
if (registered.status !== 'registered') throw registered.error
const paid = paywall({
  routes: { 'POST /s/:n': { price: '0.01', maxTimeoutSeconds: 5 } },
  payTo: agent.toSuiAddress(),
  ledger: chain.url,
  store: createMemoryStore(),
  secrets: 'marketplace-bench-seller-secret-of-32-bytes-or-more',
})
const app = new Hono<TollgateEnv>()
app.use(paid)
app.post('/s/:n', (c) => c.json({ answer: 42 }))
const http = serve({ port: 0, hostname: '127.0.0.1', fetch: app.fetch })
await new Promise((resolve) => http.once('listening', resolve))
console.log(
  JSON.stringify({
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
    ledgerUrl: chain.url,
    modulesPackage: chain.modulesPackage,
    agent: agent.toSuiAddress(),
  }),
)
