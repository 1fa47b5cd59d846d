/**
 * `npx tsx bench/transport.ts`: the Node transport (`src/internal/nodeFetch.ts`, behind
 * `tollgate/node`'s `nodeFetch`: undici's `request()` with a keep-alive `Agent`, wrapped as a
 * `fetch`) against undici's `request()` used directly, in the same run, against the same loopback
 * server in its own process:
 *
 * - `ledger`: a small JSON POST answered with a small JSON body (the shape of a ledger call: the
 *   answer is read whole);
 * - `stream`: a GET answered with a streamed `application/octet-stream` body (`BENCH_CHUNKS` chunks
 *   of `BENCH_CHUNK_BYTES`, default 16 × 4 KiB), read to its end.
 *
 * Two more rows: undici's `request()` wrapped as a `fetch` in a few lines (the least a `fetch` over
 * `request()` can cost: what nodeFetch's own handling adds shows against it), and global `fetch`
 * (undici's, bundled with Node), the reference point the transport was written to beat. Each client keeps `BENCH_CONCURRENCY` calls in flight (default 32) for
 * `BENCH_SECONDS` (default 2) per round, after one warm-up round; the clients take turns within each
 * of `BENCH_ROUNDS` rounds (default 5), so that what else the machine does falls on all of them.
 * A cell is the median of the rounds: requests/s and the client's CPU per request (this process,
 * user + system), which moves less than requests/s on a shared machine. `UNDICI=<path>` measures
 * another copy of undici (e.g. a newer major installed elsewhere) instead of the project's.
 */
import { type ChildProcess, fork } from 'node:child_process'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { loadavg } from 'node:os'
import { Readable } from 'node:stream'
import { pathToFileURL } from 'node:url'
import { nodeFetch } from '../src/internal/nodeFetch.js'

const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 32)
const seconds = Number(process.env.BENCH_SECONDS ?? 2)
const rounds = Number(process.env.BENCH_ROUNDS ?? 5)
const chunks = Number(process.env.BENCH_CHUNKS ?? 16)
const chunkBytes = Number(process.env.BENCH_CHUNK_BYTES ?? 4096)

/** The loopback server: run as a child process of the benchmark (`TRANSPORT_SERVER=1`). */
function serve(): void {
  const answer = JSON.stringify({
    digest: '4btiuiMPvEENsttpZC7CZ53DruC3MAgfznDbASZ7DR6S',
    effects: { status: 'success', gasUsed: { computationCost: '1000000', storageCost: '988000' } },
    balanceChanges: [
      { owner: `0x${'11'.repeat(32)}`, coinType: '0x2::sui::SUI', amount: '-1988000' },
      { owner: `0x${'22'.repeat(32)}`, coinType: '0xdba3::usdc::USDC', amount: '10000' },
    ],
  })
  const chunk = Buffer.alloc(chunkBytes, 0x61)
  const server = createServer((req, res) => {
    if (req.url === '/stream') {
      res.writeHead(200, { 'content-type': 'application/octet-stream' })
      let sent = 0
      const more = () => {
        while (sent < chunks) {
          sent++
          if (!res.write(chunk)) return void res.once('drain', more)
        }
        res.end()
      }
      more()
      return
    }
    req.resume()
    req.once('end', () => {
      res.writeHead(200, {
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(answer)),
      })
      res.end(answer)
    })
  })
  server.keepAliveTimeout = 60_000
  server.listen(0, '127.0.0.1', () => {
    process.send?.({ port: (server.address() as AddressInfo).port })
  })
}

type Call = (base: string) => Promise<number>
type Client = { name: string; ledger: Call; stream: Call }

const ledgerBody = JSON.stringify({
  method: 'getTransaction',
  digest: '4btiuiMPvEENsttpZC7CZ53DruC3MAgfznDbASZ7DR6S',
  options: { showEffects: true, showBalanceChanges: true },
})
const ledgerHeaders = { 'content-type': 'application/json', accept: 'application/json' }

function fetchClient(name: string, fetchFn: typeof fetch): Client {
  return {
    name,
    ledger: async (base) => {
      const response = await fetchFn(`${base}/ledger`, {
        method: 'POST',
        headers: ledgerHeaders,
        body: ledgerBody,
      })
      return (await response.arrayBuffer()).byteLength
    },
    stream: async (base) => {
      const response = await fetchFn(`${base}/stream`)
      const reader = (response.body as ReadableStream<Uint8Array>).getReader()
      let size = 0
      for (;;) {
        const { done, value } = await reader.read()
        if (done) return size
        size += value.byteLength
      }
    },
  }
}

async function undiciClient(): Promise<{
  client: Client
  wrapped: Client
  version: string
  close(): Promise<void>
}> {
  const where = process.env.UNDICI
  const undici = (await import(
    where === undefined ? 'undici' : pathToFileURL(where).href
  )) as typeof import('undici')
  const { createRequire } = await import('node:module')
  const require = createRequire(where === undefined ? import.meta.url : pathToFileURL(where).href)
  const version = (
    require(where === undefined ? 'undici/package.json' : `${where}/package.json`) as {
      version: string
    }
  ).version
  const agent = new undici.Agent({ keepAliveTimeout: 30_000 })
  const client: Client = {
    name: `undici ${version} request()`,
    ledger: async (base) => {
      const { body } = await undici.request(`${base}/ledger`, {
        method: 'POST',
        headers: ledgerHeaders,
        body: ledgerBody,
        dispatcher: agent,
      })
      return (await body.arrayBuffer()).byteLength
    },
    stream: async (base) => {
      const { body } = await undici.request(`${base}/stream`, { dispatcher: agent })
      let size = 0
      for await (const part of body) size += (part as Buffer).byteLength
      return size
    },
  }
  // The least a fetch over request() costs: the same Response wrapping nodeFetch does (answers of
  // these types read whole), without its Request handling, caps and re-send.
  const asFetch: typeof fetch = async (input, init = {}) => {
    const answer = await undici.request(String(input), {
      method: (init.method ?? 'GET') as 'GET',
      headers: (init.headers ?? null) as Record<string, string> | null,
      body: (init.body ?? null) as string | null,
      dispatcher: agent,
    })
    const headers = new Headers()
    for (const [name, value] of Object.entries(answer.headers)) {
      if (Array.isArray(value)) for (const one of value) headers.append(name, one)
      else if (value !== undefined) headers.append(name, value)
    }
    const init2 = { status: answer.statusCode, headers }
    if (!/json|grpc|^text\/(?!event-stream)/i.test(headers.get('content-type') ?? 'text/plain')) {
      return new Response(Readable.toWeb(answer.body) as ReadableStream<Uint8Array>, init2)
    }
    return new Response(new Uint8Array(await answer.body.arrayBuffer()), init2)
  }
  return {
    client,
    wrapped: fetchClient(`undici ${version} request() as fetch`, asFetch),
    version,
    close: () => agent.close(),
  }
}

type Sample = { perSecond: number; cpuUsPerCall: number }

/** Keeps `concurrency` calls in flight for `ms`; requests/s and CPU µs per call. */
async function drive(call: Call, base: string, ms: number, expectBytes: number): Promise<Sample> {
  let done = 0
  const cpu = process.cpuUsage()
  const started = performance.now()
  const until = started + ms
  const worker = async () => {
    while (performance.now() < until) {
      const bytes = await call(base)
      if (bytes !== expectBytes) throw new Error(`read ${bytes} bytes, expected ${expectBytes}`)
      done++
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  const elapsed = performance.now() - started
  const used = process.cpuUsage(cpu)
  return { perSecond: (done * 1000) / elapsed, cpuUsPerCall: (used.user + used.system) / done }
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

async function main(): Promise<void> {
  const server: ChildProcess = fork(new URL(import.meta.url).pathname, [], {
    env: { ...process.env, TRANSPORT_SERVER: '1' },
    execArgv: ['--import', 'tsx'],
  })
  const port = await new Promise<number>((resolve, reject) => {
    server.once('message', (m) => resolve((m as { port: number }).port))
    server.once('exit', (code) => reject(new Error(`the server exited with ${code}`)))
  })
  const base = `http://127.0.0.1:${port}`
  const undici = await undiciClient()
  const clients: Client[] = [
    fetchClient('nodeFetch (undici request())', nodeFetch),
    undici.client,
    undici.wrapped,
    fetchClient('global fetch', globalThis.fetch),
  ]
  const ledgerBytes = await clients[0]!.ledger(base)
  const streamBytes = chunks * chunkBytes
  const kinds = ['ledger', 'stream'] as const
  const samples = new Map<string, Sample[]>()
  try {
    for (const kind of kinds) {
      for (const client of clients) {
        await drive(
          client[kind],
          base,
          seconds * 1000,
          kind === 'ledger' ? ledgerBytes : streamBytes,
        )
      }
    }
    for (let round = 0; round < rounds; round++) {
      for (const kind of kinds) {
        // Each round starts with a different client, so no client always runs first.
        const order = clients.map((_, i) => clients[(i + round) % clients.length]!)
        for (const client of order) {
          const expect = kind === 'ledger' ? ledgerBytes : streamBytes
          const sample = await drive(client[kind], base, seconds * 1000, expect)
          const key = `${kind}\t${client.name}`
          samples.set(key, [...(samples.get(key) ?? []), sample])
        }
      }
    }
  } finally {
    await undici.close()
    server.kill('SIGTERM')
  }

  const at = (kind: string, name: string) => {
    const all = samples.get(`${kind}\t${name}`) ?? []
    return {
      perSecond: median(all.map((s) => s.perSecond)),
      cpuUsPerCall: median(all.map((s) => s.cpuUsPerCall)),
    }
  }
  const baseline = clients[0]!.name
  console.log(
    `node ${process.version}, ${concurrency} in flight, ${rounds} rounds of ${seconds} s, ` +
      `load average ${loadavg()[0]!.toFixed(2)}; stream = ${chunks} × ${chunkBytes} bytes`,
  )
  console.log('')
  console.log('| call | client | requests/s | ÷ nodeFetch | client CPU µs/request | ÷ nodeFetch |')
  console.log('|---|---|---:|---:|---:|---:|')
  for (const kind of kinds) {
    const own = at(kind, baseline)
    for (const client of clients) {
      const cell = at(kind, client.name)
      console.log(
        `| ${kind} | ${client.name} | ${cell.perSecond.toFixed(0)} | ${(cell.perSecond / own.perSecond).toFixed(2)} | ${cell.cpuUsPerCall.toFixed(0)} | ${(cell.cpuUsPerCall / own.cpuUsPerCall).toFixed(2)} |`,
      )
    }
  }
}

if (process.env.TRANSPORT_SERVER === '1') serve()
else await main()
