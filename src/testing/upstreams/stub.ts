/**
 * Stub upstreams: deterministic fakes of every upstream family of the default catalog (41 providers,
 * streaming chat included) on one `node:http` server on 127.0.0.1, so a gateway runs and is tested
 * with no network.
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { nodeHeaders } from '../../internal/nodeHttp.js'
import { listenOnLoopback } from '../loopback.js'
import {
  cohereStub,
  deeplStub,
  exaStub,
  googleTranslateStub,
  jinaStub,
  judge0Stub,
  lobStub,
  pushoverStub,
  serperStub,
  shortioStub,
  virustotalStub,
} from './apiStubs.js'
import {
  anthropicStub,
  braveStub,
  falStub,
  firecrawlStub,
  geminiStub,
  mediaStub,
  openaiCompatibleStub,
  openaiStub,
  resendStub,
  type StubHandler,
  type StubRequest,
  stubError,
} from './handlers.js'
import {
  assemblyaiStub,
  elevenlabsStub,
  pdfshiftStub,
  qrserverStub,
  replicateStub,
  screenshotoneStub,
  stabilityStub,
  tinifyStub,
} from './mediaStubs.js'
import {
  alphavantageStub,
  coingeckoStub,
  exchangerateStub,
  googlemapsStub,
  hunterStub,
  ipinfoStub,
  newsapiStub,
  openweatherStub,
  serpapiStub,
} from './queryStubs.js'

/** Path prefix of each provider on the stub, and the suffix its base URL adds. */
const providers = {
  openai: { prefix: '/openai/v1', handler: openaiStub },
  anthropic: { prefix: '/anthropic/v1', handler: anthropicStub },
  open: { prefix: '/open/v1', handler: openaiCompatibleStub },
  fal: { prefix: '/fal', handler: falStub },
  firecrawl: { prefix: '/firecrawl/v1', handler: firecrawlStub },
  gemini: { prefix: '/gemini/v1beta', handler: geminiStub },
  groq: { prefix: '/groq/openai/v1', handler: openaiCompatibleStub },
  perplexity: { prefix: '/perplexity', handler: openaiCompatibleStub },
  brave: { prefix: '/brave/res/v1', handler: braveStub },
  deepseek: { prefix: '/deepseek', handler: openaiCompatibleStub },
  resend: { prefix: '/resend', handler: resendStub },
  together: { prefix: '/together/v1', handler: openaiCompatibleStub },
  elevenlabs: { prefix: '/elevenlabs/v1', handler: elevenlabsStub },
  openweather: { prefix: '/openweather', handler: openweatherStub },
  googlemaps: { prefix: '/googlemaps', handler: googlemapsStub },
  judge0: { prefix: '/judge0', handler: judge0Stub },
  lob: { prefix: '/lob/v1', handler: lobStub },
  coingecko: { prefix: '/coingecko', handler: coingeckoStub },
  alphavantage: { prefix: '/alphavantage', handler: alphavantageStub },
  newsapi: { prefix: '/newsapi', handler: newsapiStub },
  deepl: { prefix: '/deepl/v2', handler: deeplStub },
  exa: { prefix: '/exa', handler: exaStub },
  jina: { prefix: '/jina', handler: jinaStub },
  serper: { prefix: '/serper', handler: serperStub },
  screenshot: { prefix: '/screenshot', handler: screenshotoneStub },
  pdfshift: { prefix: '/pdfshift/v3', handler: pdfshiftStub },
  qrcode: { prefix: '/qrcode/v1', handler: qrserverStub },
  replicate: { prefix: '/replicate/v1', handler: replicateStub },
  stability: { prefix: '/stability/v2beta', handler: stabilityStub },
  assemblyai: { prefix: '/assemblyai/v2', handler: assemblyaiStub },
  hunter: { prefix: '/hunter/v2', handler: hunterStub },
  ipinfo: { prefix: '/ipinfo', handler: ipinfoStub },
  translate: { prefix: '/translate', handler: googleTranslateStub },
  serpapi: { prefix: '/serpapi', handler: serpapiStub },
  pushover: { prefix: '/pushover/1', handler: pushoverStub },
  mistral: { prefix: '/mistral/v1', handler: openaiCompatibleStub },
  cohere: { prefix: '/cohere/v2', handler: cohereStub },
  virustotal: { prefix: '/virustotal/api/v3', handler: virustotalStub },
  exchangerate: { prefix: '/exchangerate', handler: exchangerateStub },
  shortio: { prefix: '/shortio', handler: shortioStub },
  tinify: { prefix: '/tinify', handler: tinifyStub },
} as const satisfies Record<string, { prefix: string; handler: StubHandler }>

/** A provider segment the stub serves (the default catalog's segments). */
export type StubProvider = keyof typeof providers

/** A request the stub received (no header values, no body: nothing secret is kept). */
export type StubCall = {
  provider: StubProvider | 'media'
  method: string
  path: string
  status: number
  /**
   * Whether the caller was still connected when the answer was ready: `false` when it closed the
   * connection first (it aborted the request while the provider worked).
   */
  answered: boolean
}

/** A request held by {@link StubUpstreams.holdNext}. */
export type StubHold = {
  /** Resolves when the held request has arrived (its body read: the provider "acts" now). */
  readonly arrived: Promise<void>
  /** Lets the held request be answered. */
  release(): void
}

/** Options of {@link startStubUpstreams}. */
export type StubUpstreamsOptions = {
  /** Port on 127.0.0.1. Default 0 (any free port). */
  port?: number | undefined
  /** Delay before every answer, in milliseconds. Default 0. */
  latencyMs?: number | undefined
  /** Largest request body accepted. Default 64 MiB. */
  maxBodyBytes?: number | undefined
}

/** Running stub upstreams. */
export type StubUpstreams = {
  /** `http://127.0.0.1:<port>`. */
  origin: string
  /** Base URL per provider segment, to put in place of the real upstream base URLs. */
  baseUrls: Readonly<Record<StubProvider, string>>
  /** Requests received so far, oldest first. */
  calls: readonly StubCall[]
  /** Makes the next `times` requests whose path starts with `pathPrefix` answer `status`. */
  failNext(pathPrefix: string, status: number, times?: number): void
  /** Makes the next `times` requests whose path starts with `pathPrefix` wait `ms` first. */
  delayNext(pathPrefix: string, ms: number, times?: number): void
  /**
   * Holds the next request whose path starts with `pathPrefix` until released, so that a test can
   * act while the provider works (a buyer hanging up, say). With `status`, the held request is then
   * refused with that status (a provider that fails after the buyer left).
   */
  holdNext(pathPrefix: string, status?: number): StubHold
  /**
   * Forgets every rule of {@link StubUpstreams.failNext}, `delayNext` and `holdNext` that no request
   * has used up yet: a test step whose request never reached the provider (the buyer left first,
   * say) leaves nothing behind for the next step. A held request already waiting stays held.
   */
  clearRules(): void
  /** Stops the server (open connections are closed). */
  stop(): Promise<void>
}

/**
 * A request as the stub handlers read it, straight from the Node request: headers looked up in
 * Node's parsed headers, the body parsed from the bytes already read; `formData()` (multipart
 * uploads) goes through a Web `Request`.
 */
function stubRequest(req: IncomingMessage, url: string, body: Buffer): StubRequest {
  const method = req.method ?? 'GET'
  return {
    method,
    url,
    headers: nodeHeaders(req.headers),
    json: async () => JSON.parse(body.toString('utf8')),
    formData: () => {
      const headers = new Headers()
      for (const [name, value] of Object.entries(req.headers)) {
        if (typeof value === 'string') headers.set(name, value)
        else if (Array.isArray(value)) for (const v of value) headers.append(name, v)
      }
      const bytes = method === 'GET' || method === 'HEAD' ? null : new Uint8Array(body)
      return new Request(url, { method, headers, body: bytes }).formData()
    },
  }
}

type Rule = {
  prefix: string
  times: number
  status?: number
  delayMs?: number
  hold?: { arrive(): void; released: Promise<void> }
}

/**
 * Starts the stub upstreams on 127.0.0.1.
 *
 * @example
 * ```ts
 * const stubs = await startStubUpstreams()
 * const catalog = withUpstreams(defaultCatalog(), { baseUrls: stubs.baseUrls })
 * // … later
 * await stubs.stop()
 * ```
 */
export async function startStubUpstreams(
  options: StubUpstreamsOptions = {},
): Promise<StubUpstreams> {
  const maxBodyBytes = options.maxBodyBytes ?? 64 * 1024 * 1024
  const calls: StubCall[] = []
  const rules: Rule[] = []
  let origin = ''

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0] ?? '/'
    const chunks: Buffer[] = []
    let size = 0
    for await (const chunk of req) {
      size += (chunk as Buffer).byteLength
      if (size > maxBodyBytes) {
        res.writeHead(413).end()
        return
      }
      chunks.push(chunk as Buffer)
    }
    const request = stubRequest(req, `${origin}${req.url ?? '/'}`, Buffer.concat(chunks))
    let left = false
    res.once('close', () => {
      if (!res.writableFinished) left = true
    })

    let provider: StubProvider | 'media' | undefined
    let response: Response
    const rule = rules.find((r) => path.startsWith(r.prefix) && r.times > 0)
    if (rule) rule.times--
    if (rule?.delayMs) await new Promise((r) => setTimeout(r, rule.delayMs))
    if (rule?.hold) {
      rule.hold.arrive()
      await rule.hold.released
    }
    if (options.latencyMs) await new Promise((r) => setTimeout(r, options.latencyMs))

    const match = (Object.entries(providers) as [StubProvider, (typeof providers)[StubProvider]][])
      .filter(([, p]) => path === p.prefix || path.startsWith(`${p.prefix}/`))
      .sort((a, b) => b[1].prefix.length - a[1].prefix.length)[0]
    if (rule?.status) {
      provider = match?.[0]
      response = stubError(rule.status, `stub failure ${rule.status}`, 'server_error')
    } else if (path.startsWith('/media/')) {
      provider = 'media'
      response = await mediaStub(request, path.slice('/media'.length), origin)
    } else if (match) {
      provider = match[0]
      response = await match[1].handler(request, path.slice(match[1].prefix.length), origin)
    } else {
      response = stubError(404, 'no stub upstream at this path')
    }
    if (provider) {
      calls.push({
        provider,
        method: request.method,
        path,
        status: response.status,
        answered: !left,
      })
    }

    const out: Record<string, string> = {}
    response.headers.forEach((value, name) => {
      out[name] = value
    })
    if (response.body === null) {
      res.writeHead(response.status, out).end()
    } else if (/^text\/event-stream/i.test(out['content-type'] ?? '')) {
      // Streamed answers are written as they come (the gateway's SSE pass-through is tested on them).
      res.writeHead(response.status, out)
      const reader = response.body.getReader()
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        res.write(value)
      }
      res.end()
    } else {
      const bytes = Buffer.from(await response.arrayBuffer())
      res.writeHead(response.status, { ...out, 'content-length': String(bytes.byteLength) })
      res.end(bytes)
    }
  }

  const { server, port } = await listenOnLoopback(handle, options.port)
  origin = `http://127.0.0.1:${port}`
  const baseUrls = Object.fromEntries(
    Object.entries(providers).map(([name, p]) => [name, `${origin}${p.prefix}`]),
  ) as Record<StubProvider, string>

  return {
    origin,
    baseUrls,
    calls,
    failNext(prefix, status, times = 1) {
      rules.push({ prefix, status, times })
    },
    delayNext(prefix, ms, times = 1) {
      rules.push({ prefix, delayMs: ms, times })
    },
    holdNext(prefix, status) {
      let arrive!: () => void
      let release!: () => void
      const arrived = new Promise<void>((resolve) => {
        arrive = resolve
      })
      const released = new Promise<void>((resolve) => {
        release = resolve
      })
      rules.push({ prefix, times: 1, hold: { arrive, released }, ...(status ? { status } : {}) })
      return { arrived, release }
    },
    clearRules() {
      rules.length = 0
    },
    stop() {
      return new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
    },
  }
}
