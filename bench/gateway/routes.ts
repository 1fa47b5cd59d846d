/**
 * `npx tsx bench/gateway/routes.ts`: what the size of the catalog costs a request. Two gateways in
 * this process, one on the spec's 30 paid endpoints (11 services) and one on the full catalog's 89
 * (41 services), answer the same unpaid `POST`s (a 402 after body validation) and an unknown path
 * (404) through `app.request()`, no sockets. Rounds alternate between the two; a cell is the median
 * of the rounds' CPU microseconds per request (`process.cpuUsage`, less sensitive than wall time to
 * other work on the machine). `BENCH_REQUESTS` per round (default 4 000), `BENCH_ROUNDS` (default
 * 7). Prints a markdown table.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Catalog } from '../../reference-gateway/catalog/catalog.js'
import { defaultCatalog } from '../../reference-gateway/catalog/default.js'
import { loadConfig } from '../../reference-gateway/config.js'
import { type RunningGateway, startGateway } from '../../reference-gateway/server/server.js'

const requests = Number(process.env.BENCH_REQUESTS ?? 4000)
const rounds = Number(process.env.BENCH_ROUNDS ?? 7)

const full = defaultCatalog()
/** The spec's table: the first 11 services, without the batch e-mail endpoint. */
const spec: Catalog = {
  services: full.services.slice(0, 11).map((service) => ({
    ...service,
    endpoints: service.endpoints.filter((e) => e.path !== '/resend/v1/emails/batch'),
  })),
}

const chat = JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 16 })
const cases = [
  { name: 'unpaid POST, first route (402)', path: '/openai/v1/chat/completions', body: chat },
  { name: 'unpaid POST, 29th route (402)', path: '/deepseek/v1/chat/completions', body: chat },
  { name: 'unknown path (404)', path: '/nope/v1/x', body: chat },
] as const

async function start(catalog: Catalog, folder: string): Promise<RunningGateway> {
  return startGateway({
    catalog,
    config: loadConfig({
      env: {},
      overrides: {
        port: 0,
        dataDir: folder,
        store: 'memory',
        emulatorLatencyMs: 0,
        logLevel: 'silent',
      },
    }),
  })
}

async function run(gateway: RunningGateway, path: string, body: string): Promise<number> {
  const before = process.cpuUsage()
  for (let i = 0; i < requests; i++) {
    const response = await gateway.gateway.app.request(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    })
    await response.arrayBuffer()
  }
  const used = process.cpuUsage(before)
  return (used.user + used.system) / requests
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] as number
}

const folders = [mkdtempSync(join(tmpdir(), 'routes-a-')), mkdtempSync(join(tmpdir(), 'routes-b-'))]
const gateways = {
  spec: await start(spec, folders[0] as string),
  full: await start(full, folders[1] as string),
}
try {
  const rows: string[] = []
  for (const c of cases) {
    // Warm both.
    await run(gateways.spec, c.path, c.body)
    await run(gateways.full, c.path, c.body)
    const times: Record<'spec' | 'full', number[]> = { spec: [], full: [] }
    for (let r = 0; r < rounds; r++) {
      for (const side of r % 2 === 0 ? (['spec', 'full'] as const) : (['full', 'spec'] as const)) {
        times[side].push(await run(gateways[side], c.path, c.body))
      }
    }
    const a = median(times.spec)
    const b = median(times.full)
    rows.push(`| ${c.name} | ${a.toFixed(1)} | ${b.toFixed(1)} | ${(b / a).toFixed(3)} |`)
  }
  const load = (await import('node:os')).loadavg()[0]?.toFixed(2)
  process.stdout.write(
    [
      `Node ${process.version}; ${requests} requests × ${rounds} rounds per cell; load average ${load}`,
      '',
      '| request | 30 endpoints (µs CPU) | 89 endpoints (µs CPU) | 89 ÷ 30 |',
      '|---|---:|---:|---:|',
      ...rows,
      '',
    ].join('\n'),
  )
} finally {
  await gateways.spec.stop()
  await gateways.full.stop()
  for (const folder of folders) rmSync(folder, { recursive: true, force: true })
}
