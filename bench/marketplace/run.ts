/**
 * `npx tsx bench/marketplace/run.ts`: the marketplace at scale.
 *
 * 1. Catalog latency at `BENCH_LISTINGS` listings (default 10 000) in the gateway's relational store
 *    (SQLite file; PostgreSQL too when `DATABASE_URL` is set): `GET /v1/services` and
 *    `/discovery/search` (and `/discovery/resources`) served on loopback by the same functions as the
 *    gateway, `BENCH_REQUESTS` sequential requests per query (default 200) after a warm-up; median
 *    and p95 ms. Baseline in the same run: a route answering a precomputed JSON string of a similar
 *    size (the HTTP and JSON cost alone), so each ratio is what the query adds. PostgreSQL's table
 *    is vacuumed and analysed after the fill, as its autovacuum would.
 * 2. Re-probing `BENCH_SELLERS` listed endpoints (default 1 000) on local stub sellers (another
 *    process: the ledger emulator and one paywall, see `sellers.ts`) through the real four gates,
 *    one pass at `BENCH_CONCURRENCY` (default 8, the gateway's default): wall time and this
 *    process's CPU time (the gateway side: the judge, the store). Baseline in the same run:
 *    `BENCH_BASELINE` listings (default 50) at concurrency 1, per probe.
 *
 * `BENCH_ONLY=latency` or `BENCH_ONLY=reprobe` runs one part. Prints markdown tables.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { createAdaptorServer } from '@hono/node-server'
import { SuiGrpcClient } from '@mysten/sui/grpc'
import { Hono } from 'hono'
import { sql } from 'kysely'
import pg from 'pg'
import { MAINNET_USDC_TYPE } from 'tollgate/testing'
import { defaultCatalog } from '../../reference-gateway/catalog/default.js'
import { type DatabaseLocation, openDatabase } from '../../reference-gateway/db/database.js'
import {
  discoverResources,
  ownResources,
  resourcesQuerySchema,
  searchQuerySchema,
} from '../../reference-gateway/discovery/bazaar.js'
import { servicesDocument } from '../../reference-gateway/discovery/services.js'
import { createReprober } from '../../reference-gateway/marketplace/reprobe.js'
import {
  ownServiceItems,
  searchServices,
  servicesQuerySchema,
} from '../../reference-gateway/marketplace/services.js'
import {
  createMarketplaceStore,
  type MarketplaceStore,
} from '../../reference-gateway/marketplace/store.js'
import { startScript } from '../script.js'

const listings = Number(process.env.BENCH_LISTINGS ?? 10_000)
const requests = Number(process.env.BENCH_REQUESTS ?? 200)
const sellers = Number(process.env.BENCH_SELLERS ?? 1_000)
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 8)
const baselineSellers = Number(process.env.BENCH_BASELINE ?? 50)
const databaseUrl = process.env.DATABASE_URL
/** `latency` or `reprobe` to run one part only. */
const only = process.env.BENCH_ONLY

const words = ['weather', 'search', 'images', 'translate', 'finance', 'maps', 'news', 'speech']
const discovery = {
  publicBaseUrl: 'https://gw.example',
  payTo: `0x${'5c'.repeat(32)}`,
  network: 'sui:mainnet',
  asset: MAINNET_USDC_TYPE,
}

const ms = (n: number) => n.toFixed(2)
const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN

async function fill(
  store: MarketplaceStore,
  n: number,
  url: (i: number) => string,
  seller: (i: number) => string,
) {
  for (let i = 0; i < n; i++) {
    await store.putListing(
      {
        seller: seller(i),
        url: url(i),
        method: 'POST',
        probeBody: '{}',
        name: `Seller ${i} ${words[i % words.length]}`,
        description: `An endpoint about ${words[(i * 7) % words.length]} number ${i}`,
        tags: [words[i % words.length] as string],
        network: 'sui:mainnet',
        asset: MAINNET_USDC_TYPE,
        price: BigInt(1_000 + (i % 100) * 100),
        payTo: seller(i),
        nextProbeAtMs: 0,
      },
      new Date(1_700_000_000_000 + i),
    )
  }
}

async function latency(engine: string, location: DatabaseLocation): Promise<string[]> {
  const database = await openDatabase(location)
  const store = createMarketplaceStore(database.db)
  const started = performance.now()
  await fill(
    store,
    listings,
    (i) => `https://seller-${i}.example/v1/call`,
    (i) => `0x${(i + 1).toString(16).padStart(64, '0')}`,
  )
  const fillSeconds = (performance.now() - started) / 1000
  if (location.kind === 'postgres') {
    // What PostgreSQL's autovacuum (on by default) does after a bulk insert: statistics for the
    // planner, the visibility map for index-only scans. The test server runs without it.
    await sql`VACUUM ANALYZE marketplace_listings`.execute(database.db)
  }
  const catalog = defaultCatalog()
  const own = ownServiceItems(servicesDocument(catalog, discovery))
  const resources = ownResources(catalog, discovery, new Date().toISOString())
  const app = new Hono()
  const baselineBody = JSON.stringify(
    await searchServices(own, store, servicesQuerySchema.parse({ offset: '200' })),
  )
  app.get('/baseline', (c) => c.body(baselineBody, 200, { 'content-type': 'application/json' }))
  app.get('/v1/services', async (c) =>
    c.json(await searchServices(own, store, servicesQuerySchema.parse(c.req.query()))),
  )
  app.get('/discovery/resources', async (c) =>
    c.json(await discoverResources(resources, store, resourcesQuerySchema.parse(c.req.query()))),
  )
  app.get('/discovery/search', async (c) =>
    c.json(await discoverResources(resources, store, searchQuerySchema.parse(c.req.query()))),
  )
  const server = createAdaptorServer({ fetch: app.fetch })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const measure = async (path: string) => {
    for (let i = 0; i < 20; i++) await (await fetch(`${base}${path}`)).arrayBuffer()
    const times: number[] = []
    for (let i = 0; i < requests; i++) {
      const t = performance.now()
      const response = await fetch(`${base}${path}`)
      await response.arrayBuffer()
      if (response.status !== 200) throw new Error(`${path} answered ${response.status}`)
      times.push(performance.now() - t)
    }
    times.sort((a, b) => a - b)
    return { p50: quantile(times, 0.5), p95: quantile(times, 0.95) }
  }
  const baseline = await measure('/baseline')
  // The cursor that starts the same page as `offset=9000`.
  const before = (await (await fetch(`${base}/v1/services?offset=8980`)).json()) as {
    nextCursor?: string
  }
  const rows = [
    `| ${engine} | baseline: a precomputed JSON page | ${ms(baseline.p50)} | ${ms(baseline.p95)} | 1.00× |`,
  ]
  for (const [label, path] of [
    ['`/v1/services` first page (20)', '/v1/services'],
    ['`/v1/services` a deep page (offset 9 000)', '/v1/services?offset=9000'],
    ...(before.nextCursor === undefined
      ? []
      : ([
          [
            '`/v1/services` the same deep page by `cursor`',
            `/v1/services?cursor=${before.nextCursor}`,
          ],
        ] as const)),
    ['`/v1/services?tag=weather` (1/8 match)', '/v1/services?tag=weather'],
    [
      '`/v1/services?maxPrice=2000&network=sui:mainnet`',
      '/v1/services?maxPrice=2000&network=sui:mainnet',
    ],
    ['`/discovery/resources?limit=100`', '/discovery/resources?limit=100'],
    ['`/discovery/search?query=weather` (1/8 + gateway)', '/discovery/search?query=weather'],
    ['`/discovery/search?query=number 4242` (1 match)', '/discovery/search?query=number%204242'],
    ['`/discovery/search?query=absent` (no match)', '/discovery/search?query=absent'],
  ] as const) {
    const r = await measure(path)
    rows.push(
      `| ${engine} | ${label} | ${ms(r.p50)} | ${ms(r.p95)} | ${(r.p50 / baseline.p50).toFixed(2)}× |`,
    )
  }
  await new Promise((resolve) => server.close(resolve))
  await database.close()
  console.error(`${engine}: ${listings} listings written in ${fillSeconds.toFixed(1)} s`)
  return rows
}

async function reprobes(): Promise<string[]> {
  const { process: child, info } = await startScript<{
    url: string
    ledgerUrl: string
    modulesPackage: string
    agent: string
  }>(new URL('./sellers.ts', import.meta.url))
  const folder = mkdtempSync(join(tmpdir(), 'tollgate-bench-reprobe-'))
  try {
    const gates = {
      client: new SuiGrpcClient({ network: 'mainnet', baseUrl: info.ledgerUrl }),
      registryPackage: info.modulesPackage,
      network: 'sui:mainnet',
      usdc: MAINNET_USDC_TYPE,
      allowPrivateNetwork: true,
    }
    const pass = async (n: number, limit: number, name: string) => {
      const database = await openDatabase({ kind: 'sqlite', file: join(folder, `${name}.db`) })
      const store = createMarketplaceStore(database.db)
      await fill(
        store,
        n,
        (i) => `${info.url}/s/${i}`,
        () => info.agent,
      )
      const reprober = createReprober({
        store,
        gates,
        holder: name,
        concurrency: limit,
        batch: n,
      })
      const cpu = process.cpuUsage()
      const started = performance.now()
      const probed = await reprober.runOnce()
      const wall = performance.now() - started
      const used = process.cpuUsage(cpu)
      const passed = (await store.searchListings({ state: 'listed', limit: 1, offset: 0 })).total
      const failures = await database.db
        .selectFrom('marketplace_probes')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('passed', '=', 0)
        .executeTakeFirst()
      await database.close()
      if (probed !== n || Number(failures?.n ?? 0) !== 0 || passed !== n) {
        throw new Error(`${name}: probed ${probed} of ${n}, ${failures?.n} failed`)
      }
      return { wall, cpu: (used.user + used.system) / 1000 }
    }
    const base = await pass(baselineSellers, 1, 'baseline')
    const run = await pass(sellers, concurrency, 'run')
    const perBase = base.wall / baselineSellers
    const perRun = run.wall / sellers
    return [
      `| baseline: ${baselineSellers} listings, concurrency 1 | ${ms(base.wall / 1000)} s | ${ms(perBase)} ms | ${ms(base.cpu / 1000)} s | ${ms(base.cpu / baselineSellers)} ms | 1.00× |`,
      `| ${sellers} listings, concurrency ${concurrency} | ${ms(run.wall / 1000)} s | ${ms(perRun)} ms | ${ms(run.cpu / 1000)} s | ${ms(run.cpu / sellers)} ms | ${(perBase / perRun).toFixed(2)}× faster per probe |`,
    ]
  } finally {
    child.kill()
    rmSync(folder, { recursive: true, force: true })
  }
}

const folder = mkdtempSync(join(tmpdir(), 'tollgate-bench-market-'))
const schema = `bench_market_${process.pid}`
try {
  console.log(
    `load average before: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  )
  if (only !== 'reprobe') {
    const rows = await latency('SQLite', { kind: 'sqlite', file: join(folder, 'gateway.db') })
    if (databaseUrl) {
      rows.push(...(await latency('PostgreSQL', { kind: 'postgres', url: databaseUrl, schema })))
    }
    console.log(
      `\n### Catalog latency at ${listings} listings (${requests} sequential requests each)\n`,
    )
    console.log('| Store | Query | p50 ms | p95 ms | p50 vs baseline |')
    console.log('|---|---|---|---|---|')
    for (const row of rows) console.log(row)
  }
  const probeRows = only === 'latency' ? [] : await reprobes()
  console.log(`\n### One re-probe pass over local stub sellers (the four gates, read-only)\n`)
  console.log('| Pass | Wall | Wall per probe | Gateway CPU | CPU per probe | vs baseline |')
  console.log('|---|---|---|---|---|---|')
  for (const row of probeRows) console.log(row)
  console.log(
    `\nload average after: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  )
} finally {
  rmSync(folder, { recursive: true, force: true })
  if (databaseUrl) {
    const client = new pg.Client({ connectionString: databaseUrl })
    await client.connect()
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
    await client.end()
  }
}
