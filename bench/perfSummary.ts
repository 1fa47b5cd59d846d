/**
 * `npx tsx bench/perfSummary.ts [file] [pid]`: reads a Linux `perf record -g` file (default
 * `.data/profiles/burst.perf.data`, written by `BENCH_PERF=1 npx tsx bench/gateway/run.ts` with
 * `NODE_OPTIONS=--perf-basic-prof`) and prints, for the main thread of `pid` (default: the busiest
 * main thread), the share of on-CPU samples per innermost JavaScript function (what it ran itself,
 * with the V8 builtins, runtime and system calls below it) and per JavaScript function anywhere on
 * the stack. Needs `perf` on the PATH.
 */
import { execFileSync } from 'node:child_process'

const file = process.argv[2] ?? '.data/profiles/burst.perf.data'
const text = execFileSync('perf', ['script', '-i', file, '-F', 'pid,tid,ip,sym', '--no-inline'], {
  encoding: 'utf8',
  maxBuffer: 1 << 30,
  stdio: ['ignore', 'pipe', 'ignore'],
})

type Sample = { thread: string; frames: string[] }
const samples: Sample[] = []
const perThread = new Map<string, number>()
for (const block of text.split('\n\n')) {
  const lines = block.trim().split('\n')
  const head = lines[0]?.trim().split(/\s+/)[0]
  if (head === undefined || !head.includes('/')) continue
  const frames = lines.slice(1).map((line) => line.trim().split(/\s+/).slice(1).join(' '))
  samples.push({ thread: head, frames })
  perThread.set(head, (perThread.get(head) ?? 0) + 1)
}
const mainThreads = [...perThread].filter(([thread]) => {
  const [pid, tid] = thread.split('/')
  return pid === tid
})
const chosen =
  process.argv[3] !== undefined
    ? `${process.argv[3]}/${process.argv[3]}`
    : mainThreads.sort((a, b) => b[1] - a[1])[0]?.[0]
if (chosen === undefined) throw new Error(`no samples in ${file}`)

const jsName = (frame: string) => frame.replace(/^JS:[*~^+-]?/, '').replace(/:\d+:\d+$/, '')
const innermost = new Map<string, number>()
const anywhere = new Map<string, number>()
let count = 0
for (const { thread, frames } of samples) {
  if (thread !== chosen) continue
  count++
  const first = frames.find((frame) => frame.startsWith('JS:'))
  const own = first === undefined ? `(no JavaScript) ${frames[0] ?? '?'}` : jsName(first)
  innermost.set(own, (innermost.get(own) ?? 0) + 1)
  for (const name of new Set(frames.filter((f) => f.startsWith('JS:')).map(jsName))) {
    anywhere.set(name, (anywhere.get(name) ?? 0) + 1)
  }
}
const top = (counts: Map<string, number>, n: number) =>
  [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([name, c]) => `${((100 * c) / count).toFixed(1).padStart(5)} %  ${name}`)
    .join('\n')
console.log(`Threads by samples: ${[...perThread].map(([t, c]) => `${t} ${c}`).join(', ')}`)
console.log(`Main thread ${chosen}: ${count} samples\n\nInnermost JavaScript function:`)
console.log(top(innermost, 30))
console.log('\nJavaScript function anywhere on the stack:')
console.log(top(anywhere, 40))
