/**
 * `npm run bench:adapters`: requests/s of each adapter against its framework's bare route and of the
 * 402 path against the peer middlewares, with autocannon, in one run. Servers run in a child process.
 * Every target is warmed up once; then the targets compared with each other are measured in
 * interleaved rounds (`BENCH_ROUNDS`, default 3, of `BENCH_SECONDS`, default 2 s, at 50
 * connections), so that drift of the machine's speed during the run falls on all of them alike.
 * Prints markdown tables.
 */
import type { ChildProcess } from 'node:child_process'
import { IncomingMessage } from 'node:http'
import { Socket } from 'node:net'
import autocannon from 'autocannon'
import { createSellerPaywall } from '../../src/engine/seller.js'
import { nodeRequestView } from '../../src/internal/nodeHttp.js'
import { compileRoutes, matchRoute } from '../../src/routes.js'
import { createMemoryStore } from '../../src/stores/memory.js'
import { startScript } from '../script.js'

const duration = Number(process.env.BENCH_SECONDS ?? 2)
const rounds = Number(process.env.BENCH_ROUNDS ?? 3)
const connections = 50

type Target = { server: string; path: string; method: 'GET' | 'POST'; expect: number }

/** Requests/s, and the server process's CPU microseconds per request. */
type Measurement = { rps: number; cpuUs: number }

/** Totals of one target over the rounds. */
type Totals = { requests: number; cpu: number; seconds: number }

/** The servers, one process each (the names of `bench/adapters/servers.ts`). */
const serverNames = [
  'express bare',
  'express tollgate',
  'express no-op middleware',
  'koa bare',
  'koa tollgate',
  'koa no-op middleware',
  'hono bare',
  'hono tollgate',
  'hono (front) tollgate',
  'hono no-op middleware',
  'x402-express (v1)',
  '@x402/express (v2)',
  'mppx/express',
]

type Server = { url: string; process: ChildProcess }

/** Starts `names` in one process; answers those that started. */
async function startServers(names: string[]): Promise<Record<string, Server>> {
  const { process: child, info: urls } = await startScript<Record<string, string>>(
    new URL('./servers.ts', import.meta.url),
    { BENCH_SERVER: names.join('|') },
    true,
    [],
    // V8's hash and random seeds fixed, as in `bench:adapters:instructions`: otherwise each server
    // process draws its own, one source of the per-process bias of these figures.
    ['--hash-seed=1', '--random-seed=1'],
  )
  const started: Record<string, Server> = {}
  for (const name of names) {
    const url = urls[name]
    if (url !== undefined) started[name] = { url, process: child }
  }
  if (Object.keys(started).length === 0) child.kill()
  return started
}

function serverCpu(server: Server): Promise<number> {
  return new Promise((resolve) => {
    server.process.once('message', (usage) => {
      const { user, system } = usage as NodeJS.CpuUsage
      resolve(user + system)
    })
    server.process.send('cpu')
  })
}

/** One run of `seconds` against a target: requests answered and server CPU µs spent. */
async function runOnce(target: Target, seconds: number): Promise<Totals> {
  const server = servers[target.server]!
  const url = `${server.url}${target.path}`
  const before = await serverCpu(server)
  const result = await autocannon({ url, method: target.method, connections, duration: seconds })
  const cpu = (await serverCpu(server)) - before
  const codes = (result as unknown as { statusCodeStats?: Record<string, { count: number }> })
    .statusCodeStats
  const wrong = Object.entries(codes ?? {}).filter(([code]) => Number(code) !== target.expect)
  if (wrong.length > 0 || result.errors > 0 || result.timeouts > 0) {
    throw new Error(`${target.method} ${url}: unexpected ${JSON.stringify(codes)}`)
  }
  return { requests: result.requests.total, cpu, seconds }
}

/** Measures targets in interleaved rounds; returns one measurement per target, in order. */
async function measureTogether(targets: Target[]): Promise<Measurement[]> {
  const totals = targets.map(() => ({ requests: 0, cpu: 0, seconds: 0 }))
  for (const target of targets) await runOnce(target, 1)
  for (let round = 0; round < rounds; round++) {
    for (const [i, target] of targets.entries()) {
      const t = await runOnce(target, duration)
      totals[i]!.requests += t.requests
      totals[i]!.cpu += t.cpu
      totals[i]!.seconds += t.seconds
    }
  }
  return totals.map((t) => ({ rps: t.requests / t.seconds, cpuUs: t.cpu / t.requests }))
}

/**
 * `BENCH_SHARED=1`: each framework's servers (bare, no-op middleware, tollgate) share one process,
 * so that a process's own bias (what its JIT made of the code, where its heap stands) falls on the
 * bare route and the adapter alike; by default every server has a process of its own.
 */
const shared = process.env.BENCH_SHARED === '1'
const groups = new Map<string, string[]>()
for (const name of serverNames) {
  const framework = ['express', 'koa', 'hono'].find((f) => name.startsWith(`${f} `))
  const key = shared && framework !== undefined ? framework : name
  groups.set(key, [...(groups.get(key) ?? []), name])
}
const servers: Record<string, Server> = {}
for (const group of groups.values()) Object.assign(servers, await startServers(group))
const stopAll = () => {
  for (const server of Object.values(servers)) server.process.kill()
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US')
const us = (m: Measurement) => m.cpuUs.toFixed(0)
/** Relative speed from CPU per request: how many of `b`'s requests fit in the CPU of one of `a`'s. */
const speed = (a: Measurement, b: Measurement) => b.cpuUs / a.cpuUs
const verdict = (value: number, target: number) =>
  `${value.toFixed(2)} ${value >= target ? 'yes' : 'NO'}`

/** Mean time per call of `f`, in µs, in this process (no HTTP): robust to a busy machine's noise. */
async function perCall(f: () => unknown, calls = 20_000): Promise<number> {
  for (let i = 0; i < calls / 4; i++) await f()
  const start = process.hrtime.bigint()
  for (let i = 0; i < calls; i++) await f()
  return Number(process.hrtime.bigint() - start) / 1000 / calls
}

const table = compileRoutes({
  'POST /paid': '0.02',
  'POST /v1/chat/completions': '0.01',
  'POST /v1/images/:id': '0.05',
  'GET /v1/search': '0.002',
  'GET /v1/files/*': '0.001',
})
const matchUs = await perCall(() => matchRoute(table, 'GET', '/free'), 200_000)
const seller = createSellerPaywall({
  routes: {
    'POST /paid': '0.02',
    'POST /v1/chat/completions': '0.01',
    'POST /v1/images/:id': '0.05',
    'GET /v1/search': '0.002',
    'GET /v1/files/*': '0.001',
  },
  payTo: '0x5a1e4c0b4f0d7c8e9f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f80',
  ledger: 'http://127.0.0.1:9',
  store: createMemoryStore(),
  secrets: ['a-challenge-secret-of-at-least-32-bytes!'],
})
const cachedMatchUs = await perCall(() => seller.match('GET', '/free'), 200_000)
const route = seller.route('0.02', { description: 'a paid answer' })
const headers = { host: '127.0.0.1:3000', 'user-agent': 'autocannon', 'content-length': '0' }
const handleUs = await perCall(() =>
  seller.engine.handle(
    new Request('http://127.0.0.1:3000/paid', { method: 'POST', headers }),
    route,
  ),
)

const view = nodeRequestView(
  Object.assign(new IncomingMessage(new Socket()), { headers }),
  '/paid',
  undefined,
)
const unpaidUs = await perCall(() => seller.engine.handle(view, route), 200_000)

try {
  const lines: string[] = []
  lines.push(
    `autocannon, ${connections} connections, ${rounds} interleaved rounds of ${duration} s per target after a 1 s warm-up, Node ${process.version}.`,
    'Each cell: requests/s · server CPU µs per request. Ratios use CPU per request (bare ÷ adapter),',
    'which stays meaningful when other work shares the machine; requests/s is shown as measured.',
    '',
    '| framework | bare JSON GET | unpriced GET via tollgate | unpriced ÷ bare (≥ 0.97) | bare JSON POST | 402 POST via tollgate | 402 ÷ bare (≥ 0.85) |',
    '|---|---:|---:|---:|---:|---:|---:|',
  )
  const tollgate402: Record<string, Measurement> = {}
  const only = process.env.BENCH_ONLY?.split(',')
  const cell = (m: Measurement) => `${fmt(m.rps)} · ${us(m)} µs`
  const notes: string[] = []
  for (const framework of ['express', 'koa', 'hono']) {
    if (only !== undefined && !only.includes(framework)) continue
    const bare = `${framework} bare`
    const mounts = framework === 'hono' ? ['', ' (front)'] : ['']
    const targets: Target[] = [
      { server: bare, path: '/free', method: 'GET', expect: 200 },
      { server: bare, path: '/paid', method: 'POST', expect: 200 },
    ]
    for (const mount of mounts) {
      const paid = `${framework}${mount} tollgate`
      targets.push(
        { server: paid, path: '/free', method: 'GET', expect: 200 },
        { server: paid, path: '/paid', method: 'POST', expect: 402 },
      )
    }
    const noop = servers[`${framework} no-op middleware`]
    if (noop !== undefined)
      targets.push({
        server: `${framework} no-op middleware`,
        path: '/free',
        method: 'GET',
        expect: 200,
      })
    const [bareGet, barePost, ...rest] = await measureTogether(targets)
    for (const [i, mount] of mounts.entries()) {
      const freeGet = rest[2 * i]!
      const challenge = rest[2 * i + 1]!
      if (mount === '') tollgate402[framework] = challenge
      lines.push(
        `| ${framework}${mount} | ${cell(bareGet!)} | ${cell(freeGet)} | ${verdict(speed(freeGet, bareGet!), 0.97)} | ${cell(barePost!)} | ${cell(challenge)} | ${verdict(speed(challenge, barePost!), 0.85)} |`,
      )
    }
    if (noop !== undefined) {
      const noopGet = rest[2 * mounts.length]!
      notes.push(
        `${framework} with a no-op middleware (\`app.use((c, next) => next())\`), GET: ${cell(noopGet)} = ${speed(noopGet, bareGet!).toFixed(2)}× bare: the framework's own cost of any middleware.`,
      )
    }
  }
  if (notes.length > 0) lines.push('', ...notes)
  if (only === undefined || only.includes('peers')) {
    const peers = ['x402-express (v1)', '@x402/express (v2)', 'mppx/express']
    const started = peers.filter((peer) => servers[peer] !== undefined)
    const [ours, ...values] = await measureTogether(
      ['express tollgate', ...started].map((server) => ({
        server,
        path: '/paid',
        method: 'POST' as const,
        expect: 402,
      })),
    )
    lines.push(
      '',
      '| 402 path on Express | req/s · CPU µs/request | tollgate ÷ peer (≥ 1.0) |',
      '|---|---:|---:|',
      `| tollgate/express | ${cell(ours!)} | — |`,
    )
    for (const peer of peers) {
      const i = started.indexOf(peer)
      if (i < 0) lines.push(`| ${peer} | not measured (did not start) | — |`)
      else lines.push(`| ${peer} | ${cell(values[i]!)} | ${verdict(speed(ours!, values[i]!), 1)} |`)
    }
  }
  lines.push(
    '',
    `In-process, no HTTP: route-table lookup of an unpriced path ${(matchUs * 1000).toFixed(0)} ns`,
    `(${(cachedMatchUs * 1000).toFixed(0)} ns for a recently seen URL, what the adapters call);`,
    `the engine's whole 402 decision from a Web \`Request\` (its construction included) ${handleUs.toFixed(1)} µs,`,
    `from a Node adapter's request view ${unpaidUs.toFixed(2)} µs.`,
  )
  process.stdout.write(`${lines.join('\n')}\n`)
} finally {
  stopAll()
}
