/**
 * `npx tsx bench/inference/instructions.ts`: the gateway's user-space instructions per keyed
 * buffered call, counted by valgrind's callgrind. CPU time per call (`run.ts`) moves by ±20 % from
 * one run to the next on a shared two-core machine; an instruction count does not depend on what
 * else the machine does, so it settles a before/after comparison of the keyed path's own work.
 *
 * The model server (`model.ts`) runs as usual; the gateway (`server.ts`, bundled once so that
 * valgrind does not also run the TypeScript loader) runs under callgrind with V8's hash and random
 * seeds fixed. After `BENCH_WARM` keyed buffered calls (default 3 000), the counters are zeroed,
 * `BENCH_REQUESTS` calls (default 1 000) are made and the counters dumped, `BENCH_REPEATS` times
 * (default 3); it prints the fewest instructions per call of the repeats (a repeat that caught a
 * major garbage collection or the JIT counts more) and how far they spread. `BENCH_CONCURRENCY`
 * calls in flight (default 1: no two calls share a store transaction, so the count does not depend
 * on timing). User space only: the kernel's part (socket reads and writes, the store's file
 * writes) is left out. `BENCH_SYMBOLS=N` also prints the N functions with the most instructions of
 * their own per call (`bench/adapters/symbols.ts`). Needs `valgrind`; a few minutes.
 */
import { execFile, spawn } from 'node:child_process'
import { readdirSync, readFileSync, rmSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { promisify } from 'node:util'
import { topFunctions } from '../adapters/symbols.js'
import { bundleScript, startScript } from '../script.js'

const warm = Number(process.env.BENCH_WARM ?? 3000)
const measured = Number(process.env.BENCH_REQUESTS ?? 1000)
const repeats = Number(process.env.BENCH_REPEATS ?? 3)
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 1)
const symbols = Number(process.env.BENCH_SYMBOLS ?? 0)
const body = JSON.stringify({
  model: 'bench-model',
  messages: [{ role: 'user', content: 'Say hello in one sentence.' }],
  stream: false,
  temperature: 1,
})

const { folder, bundle } = await bundleScript(
  new URL('./server.ts', import.meta.url),
  'bench-inference-instructions-',
)

const model = await startScript<{ baseUrl: string }>(new URL('./model.ts', import.meta.url))
const gateway = spawn(
  'valgrind',
  [
    '--tool=callgrind',
    '--quiet',
    `--callgrind-out-file=${join(folder, 'cg.%p')}`,
    ...(symbols > 0
      ? ['--dump-instr=yes', '--compress-pos=no', '--compress-strings=no']
      : ['--dump-instr=no']),
    process.execPath,
    '--hash-seed=1',
    '--random-seed=1',
    ...(symbols > 0 ? ['--perf-basic-prof'] : []),
    bundle,
  ],
  { env: { ...process.env, MODEL_URL: model.info.baseUrl }, stdio: ['pipe', 'pipe', 'inherit'] },
)
const control = promisify(execFile)
const pid = String(gateway.pid)
try {
  const info = await new Promise<{ url: string; key: string }>((resolve, reject) => {
    gateway.once('exit', (code) => reject(new Error(`the gateway exited with ${code}`)))
    createInterface({ input: gateway.stdout as NodeJS.ReadableStream }).once('line', (line) =>
      resolve(JSON.parse(line) as { url: string; key: string }),
    )
  })
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency })
  const call = () =>
    new Promise<void>((resolve, reject) => {
      const req = request(
        `${info.url}/v1/chat/completions`,
        {
          method: 'POST',
          agent,
          headers: {
            authorization: `Bearer ${info.key}`,
            'content-type': 'application/json',
            'content-length': String(Buffer.byteLength(body)),
          },
        },
        (res) => {
          res.resume()
          res.once('end', () =>
            res.statusCode === 200 ? resolve() : reject(new Error(`status ${res.statusCode}`)),
          )
        },
      )
      req.once('error', reject)
      req.end(body)
    })
  const load = async (count: number) => {
    let sent = 0
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (sent < count) {
          sent++
          await call()
        }
      }),
    )
  }
  await load(warm)
  const counts: number[] = []
  for (let repeat = 0; repeat < repeats; repeat++) {
    await control('callgrind_control', ['-z', pid])
    await load(measured)
    await control('callgrind_control', ['-d', pid])
    const prefix = `cg.${pid}.`
    const dumps = readdirSync(folder)
      .filter((file) => file.startsWith(prefix))
      .sort((a, b) => Number(a.slice(prefix.length)) - Number(b.slice(prefix.length)))
    const dump = join(folder, dumps.at(-1) as string)
    const text = readFileSync(dump, 'utf8')
    const summary = /^summary: (\d+)/m.exec(text)?.[1] ?? /^totals: (\d+)/m.exec(text)?.[1]
    if (summary === undefined) throw new Error('no instruction count')
    counts.push(Number(summary) / measured)
    if (symbols > 0 && repeat === repeats - 1) {
      const top = topFunctions(dump, `/tmp/perf-${pid}.map`, measured, symbols)
      process.stdout.write(
        `instructions of their own per keyed call:\n${top.map((f) => `${f.perRequest.toFixed(0).padStart(8)}  ${f.name}`).join('\n')}\n`,
      )
    }
  }
  agent.destroy()
  const least = Math.min(...counts)
  const spread = ((Math.max(...counts) - least) / least) * 100
  process.stdout.write(
    `gateway, user-space instructions per keyed buffered call: ${(least / 1000).toFixed(1)} k ` +
      `(the fewest of ${repeats} × ${measured} calls, spread ${spread.toFixed(1)} %; ` +
      `${concurrency} in flight, after ${warm} calls; Node ${process.version}); ` +
      `all: ${counts.map((c) => (c / 1000).toFixed(1)).join(', ')} k\n`,
  )
} finally {
  const exited = new Promise((resolve) => gateway.once('exit', resolve))
  gateway.kill('SIGTERM')
  model.process.kill('SIGTERM')
  await exited
  if (symbols > 0) rmSync(`/tmp/perf-${pid}.map`, { force: true })
  if (process.env.BENCH_KEEP === '1') process.stderr.write(`callgrind dumps kept in ${folder}\n`)
  else rmSync(folder, { recursive: true, force: true })
}
