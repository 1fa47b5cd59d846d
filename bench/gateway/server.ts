/**
 * The gateway of the gateway benchmark, in its own process (as in production: buyers, the full
 * node and the upstream APIs elsewhere). Env: `LEDGER_URL`, `UPSTREAM_URLS` (JSON, provider segment →
 * base URL of the stub upstreams' process), `BENCH_STORE` (default sqlite),
 * `BENCH_SQLITE_SYNCHRONOUS` (normal or full; default normal). Prints `{ url, payTo }`
 * as one JSON line; answers IPC `cpu` with its CPU time and peak RSS,
 * and IPC `settled` with `{ settled: epochMs }`, when the last payment settled (for the SSE
 * measurement).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../../reference-gateway/config.js'
import { startGateway } from '../../reference-gateway/server/server.js'
import type { SellerEvent } from '../../src/engine/sellerTypes.js'
import { createTestWallet } from '../../src/testing/wallet.js'

const ledgerUrl = process.env.LEDGER_URL as string
/** When the last payment settled (epoch ms), for the SSE measurement. */
let lastSettled = Number.NaN
const folder = mkdtempSync(join(tmpdir(), 'tollgate-bench-gateway-'))
const gateway = await startGateway({
  config: loadConfig({
    env: {},
    overrides: {
      port: 0,
      ledgerUrl,
      operatorKey: (
        await createTestWallet({ url: ledgerUrl, usdc: '10', sui: '10' })
      ).keypair.getSecretKey(),
      // Stub credentials; every provider's URL points at the stubs' own process.
      upstreams: 'stub',
      upstreamUrls: JSON.parse(process.env.UPSTREAM_URLS ?? '{}') as Record<string, string>,
      store: (process.env.BENCH_STORE ?? 'sqlite') as 'sqlite',
      sqliteSynchronous: (process.env.BENCH_SQLITE_SYNCHRONOUS ?? 'normal') as 'normal',
      dataDir: folder,
      logLevel: 'silent',
    },
  }),
  onEvent: (event: SellerEvent) => {
    if (event.type === 'settled') lastSettled = performance.timeOrigin + performance.now()
  },
})
process.stdout.write(`${JSON.stringify({ url: gateway.url, payTo: gateway.payTo })}\n`)
process.on('message', (message) => {
  if (message === 'settled') process.send?.({ settled: lastSettled })
  if (message === 'cpu') {
    const { user, system } = process.cpuUsage()
    process.send?.({
      cpuMs: (user + system) / 1000,
      maxRssMiB: process.resourceUsage().maxRSS / 1024,
    })
  }
})
const stop = async () => {
  await gateway.stop()
  rmSync(folder, { recursive: true, force: true })
  process.exit(0)
}
process.on('SIGTERM', () => void stop())
process.on('disconnect', () => void stop())
