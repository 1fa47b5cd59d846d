/**
 * `npx tsx bench/inference/run.ts`: the private inference API under load. Four processes: the model
 * server (`bench/inference/model.ts`, the deterministic OpenAI-compatible upstream), the simulated
 * enclave (`bench/inference/enclave.ts`, serving one confidential model), the gateway
 * (`bench/inference/server.ts`, SQLite, one key with ample credit), and the callers (this process).
 *
 * 1. Streamed time to first token: the time from sending a streamed chat request to the first
 *    `chat.completion.chunk` bytes, through the gateway with a bearer key vs the model server
 *    directly, alternating, one at a time, `BENCH_TTFT` rounds each (default 300) after a warm-up.
 *    The gateway's added time is the difference of the medians (target ≤ 0.7 ms). Through the gateway
 *    a call also authenticates the key, counts it against the rate limit and debits its credit
 *    (one SQLite transaction) before the upstream is called.
 * 2. Keyed buffered calls per second through the gateway vs the model server directly, `BENCH_CALLS`
 *    calls each (default 3 000) at `BENCH_CONCURRENCY` (default 32), after a warm-up, with the
 *    gateway's CPU per call (targets ≥ 0.3× direct, ≤ 0.5 ms).
 * 3. Streamed time to first token of the CONFIDENTIAL model: through the gateway (which checks the
 *    enclave's attested session before sending, and the first event's model before relaying) vs the
 *    simulated enclave directly, alternating, `BENCH_TTFT` rounds each (target ≤ 0.7 ms added).
 * 4. Receipt verification excluding the network, with every document pre-fetched (an in-memory
 *    fetch and ledger), `BENCH_VERIFY` rounds (default 300; target ≤ 5 ms median): cold — the
 *    one-shot `verifyInferenceReceipt` of a confidential answer's receipt (a fresh verifier: the
 *    quote verifier built and the session's quote checked) — and warm — a long-lived
 *    `createInferenceReceiptVerifier` verifying another receipt of a session it verified before (the
 *    report's verdict reused, everything else checked); against the checks at its core alone
 *    (`verifyReport`, its TDX quote verifier built once, + `verifyReceipt` on the same documents).
 *
 * Ratios are against the direct baseline measured in the same run. Prints a markdown table.
 * `BENCH_ONLY=receipt` runs part 4 alone (its step breakdown: `bench/inference/receiptSteps.ts`).
 */
import { Agent, request as httpRequest } from 'node:http'
import { availableParallelism, loadavg } from 'node:os'
import { Attestation, createLedger, type Ledger } from '../../src/index.js'
import type { LookupOutcome } from '../../src/ledger/types.js'
import { startScript } from '../script.js'

const ttftRounds = Number(process.env.BENCH_TTFT ?? 300)
const calls = Number(process.env.BENCH_CALLS ?? 3000)
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 32)
const warm = Number(process.env.BENCH_WARM ?? 1000)
const verifyRounds = Number(process.env.BENCH_VERIFY ?? 300)
const receiptOnly = process.env.BENCH_ONLY === 'receipt'
/** The keyed path's targets (issue 32): time to first token added, keyed calls/s vs direct, CPU per call. */
const ttftTargetMs = 0.7
const ratioTarget = 0.3
const cpuTargetMs = 0.5

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
const enclave = await startScript<{ model: { id: string; upstream: { baseUrl: string } } }>(
  new URL('./enclave.ts', import.meta.url),
)
const gateway = await startScript<{ url: string; key: string }>(
  new URL('./server.ts', import.meta.url),
  { MODEL_URL: model.info.baseUrl, CONFIDENTIAL_MODEL: JSON.stringify(enclave.info.model) },
  true,
)
if (receiptOnly) {
  try {
    const body = JSON.stringify({
      model: enclave.info.model.id,
      messages,
      stream: true,
      temperature: 1,
    })
    const verification = await measureVerification(gateway.info, body)
    console.log(`cores: ${availableParallelism()}`)
    console.log('| measure | core checks (baseline) | whole | ratio |\n| --- | --- | --- | --- |')
    for (const row of verificationRows(verification)) console.log(`| ${row.join(' | ')} |`)
    console.error(
      `load average at end: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    )
  } finally {
    gateway.process.kill('SIGTERM')
    model.process.kill('SIGTERM')
    enclave.process.kill('SIGTERM')
    agent.destroy()
  }
  process.exit(0)
}
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
  const windowStart = process.hrtime.bigint() / 1000n
  const gatewayRate = await load(calls, () => post(through.url, through.headers, bufferedBody))
  const windowEnd = process.hrtime.bigint() / 1000n
  const cpuAfter = await cpuOf(gateway.process)
  // The monotonic clock V8's profiles use: `bench/inference/profileShares.ts <profile> <from> <to>`.
  console.error(`keyed buffered calls, monotonic µs: ${windowStart} ${windowEnd}`)
  if (directRate.failures + gatewayRate.failures > 0) {
    throw new Error(`failed calls: direct ${directRate.failures}, gateway ${gatewayRate.failures}`)
  }

  // 3. Confidential time to first token, alternating one at a time.
  const confidentialId = enclave.info.model.id
  const enclaveDirect = {
    url: `${enclave.info.model.upstream.baseUrl}/chat/completions`,
    headers: {},
  }
  const confidentialBody = JSON.stringify({
    model: confidentialId,
    messages,
    stream: true,
    temperature: 1,
  })
  for (let i = 0; i < 100; i++) {
    await post(enclaveDirect.url, enclaveDirect.headers, confidentialBody)
    await post(through.url, through.headers, confidentialBody)
  }
  const confidential = { direct: [] as number[], gateway: [] as number[] }
  for (let i = 0; i < ttftRounds; i++) {
    const a = await post(enclaveDirect.url, enclaveDirect.headers, confidentialBody)
    const b = await post(through.url, through.headers, confidentialBody)
    if (a.status !== 200 || b.status !== 200) {
      throw new Error(`confidential stream status ${a.status}/${b.status}`)
    }
    confidential.direct.push(a.firstByteMs)
    confidential.gateway.push(b.firstByteMs)
  }

  // 4. Receipt verification with every document pre-fetched.
  const verification = await measureVerification(gateway.info, confidentialBody)

  const added = median(ttft.gateway) - median(ttft.direct)
  const ratio = gatewayRate.perSecond / directRate.perSecond
  const cpuPerCall = (cpuAfter - cpuBefore) / calls
  const confidentialAdded = median(confidential.gateway) - median(confidential.direct)
  const rows = [
    ['measure', 'direct (baseline)', 'through the gateway', 'gateway − direct / ratio'],
    ['---', '---', '---', '---'],
    [
      `streamed TTFT median, ms (${ttftRounds} rounds)`,
      median(ttft.direct).toFixed(2),
      median(ttft.gateway).toFixed(2),
      `+${added.toFixed(2)} ms (target ≤ ${ttftTargetMs} ms: ${added <= ttftTargetMs ? 'met' : 'NOT met'})`,
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
      `${ratio.toFixed(2)}× (target ≥ ${ratioTarget}×: ${ratio >= ratioTarget ? 'met' : 'NOT met'})`,
    ],
    [
      'gateway CPU per keyed call, ms',
      '',
      cpuPerCall.toFixed(2),
      `target ≤ ${cpuTargetMs} ms: ${cpuPerCall <= cpuTargetMs ? 'met' : 'NOT met'}`,
    ],
    [
      `confidential streamed TTFT median, ms (${ttftRounds} rounds; direct = the enclave)`,
      median(confidential.direct).toFixed(2),
      median(confidential.gateway).toFixed(2),
      `+${confidentialAdded.toFixed(2)} ms (target ≤ ${ttftTargetMs} ms: ${confidentialAdded <= ttftTargetMs ? 'met' : 'NOT met'})`,
    ],
    [
      'confidential streamed TTFT p90, ms',
      percentile(confidential.direct, 90).toFixed(2),
      percentile(confidential.gateway, 90).toFixed(2),
      `+${(percentile(confidential.gateway, 90) - percentile(confidential.direct, 90)).toFixed(2)} ms`,
    ],
    ...verificationRows(verification),
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
  enclave.process.kill('SIGTERM')
  agent.destroy()
}

/** One confidential answer through the gateway, anchored; answers its receipt id. */
async function anchoredAnswer(info: { url: string; key: string }, body: string): Promise<string> {
  const answer = await fetch(`${info.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${info.key}`, 'content-type': 'application/json' },
    body,
  })
  await answer.text()
  const id = answer.headers.get('x-receipt-id')
  if (answer.status !== 200 || id === null) throw new Error(`confidential call ${answer.status}`)
  // The outbox anchors 20 rows a round, oldest first: the benchmark's earlier answers come first.
  for (let round = 0; ; round++) {
    const anchored = await fetch(`${info.url}/v1/aci/anchor/${id}`, { method: 'POST' })
    if (anchored.status === 200) return id
    if (round === 600) throw new Error(`anchor ${anchored.status}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/**
 * Two confidential answers of one attested session, anchored; their documents and ledger
 * transactions fetched once; then, over an in-memory fetch and ledger, the one-shot
 * `verifyInferenceReceipt` of the first (cold), a long-lived verifier's check of the second after it
 * verified the first (warm), and the two signature checks at their core (`verifyReport`,
 * `verifyReceipt`) alone on the first's documents, timed.
 */
async function measureVerification(
  info: { url: string; key: string },
  body: string,
): Promise<{ full: number[]; warm: number[]; core: number[] }> {
  const id = await anchoredAnswer(info, body)
  const other = await anchoredAnswer(info, body)

  // Every document the verifier reads, fetched once.
  const documents = new Map<string, string>()
  const remember = async (input: string | URL | Request, init?: RequestInit) => {
    const response = await fetch(input, init)
    documents.set(String(input), await response.text())
    return new Response(documents.get(String(input)), { status: response.status })
  }
  const health = (await (await fetch(`${info.url}/healthz`)).json()) as { ledger: { url: string } }
  const onLedger = createLedger({ url: health.ledger.url })
  const transactions = new Map<string, LookupOutcome>()
  const ledger: Pick<Ledger, 'getTransaction'> = {
    async getTransaction(digest) {
      const found = transactions.get(digest) ?? (await onLedger.getTransaction(digest))
      transactions.set(digest, found)
      return found
    },
  }
  const first = await Attestation.verifyInferenceReceipt(id, {
    inferenceUrl: info.url,
    ledger,
    fetch: remember,
    allowTestRoot: true,
  })
  if (first.status !== 'verified') throw new Error(`receipt not verified: ${first.code}`)
  const second = await Attestation.verifyInferenceReceipt(other, {
    inferenceUrl: info.url,
    ledger,
    fetch: remember,
    allowTestRoot: true,
  })
  if (second.status !== 'verified') throw new Error(`receipt not verified: ${second.code}`)
  const inMemory = async (input: string | URL | Request) => {
    const text = documents.get(String(input))
    return text === undefined ? new Response('', { status: 404 }) : new Response(text)
  }

  const stored = JSON.parse(documents.get(`${info.url}/v1/aci/receipts/${id}`) ?? '{}') as {
    receipt: unknown
    session_id: string
  }
  const session = JSON.parse(
    documents.get(`${info.url}/v1/aci/sessions/${encodeURIComponent(stored.session_id)}`) ?? '{}',
  ) as {
    nonce: string
    attested_at: string
    policy: Attestation.PublishedTrustPolicy
    report: unknown
  }
  // The baseline's quote verifier is built once (the whole check builds it from the policy each time).
  const quoteVerifier = await Attestation.publishedQuoteVerifier(session.policy)
  if (quoteVerifier === undefined || 'error' in quoteVerifier) throw new Error('no quote verifier')
  const core = async () => {
    const report = await Attestation.verifyReport(session.report, {
      nonce: session.nonce,
      quoteVerifier,
      allowedMeasurements: session.policy.allowed_measurements ?? [],
      now: Date.parse(session.attested_at),
    })
    if (report.status !== 'verified') throw new Error(report.code)
    const receipt = await Attestation.verifyReceipt(stored.receipt, {
      receiptKeys: report.receiptKeys,
      workloadId: report.workloadId,
      keysetDigest: report.keysetDigest,
    })
    if (receipt.status !== 'verified') throw new Error(receipt.code)
  }
  const full = async () => {
    const result = await Attestation.verifyInferenceReceipt(id, {
      inferenceUrl: info.url,
      ledger,
      fetch: inMemory as typeof fetch,
      allowTestRoot: true,
    })
    if (result.status !== 'verified') throw new Error(result.code)
  }
  // The long-lived verifier has verified the first receipt: the second's session is known to it.
  const verifier = Attestation.createInferenceReceiptVerifier({
    inferenceUrl: info.url,
    ledger,
    fetch: inMemory as typeof fetch,
    allowTestRoot: true,
  })
  if ((await verifier.verify(id)).status !== 'verified') throw new Error('not verified')
  const warm = async () => {
    const result = await verifier.verify(other)
    if (result.status !== 'verified') throw new Error(result.code)
    if (result.steps[2]?.reused !== true) throw new Error('the session was checked again')
  }
  for (let i = 0; i < 50; i++) {
    await core()
    await full()
    await warm()
  }
  const times = { full: [] as number[], warm: [] as number[], core: [] as number[] }
  for (let i = 0; i < verifyRounds; i++) {
    let started = performance.now()
    await core()
    times.core.push(performance.now() - started)
    started = performance.now()
    await full()
    times.full.push(performance.now() - started)
    started = performance.now()
    await warm()
    times.warm.push(performance.now() - started)
  }
  return times
}

/** The rows of part 4 (receipt verification). */
function verificationRows(verification: {
  full: number[]
  warm: number[]
  core: number[]
}): string[][] {
  const verifyMedian = median(verification.full)
  const warmMedian = median(verification.warm)
  const coreMedian = median(verification.core)
  return [
    [
      `receipt verification, cold (first receipt of a session), median, ms, no network (${verifyRounds} rounds; baseline = report + receipt signature checks)`,
      coreMedian.toFixed(2),
      verifyMedian.toFixed(2),
      `${(verifyMedian / coreMedian).toFixed(2)}× (target ≤ 5 ms: ${verifyMedian <= 5 ? 'met' : 'NOT met'})`,
    ],
    [
      'receipt verification, cold, p90, ms',
      percentile(verification.core, 90).toFixed(2),
      percentile(verification.full, 90).toFixed(2),
      '',
    ],
    [
      'receipt verification, warm (another receipt of a verified session), median, ms',
      coreMedian.toFixed(2),
      warmMedian.toFixed(2),
      `${(warmMedian / coreMedian).toFixed(2)}× (target ≤ 5 ms: ${warmMedian <= 5 ? 'met' : 'NOT met'})`,
    ],
    [
      'receipt verification, warm, p90, ms',
      percentile(verification.core, 90).toFixed(2),
      percentile(verification.warm, 90).toFixed(2),
      '',
    ],
  ]
}
