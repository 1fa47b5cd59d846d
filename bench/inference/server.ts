/**
 * The gateway of the inference benchmark, in its own process. Env: `MODEL_URL` (the model server's
 * base URL), `CONFIDENTIAL_MODEL` (the JSON configuration entry of a confidential model served by
 * the benchmark's simulated enclave). One open model forwarded to the model server, and the
 * confidential one; anchors go to the embedded ledger emulator; the relational store is SQLite in a temporary folder;
 * the rate limit is raised out of the way (the benchmark measures the request path, not the limit).
 * Creates one key with ample credit and prints `{ url, key }` as one JSON line; answers IPC `cpu`
 * with its CPU time.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../../reference-gateway/config.js'
import { startGateway } from '../../reference-gateway/server/server.js'

const folder = mkdtempSync(join(tmpdir(), 'tollgate-bench-inference-'))
const gateway = await startGateway({
  config: loadConfig({
    env: {},
    overrides: {
      port: 0,
      emulatorLatencyMs: 0,
      upstreams: 'stub',
      inferenceModels: [
        {
          id: 'bench-model',
          pricing: { prompt: '0.000001', completion: '0.000001' },
          contextWindow: 131_072,
          upstream: { kind: 'openai-compatible', baseUrl: process.env.MODEL_URL as string },
        },
        ...(process.env.CONFIDENTIAL_MODEL === undefined
          ? []
          : [JSON.parse(process.env.CONFIDENTIAL_MODEL)]),
      ],
      rateLimitPerMinute: 1_000_000,
      dataDir: folder,
      logLevel: 'silent',
    },
  }),
})
const { key } = await gateway.inference.keys.create({ credit: 1_000_000_000n })
process.stdout.write(`${JSON.stringify({ url: gateway.url, key })}\n`)
process.on('message', (message) => {
  if (message === 'cpu') {
    const { user, system } = process.cpuUsage()
    process.send?.({ cpuMs: (user + system) / 1000 })
  }
})
const stop = async () => {
  await gateway.stop()
  rmSync(folder, { recursive: true, force: true })
  process.exit(0)
}
process.on('SIGTERM', () => void stop())
process.stdin.on('end', () => void stop())
process.stdin.resume()
