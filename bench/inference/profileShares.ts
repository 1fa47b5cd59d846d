/**
 * `npx tsx bench/inference/profileShares.ts <profile.cpuprofile> [fromUs toUs]`: where a gateway's
 * CPU went, from a V8 CPU profile (`BENCH_PROFILE=inference/server npx tsx bench/inference/run.ts`
 * writes one to `.data/profiles/`; run.ts prints the keyed buffered phase's window, monotonic µs).
 * Each busy sample in the window goes to the first part of the keyed path below that any frame of
 * its stack belongs to (socket writes and garbage collection: the sample's own frame); prints the
 * shares of busy samples as a markdown table.
 */
import { readFileSync } from 'node:fs'

type Frame = { functionName: string; url: string }
type Profile = {
  nodes: { id: number; callFrame: Frame; children?: number[] }[]
  samples: number[]
  timeDeltas: number[]
  startTime: number
}

const parts: [string, (frame: Frame) => boolean, 'leaf' | 'stack'][] = [
  ['garbage collection', (f) => f.functionName === '(garbage collector)', 'leaf'],
  [
    'socket write syscalls',
    (f) =>
      f.url === '' &&
      /^(writev|writeUtf8String|writeBuffer|writeLatin1String)$/.test(f.functionName),
    'leaf',
  ],
  [
    'key store (SQLite, Kysely)',
    (f) => /inference\/keys\.ts|db\/database\.ts|kysely/.test(f.url),
    'stack',
  ],
  ['rate limit', (f) => /rate-limiter-flexible|inference\/limits\.ts/.test(f.url), 'stack'],
  [
    'body read and validation',
    (f) =>
      /src\/body\.ts|inference\/request\.ts|zod/.test(f.url) || f.functionName === 'readNodeBody',
    'stack',
  ],
  [
    'upstream call (runner, fetch, undici)',
    (f) => /upstreams\/|nodeFetch|undici/.test(f.url),
    'stack',
  ],
  [
    'inference API (api.ts, answers.ts)',
    (f) => /inference\/(api|answers)\.ts/.test(f.url),
    'stack',
  ],
  [
    'HTTP server, Hono, middleware, metrics, logs',
    (f) => /hono|_http_|middleware|prom-client|pino|listen\.ts|server\.ts/.test(f.url),
    'stack',
  ],
]

const [file, from, to] = process.argv.slice(2)
if (file === undefined) throw new Error('usage: profileShares.ts <profile> [fromUs toUs]')
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile
const byId = new Map(profile.nodes.map((n) => [n.id, n]))
const parent = new Map<number, number>()
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
const start = from === undefined ? Number.NEGATIVE_INFINITY : Number(from)
const end = to === undefined ? Number.POSITIVE_INFINITY : Number(to)

const counts = new Map<string, number>()
let busy = 0
let at = profile.startTime
profile.samples.forEach((sample, i) => {
  at += profile.timeDeltas[i] ?? 0
  if (at < start || at > end) return
  const frames: Frame[] = []
  for (let id: number | undefined = sample; id !== undefined; id = parent.get(id)) {
    const node = byId.get(id)
    if (node) frames.push(node.callFrame)
  }
  if (frames[0]?.functionName === '(idle)') return
  busy++
  const part =
    parts.find(([, belongs, where]) =>
      where === 'leaf' ? frames[0] !== undefined && belongs(frames[0]) : frames.some(belongs),
    )?.[0] ?? 'event loop, microtasks, runtime'
  counts.set(part, (counts.get(part) ?? 0) + 1)
})
console.log(`busy samples: ${busy}`)
console.log('| part | share of busy samples |\n|---|---:|')
for (const [part, count] of [...counts].sort((a, b) => b[1] - a[1])) {
  console.log(`| ${part} | ${((100 * count) / busy).toFixed(1)} % |`)
}
