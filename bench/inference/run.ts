/**
 * `npx tsx bench/inference/run.ts`: the private inference API under load. Three processes: the model
 * server (`bench/inference/model.ts`, the deterministic OpenAI-compatible upstream), the gateway
 * (`bench/inference/server.ts`, SQLite, one key with ample credit), and the callers (this process).
 *
 * 1. Streamed time to first token: the time from sending a streamed chat request to the first
 *    `chat.completion.chunk` bytes, through the gateway with a bearer key vs the model server
 *    directly, alternating, one at a time, `BENCH_TTFT` rounds each (default 300) after a warm-up.
 *    The gateway's added time is the difference of the medians (target ≤ 3 ms). Through the gateway
 *    a call also authenticates the key, counts it against the rate limit and debits its credit
 *    (one SQLite transaction) before the upstream is called.
 * 2. Keyed buffered calls per second through the gateway vs the model server directly, `BENCH_CALLS`
 *    calls each (default 3 000) at `BENCH_CONCURRENCY` (default 32), after a warm-up, with the
 *    gateway's CPU per call.
 *
 * Ratios are against the direct baseline measured in the same run. Prints a markdown table.
 */
import { Agent, request as httpRequest } from 'node:http'
import { availableParallelism, loadavg } from 'node:os'
import { startScript } from '../script.js'

const ttftRounds = Number(process.env.BENCH_TTFT ?? 300)
const calls = Number(process.env.BENCH_CALLS ?? 3000)
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 32)
const warm = Number(process.env.BENCH_WARM ?? 1000)

const messages = [{ role: 'user', content: 'Say hello in one sentence.' }]
const agent = new Agent({ keepAlive: true, maxSockets: 256 })

/** One POST; resolves with the ms to the first body byte and the ms to the end, and the status. */
function post(
  url: string,
  headers: Record<string, string>,
  body: string,
): Promise<{ status: number; firstByteMs: number; totalMs: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    let firstByteMs = Number.NaN
    const req = httpRequest(
      url,
      {
        method: 'POST',
        agent,
        headers: {
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
          ...headers,
        },
      },
      (res) => {
        res.on('data', () => {
          if (Number.isNaN(firstByteMs)) firstByteMs = performance.now() - started
        })
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            firstByteMs,
            totalMs: performance.now() - started,
          }),
        )
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 0
    ? ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
    : (sorted[mid] as number)
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number
}

async function load(
  total: number,
  call: () => Promise<{ status: number }>,
): Promise<{ perSecond: number; failures: number }> {
  let next = 0
  let failures = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        next++
        const { status } = await call()
        if (status !== 200) failures++
      }
    }),
  )
  return { perSecond: total / ((performance.now() - started) / 1000), failures }
}

const cpuOf = (child: import('node:child_process').ChildProcess) =>
  new Promise<number>((resolve) => {
    child.once('message', (m) => resolve((m as { cpuMs: number }).cpuMs))
    child.send('cpu')
  })

console.error(
  `load average at start: ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
)
const model = await startScript<{ baseUrl: string }>(new URL('./model.ts', import.meta.url))
const gateway = await startScript<{ url: string; key: string }>(
  new URL('./server.ts', import.meta.url),
  { MODEL_URL: model.info.baseUrl },
  true,
)
try {
  const direct = {
    url: `${model.info.baseUrl}/chat/completions`,
    headers: { authorization: 'Bearer bench' },
  }
  const through = {
    url: `${gateway.info.url}/v1/chat/completions`,
    headers: { authorization: `Bearer ${gateway.info.key}` },
  }
  // The body the gateway sends upstream (its defaults filled in), so both paths do the same work.
  const streamBody = JSON.stringify({
    model: 'bench-model',
    messages,
    stream: true,
    temperature: 1,
  })
  const bufferedBody = JSON.stringify({
    model: 'bench-model',
    messages,
    stream: false,
    temperature: 1,
  })

  // Warm-up of both paths.
  await load(warm, () => post(direct.url, direct.headers, bufferedBody))
  await load(warm, () => post(through.url, through.headers, bufferedBody))
  for (let i = 0; i < 100; i++) {
    await post(direct.url, direct.headers, streamBody)
    await post(through.url, through.headers, streamBody)
  }

  // 1. Time to first token, alternating one at a time.
  const ttft = { direct: [] as number[], gateway: [] as number[] }
  for (let i = 0; i < ttftRounds; i++) {
    const a = await post(direct.url, direct.headers, streamBody)
    const b = await post(through.url, through.headers, streamBody)
    if (a.status !== 200 || b.status !== 200)
      throw new Error(`stream status ${a.status}/${b.status}`)
    ttft.direct.push(a.firstByteMs)
    ttft.gateway.push(b.firstByteMs)
  }

  // 2. Buffered calls per second.
  const directRate = await load(calls, () => post(direct.url, direct.headers, bufferedBody))
  const cpuBefore = await cpuOf(gateway.process)
  const gatewayRate = await load(calls, () => post(through.url, through.headers, bufferedBody))
  const cpuAfter = await cpuOf(gateway.process)
  if (directRate.failures + gatewayRate.failures > 0) {
    throw new Error(`failed calls: direct ${directRate.failures}, gateway ${gatewayRate.failures}`)
  }

  const added = median(ttft.gateway) - median(ttft.direct)
  const rows = [
    ['measure', 'direct (baseline)', 'through the gateway', 'gateway − direct / ratio'],
    ['---', '---', '---', '---'],
    [
      `streamed TTFT median, ms (${ttftRounds} rounds)`,
      median(ttft.direct).toFixed(2),
      median(ttft.gateway).toFixed(2),
      `+${added.toFixed(2)} ms (target ≤ 3 ms: ${added <= 3 ? 'met' : 'NOT met'})`,
    ],
    [
      'streamed TTFT p90, ms',
      percentile(ttft.direct, 90).toFixed(2),
      percentile(ttft.gateway, 90).toFixed(2),
      `+${(percentile(ttft.gateway, 90) - percentile(ttft.direct, 90)).toFixed(2)} ms`,
    ],
    [
      `keyed buffered calls/s (${calls} at ${concurrency})`,
      directRate.perSecond.toFixed(0),
      gatewayRate.perSecond.toFixed(0),
      `${(gatewayRate.perSecond / directRate.perSecond).toFixed(2)}×`,
    ],
    ['gateway CPU per keyed call, ms', '', ((cpuAfter - cpuBefore) / calls).toFixed(2), ''],
  ]
  console.log(`cores: ${availableParallelism()}`)
  for (const row of rows) console.log(`| ${row.join(' | ')} |`)
  console.error(
    `load average at end: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  )
} finally {
  gateway.process.kill('SIGTERM')
  model.process.kill('SIGTERM')
  agent.destroy()
}
