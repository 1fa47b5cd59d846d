/**
 * `npm run bench:adapters:instructions`: the adapter ratios of `bench:adapters` again, from the
 * instructions each server process executes per request, counted by valgrind's callgrind. Unlike
 * requests/s on a two-core machine (±5–8 % from one run to the next), an instruction count repeats
 * to a fraction of a percent whatever else the machine is doing, so it settles targets that sit
 * inside the noise of a throughput run.
 *
 * Each server of `servers.ts` (bundled once, so that valgrind does not also run the TypeScript
 * loader) runs under callgrind; after a warm-up of `BENCH_WARM` requests per path (default 2 000,
 * enough for the JIT to settle), the counters are zeroed, `BENCH_REQUESTS` requests (default 2 000)
 * are sent over keep-alive connections, and the counters are dumped. User-space instructions only:
 * the kernel's share of a request (reading and writing the socket) is the same for a bare route and
 * an adapter, so leaving it out makes every ratio a little stricter, never kinder.
 *
 * Needs `valgrind` on the PATH. Takes several minutes (each server starts in about 40 s under
 * valgrind); `BENCH_PARALLEL` servers at a time (default 2).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { promisify } from 'node:util'
import { build } from 'tsup'

const warm = Number(process.env.BENCH_WARM ?? 2000)
const measured = Number(process.env.BENCH_REQUESTS ?? 2000)
const parallel = Number(process.env.BENCH_PARALLEL ?? 2)
const connections = 8

type Path = { method: 'GET' | 'POST'; path: string; expect: number }
const freeGet: Path = { method: 'GET', path: '/free', expect: 200 }
const barePost: Path = { method: 'POST', path: '/paid', expect: 200 }
const challenge: Path = { method: 'POST', path: '/paid', expect: 402 }

/** What each server is measured on. */
const plan: Record<string, Path[]> = {
  'express bare': [freeGet, barePost],
  'express tollgate': [freeGet, challenge],
  'express no-op middleware': [freeGet],
  'koa bare': [freeGet, barePost],
  'koa tollgate': [freeGet, challenge],
  'koa no-op middleware': [freeGet],
  'hono bare': [freeGet, barePost],
  'hono tollgate': [freeGet, challenge],
  'hono (front) tollgate': [freeGet, challenge],
  'hono no-op middleware': [freeGet],
}

const folder = mkdtempSync(join(tmpdir(), 'tollgate-bench-instructions-'))
await build({
  entry: { servers: new URL('./servers.ts', import.meta.url).pathname },
  outDir: folder,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  skipNodeModulesBundle: true,
  silent: true,
  config: false,
})
const bundle = join(folder, readdirSync(folder).find((file) => /^servers\.m?js$/.test(file)) as string)

/** Starts `name` under callgrind; resolves with its URL once it listens. */
async function start(name: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      `--callgrind-out-file=${join(folder, `cg.${name.replace(/\W+/g, '_')}.%p`)}`,
      '--dump-instr=no',
      process.execPath,
      bundle,
    ],
    { env: { ...process.env, BENCH_SERVER: name }, stdio: ['ignore', 'pipe', 'ignore'] },
  )
  const line = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${name} exited with ${code}`)))
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).once('line', resolve)
  })
  const url = (JSON.parse(line) as Record<string, string>)[name]
  if (url === undefined) throw new Error(`${name} did not start`)
  return { url, child }
}

/** Sends `count` requests over `connections` keep-alive connections; checks every status. */
async function load(url: string, target: Path, count: number): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: connections })
  let sent = 0
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (sent < count) {
        sent++
        await new Promise<void>((resolve, reject) => {
          const req = request(`${url}${target.path}`, { method: target.method, agent }, (res) => {
            res.resume()
            res.once('end', () =>
              res.statusCode === target.expect
                ? resolve()
                : reject(new Error(`${target.method} ${target.path}: ${res.statusCode}`)),
            )
          })
          req.once('error', reject)
          req.end()
        })
      }
    }),
  )
  agent.destroy()
}

const control = promisify(execFile)

/** Instructions per request of one server on each of its paths. */
async function measure(name: string): Promise<number[]> {
  const { url, child } = await start(name)
  const pid = String(child.pid)
  try {
    const counts: number[] = []
    for (const target of plan[name] ?? []) {
      await load(url, target, warm)
      await control('callgrind_control', ['-z', pid])
      await load(url, target, measured)
      await control('callgrind_control', ['-d', pid])
      const prefix = `cg.${name.replace(/\W+/g, '_')}.${pid}.`
      const dumps = readdirSync(folder)
        .filter((file) => file.startsWith(prefix))
        .sort((a, b) => Number(a.slice(prefix.length)) - Number(b.slice(prefix.length)))
      const text = readFileSync(join(folder, dumps.at(-1) as string), 'utf8')
      const summary = /^summary: (\d+)/m.exec(text)?.[1] ?? /^totals: (\d+)/m.exec(text)?.[1]
      if (summary === undefined) throw new Error(`no instruction count for ${name}`)
      counts.push(Number(summary) / measured)
    }
    return counts
  } finally {
    child.kill('SIGKILL')
  }
}

const results: Record<string, number[]> = {}
try {
  const queue = Object.keys(plan)
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      for (let name = queue.shift(); name !== undefined; name = queue.shift()) {
        results[name] = await measure(name)
      }
    }),
  )
} finally {
  rmSync(folder, { recursive: true, force: true })
}

const k = (n: number) => `${(n / 1000).toFixed(1)} k`
const verdict = (value: number, target: number) =>
  `${value.toFixed(3)} ${value >= target ? 'yes' : 'NO'}`
const lines = [
  `callgrind, user-space instructions per request (k = thousand), ${measured} requests per path after ${warm} of warm-up, ${connections} keep-alive connections, Node ${process.version}.`,
  'Ratios: bare ÷ adapter (how many adapter requests fit in the instructions of one bare request).',
  '',
  '| framework | bare JSON GET | unpriced GET via tollgate | unpriced ÷ bare (≥ 0.97) | bare JSON POST | 402 POST via tollgate | 402 ÷ bare (≥ 0.85) | no-op middleware GET ÷ bare |',
  '|---|---:|---:|---:|---:|---:|---:|---:|',
]
for (const framework of ['express', 'koa', 'hono']) {
  const [bareGet, barePostCount] = results[`${framework} bare`] as [number, number]
  const noop = (results[`${framework} no-op middleware`] as [number])[0]
  for (const mount of framework === 'hono' ? ['', ' (front)'] : ['']) {
    const [free, paid] = results[`${framework}${mount} tollgate`] as [number, number]
    lines.push(
      `| ${framework}${mount} | ${k(bareGet)} | ${k(free)} | ${verdict(bareGet / free, 0.97)} | ${k(barePostCount)} | ${k(paid)} | ${verdict(barePostCount / paid, 0.85)} | ${(bareGet / noop).toFixed(3)} |`,
    )
  }
}
process.stdout.write(`${lines.join('\n')}\n`)
