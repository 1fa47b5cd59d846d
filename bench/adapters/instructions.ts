/**
 * `npm run bench:adapters:instructions`: the adapter ratios of `bench:adapters` again, from the
 * instructions each server process executes per request, counted by valgrind's callgrind. Unlike
 * requests/s on a two-core machine (±5–8 % from one run to the next), an instruction count repeats
 * to a fraction of a percent whatever else the machine is doing, so it settles targets that sit
 * inside the noise of a throughput run.
 *
 * Each server of `servers.ts` (bundled once, so that valgrind does not also run the TypeScript
 * loader) runs under callgrind. Every path of a server is warmed up first (`BENCH_WARM` requests
 * per path in all, default 8 000, interleaved: fewer leave the JIT still compiling during the
 * measurement); then each path is measured `BENCH_REPEATS` times (default 3): counters zeroed,
 * `BENCH_REQUESTS` requests (default 2 000) over keep-alive connections, counters dumped. A cell
 * shows the fewest instructions per request of the repeats (a repeat that caught a major garbage
 * collection counts more) and how far the repeats spread. V8's hash and random seeds are fixed
 * (`BENCH_NODE_FLAGS`, default `--hash-seed=1 --random-seed=1`): with a seed of its own, each server
 * process's count moved by up to 8 % between runs; with fixed seeds two processes of the same
 * server agree within 0.3 %, while from one run to the next a count still
 * moves by up to about 12 % (when V8's background compiler finishes, and what it produces, is not
 * fixed by the seeds). `BENCH_ONLY=express,koa,hono` narrows
 * the run. User-space instructions only: the kernel's share of a request (reading and writing the
 * socket) is about the same for a bare route and an adapter, so leaving it out makes the ratios a
 * little stricter, never kinder.
 *
 * `BENCH_SYMBOLS=N` adds, per server and path, the N functions with the most instructions of
 * their own, JavaScript named (`symbols.ts`).
 *
 * Needs `valgrind` on the PATH. Takes several minutes (each server starts in about 40 s under
 * valgrind; about 15 minutes in all); `BENCH_PARALLEL` servers at a time (default 2).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { readdirSync, readFileSync, rmSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { promisify } from 'node:util'
import { bundleScript } from '../script.js'
import { topFunctions } from './symbols.js'

const warm = Number(process.env.BENCH_WARM ?? 8000)
const measured = Number(process.env.BENCH_REQUESTS ?? 2000)
const parallel = Number(process.env.BENCH_PARALLEL ?? 2)
const repeats = Number(process.env.BENCH_REPEATS ?? 3)
const only = process.env.BENCH_ONLY?.split(',')
/**
 * V8's hash and random seeds, fixed: by default every process picks its own, which moves a
 * server's instruction count by a few percent from one process to the next.
 */
const nodeFlags = (process.env.BENCH_NODE_FLAGS ?? '--hash-seed=1 --random-seed=1')
  .split(' ')
  .filter((flag) => flag !== '')
const connections = 8
/**
 * `BENCH_SYMBOLS=N`: also print, for each server and path, the N functions that executed the most
 * instructions of their own in its last measurement, JavaScript and regular expressions named
 * (`bench/adapters/symbols.ts`; the servers then run with `--perf-basic-prof`).
 */
const symbols = Number(process.env.BENCH_SYMBOLS ?? 0)
const profiles: string[] = []

type Path = { method: 'GET' | 'POST'; path: string; expect: number }
const freeGet: Path = { method: 'GET', path: '/free', expect: 200 }
const barePost: Path = { method: 'POST', path: '/paid', expect: 200 }
const challenge: Path = { method: 'POST', path: '/paid', expect: 402 }
/** A bare handler answering the 402's exact status, headers and bytes. */
const sameBytes: Path = { method: 'POST', path: '/same-bytes', expect: 402 }

/** What each server is measured on. */
const plan: Record<string, Path[]> = {
  'express bare': [freeGet, barePost, sameBytes],
  'express tollgate': [freeGet, challenge],
  'express no-op middleware': [freeGet],
  'koa bare': [freeGet, barePost, sameBytes],
  'koa tollgate': [freeGet, challenge],
  'koa no-op middleware': [freeGet],
  'hono bare': [freeGet, barePost, sameBytes],
  'hono tollgate': [freeGet, challenge],
  'hono (front) tollgate': [freeGet, challenge],
  'hono no-op middleware': [freeGet],
  '@hono/node-server alone': [barePost, sameBytes],
}

const { folder, bundle } = await bundleScript(
  new URL('./servers.ts', import.meta.url),
  'bench-instructions-',
)

/** Starts `name` under callgrind; resolves with its URL once it listens. */
async function start(name: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(
    'valgrind',
    [
      '--tool=callgrind',
      '--quiet',
      `--callgrind-out-file=${join(folder, `cg.${name.replace(/\W+/g, '_')}.%p`)}`,
      ...(symbols > 0
        ? ['--dump-instr=yes', '--compress-pos=no', '--compress-strings=no']
        : ['--dump-instr=no']),
      process.execPath,
      ...nodeFlags,
      ...(symbols > 0 ? ['--perf-basic-prof'] : []),
      bundle,
    ],
    { env: { ...process.env, BENCH_SERVER: name }, stdio: ['ignore', 'pipe', 'inherit'] },
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

/** Instructions per request of one server on each of its paths (each measured `repeats` times). */
async function measure(name: string): Promise<number[][]> {
  const { url, child } = await start(name)
  const pid = String(child.pid)
  const prefix = `cg.${name.replace(/\W+/g, '_')}.${pid}.`
  const paths = plan[name] ?? []
  try {
    // Warm every path before measuring any: the JIT's work on code the paths share is done by then.
    for (let round = 0; round < 4; round++) {
      for (const target of paths) await load(url, target, warm / 4)
    }
    const counts: number[][] = paths.map(() => [])
    for (let repeat = 0; repeat < repeats; repeat++) {
      for (const [i, target] of paths.entries()) {
        await control('callgrind_control', ['-z', pid])
        await load(url, target, measured)
        await control('callgrind_control', ['-d', pid])
        const dumps = readdirSync(folder)
          .filter((file) => file.startsWith(prefix))
          .sort((a, b) => Number(a.slice(prefix.length)) - Number(b.slice(prefix.length)))
        const dump = join(folder, dumps.at(-1) as string)
        const text = readFileSync(dump, 'utf8')
        if (symbols > 0 && repeat === repeats - 1) {
          const top = topFunctions(dump, `/tmp/perf-${pid}.map`, measured, symbols)
          profiles.push(
            `${name}, ${target.method} ${target.path} (${target.expect}): instructions of their own per request`,
            ...top.map((f) => `${f.perRequest.toFixed(0).padStart(8)}  ${f.name}`),
            '',
          )
        }
        const summary = /^summary: (\d+)/m.exec(text)?.[1] ?? /^totals: (\d+)/m.exec(text)?.[1]
        if (summary === undefined) throw new Error(`no instruction count for ${name}`)
        counts[i]?.push(Number(summary) / measured)
      }
    }
    return counts
  } finally {
    child.kill('SIGKILL')
    if (symbols > 0) rmSync(`/tmp/perf-${pid}.map`, { force: true })
  }
}

const results: Record<string, number[][]> = {}
try {
  const queue = Object.keys(plan).filter(
    (name) => only === undefined || only.some((prefix) => name.startsWith(prefix)),
  )
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      for (let name = queue.shift(); name !== undefined; name = queue.shift()) {
        results[name] = await measure(name)
      }
    }),
  )
} finally {
  // BENCH_KEEP=1 keeps the bundle and callgrind's dumps (for `callgrind_annotate`).
  if (process.env.BENCH_KEEP === '1') process.stderr.write(`callgrind dumps kept in ${folder}\n`)
  else rmSync(folder, { recursive: true, force: true })
}

/** The fewest instructions per request over the repeats (the least disturbed by GC and the JIT). */
const least = (counts: number[] | undefined) => Math.min(...(counts ?? [Number.NaN]))
/** A cell: the fewest, and how far the repeats spread. */
const cell = (counts: number[] | undefined) => {
  const values = counts ?? []
  const spread = ((Math.max(...values) - Math.min(...values)) / Math.min(...values)) * 100
  return `${(least(values) / 1000).toFixed(1)} k ±${spread.toFixed(1)} %`
}
const verdict = (value: number, target: number) =>
  `${value.toFixed(3)} ${value >= target ? 'yes' : 'NO'}`
const lines = [
  `callgrind, user-space instructions per request (k = thousand; the fewest of ${repeats} measurements of ${measured} requests, ± how far they spread), after ${warm} requests of warm-up per path, ${connections} keep-alive connections, Node ${process.version}.`,
  'Ratios: bare ÷ adapter (how many adapter requests fit in the instructions of one bare request).',
  '',
  "| framework | bare JSON GET | unpriced GET via tollgate | unpriced ÷ bare (≥ 0.97) | bare JSON POST | 402 POST via tollgate | 402 ÷ bare (≥ 0.85) | bare POST answering the 402's bytes | 402 ÷ that | no-op middleware GET ÷ bare |",
  '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
]
for (const framework of ['express', 'koa', 'hono']) {
  const bare = results[`${framework} bare`]
  const noop = results[`${framework} no-op middleware`]
  if (bare === undefined) continue
  for (const mount of framework === 'hono' ? ['', ' (front)'] : ['']) {
    const paid = results[`${framework}${mount} tollgate`]
    if (paid === undefined) continue
    lines.push(
      `| ${framework}${mount} | ${cell(bare[0])} | ${cell(paid[0])} | ${verdict(least(bare[0]) / least(paid[0]), 0.97)} | ${cell(bare[1])} | ${cell(paid[1])} | ${verdict(least(bare[1]) / least(paid[1]), 0.85)} | ${cell(bare[2])} | ${(least(bare[2]) / least(paid[1])).toFixed(3)} | ${noop === undefined ? '—' : (least(bare[0]) / least(noop[0])).toFixed(3)} |`,
    )
  }
}
process.stdout.write(`${lines.join('\n')}\n`)
// Every count measured (instructions per request, per server and path, per repeat).
process.stdout.write(
  `\nAll counts: ${JSON.stringify(Object.fromEntries(Object.entries(results).map(([name, paths]) => [name, paths.map((repeats) => repeats.map(Math.round))])))}\n`,
)
if (profiles.length > 0) process.stdout.write(`\n${profiles.join('\n')}`)
