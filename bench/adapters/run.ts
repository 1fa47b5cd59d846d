/**
 * `npm run bench:adapters`: requests/s of each adapter against its framework's bare route and of the
 * 402 path against the peer middlewares, with autocannon, in one run. Servers run in a child process;
 * each measurement is a 1 s warm-up and a 3 s run at 50 connections. Prints markdown tables.
 */
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'

const duration = Number(process.env.BENCH_SECONDS ?? 3)
const connections = 50

type Target = { url: string; method: 'GET' | 'POST'; expect: number }

async function measure(target: Target): Promise<number> {
  const run = (seconds: number) =>
    autocannon({
      url: target.url,
      method: target.method,
      connections,
      duration: seconds,
    })
  await run(1)
  const result = await run(duration)
  const codes = (result as unknown as { statusCodeStats?: Record<string, { count: number }> })
    .statusCodeStats
  const wrong = Object.entries(codes ?? {}).filter(([code]) => Number(code) !== target.expect)
  if (wrong.length > 0 || result.errors > 0 || result.timeouts > 0) {
    throw new Error(`${target.method} ${target.url}: unexpected ${JSON.stringify(codes)}`)
  }
  return result.requests.average
}

const child = spawn(
  process.execPath,
  ['--import', 'tsx', fileURLToPath(new URL('./servers.ts', import.meta.url))],
  { stdio: ['ignore', 'pipe', 'inherit'] },
)
const urls = await new Promise<Record<string, string>>((resolve, reject) => {
  child.once('exit', (code) => reject(new Error(`servers exited with ${code}`)))
  createInterface({ input: child.stdout! }).once('line', (line) => resolve(JSON.parse(line)))
})

const fmt = (n: number) => Math.round(n).toLocaleString('en-US')
const ratio = (a: number, b: number) => (a / b).toFixed(2)
const mark = (value: number, target: number) => (value >= target ? 'yes' : 'NO')

try {
  const lines: string[] = []
  lines.push(
    `autocannon, ${connections} connections, ${duration} s per measurement (after 1 s warm-up), Node ${process.version}`,
    '',
    '| framework | bare JSON GET | unpriced GET via tollgate | ratio (≥ 0.97) | bare JSON POST | 402 POST via tollgate | ratio (≥ 0.85) |',
    '|---|---:|---:|---:|---:|---:|---:|',
  )
  const tollgate402: Record<string, number> = {}
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
    const unpricedRatio = freeGet / bareGet
    const challengeRatio = challenge / barePost
    lines.push(
      `| ${framework} | ${fmt(bareGet)} | ${fmt(freeGet)} | ${ratio(freeGet, bareGet)} ${mark(unpricedRatio, 0.97)} | ${fmt(barePost)} | ${fmt(challenge)} | ${ratio(challenge, barePost)} ${mark(challengeRatio, 0.85)} |`,
    )
  }
  lines.push(
    '',
    '| 402 path (Express) | req/s | tollgate/express ÷ peer (≥ 1.0) |',
    '|---|---:|---:|',
    `| tollgate/express | ${fmt(tollgate402.express!)} | — |`,
  )
  for (const peer of ['x402-express (v1)', '@x402/express (v2)', 'mppx/express']) {
    if (tollgate402.express === undefined) break
    const url = urls[peer]
    if (url === undefined) {
      lines.push(`| ${peer} | not measured (did not start) | — |`)
      continue
    }
    const value = await measure({ url: `${url}/paid`, method: 'POST', expect: 402 })
    const r = tollgate402.express! / value
    lines.push(`| ${peer} | ${fmt(value)} | ${ratio(tollgate402.express!, value)} ${mark(r, 1)} |`)
  }
  process.stdout.write(`${lines.join('\n')}\n`)
} finally {
  child.kill()
}
