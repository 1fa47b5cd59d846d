/**
 * `npm run bench:adapters`: requests/s of each adapter against its framework's bare route and of the
 * 402 path against the peer middlewares, with autocannon, in one run. Servers run in a child process;
 * each measurement is a 1 s warm-up and a 3 s run at 50 connections. Prints markdown tables.
 */
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import { compileRoutes, matchRoute } from '../../src/routes.js'
import { createSellerPaywall } from '../../src/seller.js'
import { createMemoryStore } from '../../src/stores/memory.js'

const duration = Number(process.env.BENCH_SECONDS ?? 3)
const connections = 50

type Target = { url: string; method: 'GET' | 'POST'; expect: number }

/** Requests/s, and the server process's CPU microseconds per request. */
type Measurement = { rps: number; cpuUs: number }

function serverCpu(): Promise<number> {
  return new Promise((resolve) => {
    child.once('message', (usage) => {
      const { user, system } = usage as NodeJS.CpuUsage
      resolve(user + system)
    })
    child.send('cpu')
  })
}

async function measure(target: Target): Promise<Measurement> {
  const run = (seconds: number) =>
    autocannon({
      url: target.url,
      method: target.method,
      connections,
      duration: seconds,
    })
  await run(1)
  const before = await serverCpu()
  const result = await run(duration)
  const cpu = (await serverCpu()) - before
  const codes = (result as unknown as { statusCodeStats?: Record<string, { count: number }> })
    .statusCodeStats
  const wrong = Object.entries(codes ?? {}).filter(([code]) => Number(code) !== target.expect)
  if (wrong.length > 0 || result.errors > 0 || result.timeouts > 0) {
    throw new Error(`${target.method} ${target.url}: unexpected ${JSON.stringify(codes)}`)
  }
  const total = result.requests.average * duration
  return { rps: result.requests.average, cpuUs: cpu / total }
}

const child = spawn(
  process.execPath,
  ['--import', 'tsx', fileURLToPath(new URL('./servers.ts', import.meta.url))],
  { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] },
)
const urls = await new Promise<Record<string, string>>((resolve, reject) => {
  child.once('exit', (code) => reject(new Error(`servers exited with ${code}`)))
  createInterface({ input: child.stdout! }).once('line', (line) => resolve(JSON.parse(line)))
})

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

// Warm every server up once (JIT, sockets) so that the first measurement is not the coldest.
for (const [name, url] of Object.entries(urls)) {
  const post = !name.includes('bare') && !name.includes('tollgate')
  await autocannon({
    url: `${url}${post ? '/paid' : '/free'}`,
    method: post ? 'POST' : 'GET',
    connections,
    duration: 1,
  })
}

try {
  const lines: string[] = []
  lines.push(
    `autocannon, ${connections} connections, ${duration} s per measurement after a 1 s warm-up, Node ${process.version}.`,
    'Each cell: requests/s · server CPU µs per request. Ratios use CPU per request (bare ÷ adapter),',
    'which stays meaningful when other work shares the machine; requests/s is shown as measured.',
    '',
    '| framework | bare JSON GET | unpriced GET via tollgate | unpriced ÷ bare (≥ 0.97) | bare JSON POST | 402 POST via tollgate | 402 ÷ bare (≥ 0.85) |',
    '|---|---:|---:|---:|---:|---:|---:|',
  )
  const tollgate402: Record<string, Measurement> = {}
  const only = process.env.BENCH_ONLY?.split(',')
  for (const framework of ['express', 'koa', 'hono']) {
    if (only !== undefined && !only.includes(framework)) continue
    const bare = urls[`${framework} bare`]!
    const paid = urls[`${framework} tollgate`]!
    const bareGet = await measure({ url: `${bare}/free`, method: 'GET', expect: 200 })
    const freeGet = await measure({ url: `${paid}/free`, method: 'GET', expect: 200 })
    const barePost = await measure({ url: `${bare}/paid`, method: 'POST', expect: 200 })
    const challenge = await measure({ url: `${paid}/paid`, method: 'POST', expect: 402 })
    tollgate402[framework] = challenge
    const cell = (m: Measurement) => `${fmt(m.rps)} · ${us(m)} µs`
    lines.push(
      `| ${framework} | ${cell(bareGet)} | ${cell(freeGet)} | ${verdict(speed(freeGet, bareGet), 0.97)} | ${cell(barePost)} | ${cell(challenge)} | ${verdict(speed(challenge, barePost), 0.85)} |`,
    )
  }
  const ours = tollgate402.express
  if (ours !== undefined) {
    lines.push(
      '',
      '| 402 path on Express | req/s · CPU µs/request | tollgate ÷ peer (≥ 1.0) |',
      '|---|---:|---:|',
      `| tollgate/express | ${fmt(ours.rps)} · ${us(ours)} µs | — |`,
    )
    for (const peer of ['x402-express (v1)', '@x402/express (v2)', 'mppx/express']) {
      const url = urls[peer]
      if (url === undefined) {
        lines.push(`| ${peer} | not measured (did not start) | — |`)
        continue
      }
      const value = await measure({ url: `${url}/paid`, method: 'POST', expect: 402 })
      lines.push(
        `| ${peer} | ${fmt(value.rps)} · ${us(value)} µs | ${verdict(speed(ours, value), 1)} |`,
      )
    }
  }
  lines.push(
    '',
    `In-process, no HTTP: route-table lookup of an unpriced path ${(matchUs * 1000).toFixed(0)} ns`,
    `(${(cachedMatchUs * 1000).toFixed(0)} ns for a recently seen URL, what the adapters call);`,
    `the engine's whole 402 decision (Request construction included) ${handleUs.toFixed(1)} µs.`,
  )
  process.stdout.write(`${lines.join('\n')}\n`)
} finally {
  child.kill()
}
