/**
 * The session benchmarks' measures (`bench/session/run.ts` on a library seller,
 * `bench/session/gateway.ts` on the reference gateway): calls/s at a number in flight, one call's
 * latency, the token times of a streamed answer, medians and percentiles, the interval of an added
 * median (a paired bootstrap), the load average, and the
 * seller process's answers on its stdin.
 */
import type { ChildProcess } from 'node:child_process'
import { loadavg } from 'node:os'
import { Session } from 'tollgate'

/** The 1-minute load average, two decimals. */
export const load = () => loadavg()[0]?.toFixed(2) ?? '?'

/** The value at fraction `p` (0–1) of `values` sorted (nearest rank, lower). */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? Number.NaN
}

/** The median of `values`. */
export const median = (values: readonly number[]) => percentile(values, 0.5)

/**
 * How far the median difference `median(b) − median(a)` of paired samples moves when the pairs are
 * drawn again: the 2.5th and 97.5th percentiles of that difference over `draws` resamples of the
 * pairs (a paired bootstrap; `a[i]` and `b[i]` were measured in the same round). A 95% interval
 * of the "added" figure, from the spread of the run itself. Seeded, so that the same samples give
 * the same interval.
 */
export function medianDifferenceInterval(
  a: readonly number[],
  b: readonly number[],
  draws = 2000,
): readonly [number, number] {
  const n = Math.min(a.length, b.length)
  if (n === 0) return [Number.NaN, Number.NaN]
  // mulberry32: a small seeded generator, enough to draw indices.
  let seed = 0x2545f491
  const random = () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const differences: number[] = []
  const drawnA = new Float64Array(n)
  const drawnB = new Float64Array(n)
  // The median as `median` takes it (nearest rank, lower), of a typed array sorted in place.
  const middle = Math.min(n - 1, Math.floor(n * 0.5))
  for (let d = 0; d < draws; d++) {
    for (let i = 0; i < n; i++) {
      const j = Math.floor(random() * n)
      drawnA[i] = a[j] as number
      drawnB[i] = b[j] as number
    }
    differences.push((drawnB.sort()[middle] as number) - (drawnA.sort()[middle] as number))
  }
  return [percentile(differences, 0.025), percentile(differences, 0.975)]
}

/** A difference and its interval, for a table cell: `+1.23 (+0.98…+1.50)`. */
export function added(value: number, interval: readonly [number, number]): string {
  const signed = (x: number) => `${x >= 0 ? '+' : '−'}${Math.abs(x).toFixed(2)}`
  return `${signed(value)} (${signed(interval[0])}…${signed(interval[1])})`
}

/** Runs `count` calls of `call`, `inFlight` at a time; calls/s. Every answer must be 200. */
export async function rate(
  count: number,
  call: () => Promise<Response>,
  inFlight: number,
): Promise<number> {
  let next = 0
  const started = performance.now()
  const worker = async () => {
    while (next < count) {
      next++
      const response = await call()
      await response.arrayBuffer()
      if (response.status !== 200) throw new Error(`answered ${response.status}`)
    }
  }
  await Promise.all(Array.from({ length: Math.min(inFlight, count) }, worker))
  return count / ((performance.now() - started) / 1000)
}

/** One call's time to its whole answer, ms. The answer must be 200. */
export async function timed(call: () => Promise<Response>): Promise<number> {
  const started = performance.now()
  const response = await call()
  await response.arrayBuffer()
  if (response.status !== 200) throw new Error(`answered ${response.status}`)
  return performance.now() - started
}

/**
 * A streamed chat answer's token times: from the call to the first chunk that carries text (ms),
 * and the gaps between consecutive text chunks as they were read (ms; events read together are 0
 * apart). The answer must be 200 and carry `tokens` text chunks.
 */
export async function tokenTimes(
  call: () => Promise<Response>,
  tokens: number,
): Promise<{ firstMs: number; gaps: number[] }> {
  const started = performance.now()
  const response = await call()
  if (response.status !== 200 || response.body === null) {
    throw new Error(`answered ${response.status}`)
  }
  const times: number[] = []
  for await (const event of Session.sseEvents(response.body)) {
    const at = performance.now()
    const { name, data } = Session.sseFields(event)
    if (name !== 'message' || data === undefined || data === '[DONE]') continue
    const content = (JSON.parse(data) as { choices?: { delta?: { content?: unknown } }[] })
      .choices?.[0]?.delta?.content
    if (typeof content === 'string' && content !== '') times.push(at)
  }
  if (times.length !== tokens) throw new Error(`streamed ${times.length} tokens, not ${tokens}`)
  return {
    firstMs: (times[0] as number) - started,
    gaps: times.slice(1).map((at, i) => at - (times[i] as number)),
  }
}

/**
 * A streamed chat answer's time to its first chunk that carries text (ms), read that far and then
 * left (the rest is cancelled): a cheap sample of the time to the first token. The answer must be
 * 200 and carry a token.
 */
export async function firstTokenMs(call: () => Promise<Response>): Promise<number> {
  const started = performance.now()
  const response = await call()
  if (response.status !== 200 || response.body === null) {
    throw new Error(`answered ${response.status}`)
  }
  const events = Session.sseEvents(response.body)
  try {
    for await (const event of events) {
      const at = performance.now()
      const { name, data } = Session.sseFields(event)
      if (name !== 'message' || data === undefined || data === '[DONE]') continue
      const content = (JSON.parse(data) as { choices?: { delta?: { content?: unknown } }[] })
        .choices?.[0]?.delta?.content
      if (typeof content === 'string' && content !== '') return at - started
    }
  } finally {
    await events.return(undefined)
  }
  throw new Error('streamed no token')
}

/**
 * Asks a seller process started by `startScript` one question on its stdin (a line) and parses the
 * JSON line it answers on its stdout.
 */
export async function ask<T>(seller: ChildProcess, question: string): Promise<T> {
  const { stdin, stdout } = seller
  if (stdin === null || stdout === null) throw new Error('no pipe to the seller')
  const line = new Promise<string>((resolve) =>
    stdout.once('data', (chunk: Buffer) => resolve(chunk.toString())),
  )
  stdin.write(`${question}\n`)
  return JSON.parse(await line) as T
}

/** The settings both session benchmarks read from their environment (defaults in their docs). */
export const settings = {
  calls: Number(process.env.BENCH_CALLS ?? 2000),
  concurrency: Number(process.env.BENCH_CONCURRENCY ?? 32),
  chargeCalls: Number(process.env.BENCH_CHARGE_CALLS ?? 16),
  chargeConcurrency: Number(process.env.BENCH_CHARGE_CONCURRENCY ?? 1),
  rounds: Number(process.env.BENCH_ROUNDS ?? 300),
  latencyMs: process.env.LEDGER_LATENCY_MS ?? '400',
  stores: (
    process.env.BENCH_STORES ?? (process.env.DATABASE_URL ? 'sqlite,postgres' : 'sqlite')
  ).split(','),
}

/** A call of a benchmark: one request, its answer. */
export type Call = () => Promise<Response>

/** What {@link compareCalls} measured on a route, unpaid, over a session and by `charge`. */
export type CallComparison = {
  unpaidRate: number
  sessionRate: number
  chargeRate: number
  /** Medians of the sequential rounds, ms. */
  unpaidMs: number
  sessionMs: number
  /** The 95% interval of `sessionMs − unpaidMs` ({@link medianDifferenceInterval}). */
  addedInterval: readonly [number, number]
  /** Ledger transactions during the session's and the charges' calls/s runs. */
  sessionTx: number
  chargeTx: number
  /** Requests the session buyer sent per session call. */
  requestsPerCall: number
  /** The reference call's calls/s and median ms, when one was given. */
  reference?: { rate: number; ms: number } | undefined
  /** The seller process's CPU per call in the calls/s runs, ms, when its CPU could be read. */
  cpu?: { unpaid: number; session: number } | undefined
  /** This process's (the buyers') CPU per call in the same runs, ms. */
  buyerCpu: { unpaid: number; session: number }
}

/**
 * The calls part of a session benchmark, after its warm-up: calls/s unpaid (and of `reference`, a
 * call measured for comparison only, when given), over the session and by `charge` (counting the
 * ledger's transactions around the last two), then the sequential rounds, unpaid, over the session
 * (and `reference`) in turn. `sent` reads the session buyer's requests so far.
 */
export async function compareCalls(input: {
  unpaid: Call
  session: Call
  charge: Call
  reference?: Call | undefined
  transactions: () => Promise<number>
  sent: () => number
  /** The seller process's CPU time so far (user and system), µs. */
  cpu?: (() => Promise<number>) | undefined
}): Promise<CallComparison> {
  const { unpaid, session, charge, reference, transactions, cpu } = input
  /**
   * `run` with the seller's CPU per call during it (NaN without `cpu`) and this process's, ms.
   */
  const cpuPerCall = async <T>(run: () => Promise<T>): Promise<[T, number, number]> => {
    const before = await cpu?.()
    const buyerBefore = process.cpuUsage()
    const result = await run()
    const buyer = process.cpuUsage(buyerBefore)
    const after = await cpu?.()
    return [
      result,
      before === undefined || after === undefined
        ? Number.NaN
        : (after - before) / 1000 / settings.calls,
      (buyer.user + buyer.system) / 1000 / settings.calls,
    ]
  }
  const [unpaidRate, unpaidCpu, unpaidBuyerCpu] = await cpuPerCall(() =>
    rate(settings.calls, unpaid, settings.concurrency),
  )
  const referenceRate =
    reference === undefined
      ? Number.NaN
      : await rate(settings.calls, reference, settings.concurrency)
  const txBefore = await transactions()
  const sentBefore = input.sent()
  const [sessionRate, sessionCpu, sessionBuyerCpu] = await cpuPerCall(() =>
    rate(settings.calls, session, settings.concurrency),
  )
  const requestsPerCall = (input.sent() - sentBefore) / settings.calls
  const sessionTx = (await transactions()) - txBefore
  const chargeBefore = await transactions()
  const chargeRate = await rate(settings.chargeCalls, charge, settings.chargeConcurrency)
  const chargeTx = (await transactions()) - chargeBefore
  const unpaidMs: number[] = []
  const sessionMs: number[] = []
  const referenceMs: number[] = []
  for (let i = 0; i < settings.rounds; i++) {
    unpaidMs.push(await timed(unpaid))
    sessionMs.push(await timed(session))
    if (reference !== undefined) referenceMs.push(await timed(reference))
  }
  return {
    unpaidRate,
    sessionRate,
    chargeRate,
    unpaidMs: median(unpaidMs),
    sessionMs: median(sessionMs),
    addedInterval: medianDifferenceInterval(unpaidMs, sessionMs),
    sessionTx,
    chargeTx,
    requestsPerCall,
    ...(reference === undefined
      ? {}
      : { reference: { rate: referenceRate, ms: median(referenceMs) } }),
    ...(cpu === undefined ? {} : { cpu: { unpaid: unpaidCpu, session: sessionCpu } }),
    buyerCpu: { unpaid: unpaidBuyerCpu, session: sessionBuyerCpu },
  }
}

/**
 * Prints the table of the runs of {@link compareCalls}: the settings and `options.note`, then a
 * markdown table whose rows begin with the cells named by `lead` and end with the load average;
 * `options.reference` names the reference call's column (calls/s and median ms), for rows whose
 * comparison has one.
 */
export function printCalls(
  lead: readonly string[],
  rows: readonly string[],
  options: { note?: string; reference?: string; cpu?: boolean } = {},
): void {
  const { note = '', reference, cpu = false } = options
  console.log(
    `\nLedger latency ${settings.latencyMs} ms, ${settings.calls} calls at ${settings.concurrency} in flight (charge: ${settings.chargeCalls} at ${settings.chargeConcurrency}), ${settings.rounds} sequential rounds.${note}\n`,
  )
  const extra = `${reference === undefined ? '' : ` ${reference}: calls/s, median ms |`}${cpu ? ' seller CPU ms per call, unpaid / session |' : ''} buyer CPU ms per call, unpaid / session |`
  console.log(
    `| ${lead.join(' | ')} | unpaid calls/s | session calls/s (vs unpaid) | charge calls/s | median ms unpaid / session (added, 95% interval) | ledger tx per 1 000 calls: session / charge | requests per session call |${extra} load average |`,
  )
  console.log(
    `|${lead.map(() => '---|').join('')}---:|---:|---:|---:|---:|---:|${reference === undefined ? '' : '---:|'}${cpu ? '---:|' : ''}---:|---|`,
  )
  for (const row of rows) console.log(row)
}

/**
 * A comparison's table cells (the reference's and the seller's CPU when it has them, then the
 * buyers' CPU); the
 * session's transactions per 1 000 calls count `openAndClose` (the channel's open and close, once)
 * with those of its calls.
 */
export function callCells(c: CallComparison, openAndClose: number): string {
  const perThousand = ((c.sessionTx + openAndClose) / settings.calls) * 1000
  return `| ${c.unpaidRate.toFixed(0)} | ${c.sessionRate.toFixed(0)} (${(c.sessionRate / c.unpaidRate).toFixed(2)}×) | ${c.chargeRate.toFixed(1)} (session ${(c.sessionRate / c.chargeRate).toFixed(0)}×) | ${c.unpaidMs.toFixed(2)} / ${c.sessionMs.toFixed(2)} (${added(c.sessionMs - c.unpaidMs, c.addedInterval)}) | ${perThousand.toFixed(1)} / ${((c.chargeTx / settings.chargeCalls) * 1000).toFixed(0)} | ${c.requestsPerCall.toFixed(2)} |${c.reference === undefined ? '' : ` ${c.reference.rate.toFixed(0)}, ${c.reference.ms.toFixed(2)} |`}${c.cpu === undefined ? '' : ` ${c.cpu.unpaid.toFixed(2)} / ${c.cpu.session.toFixed(2)} |`} ${c.buyerCpu.unpaid.toFixed(2)} / ${c.buyerCpu.session.toFixed(2)} |`
}

/**
 * Closes the buyer's open channel (if any); the ledger's transactions the close took. A close
 * refused (a close sent right after the last call can find it still held: `settlement_pending`,
 * src/client/sessionCloseRace.int.test.ts) is said on stderr and sent again once, a second later.
 */
export async function closeSession(
  sessions: {
    list(): Promise<readonly { state: string; channelId: string }[]>
    close(channelId: string): Promise<unknown>
  },
  transactions: () => Promise<number>,
): Promise<number> {
  const [channel] = (await sessions.list()).filter((c) => c.state === 'open')
  const before = await transactions()
  if (channel !== undefined) {
    await sessions.close(channel.channelId).catch(async (error: unknown) => {
      console.error(`The close was refused (${error}); sent again in a second.`)
      await new Promise((resolve) => setTimeout(resolve, 1000))
      await sessions.close(channel.channelId)
    })
  }
  return (await transactions()) - before
}
