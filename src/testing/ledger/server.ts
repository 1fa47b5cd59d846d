/**
 * The gRPC-web server of the local ledger on node:http (loopback, HTTP/1.1), with the faucet and
 * clock endpoints, settlement latency and fault injection.
 *
 * @module
 */

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { z } from 'zod'
import { channelRegistryId } from './channel.js'
import {
  contentTypeOf,
  decodeRequest,
  encodeResponse,
  encodeStatusMessage,
  formatOf,
} from './codec.js'
import type { LedgerEngine } from './engine.js'
import { escrowConfigId } from './escrowAdmin.js'
import { FaucetRequestSchema, runFaucet } from './faucet.js'
import { executedTransactionProto, fieldsOf } from './proto.js'
import { createHandlers, GrpcError, methodTypes } from './services.js'
import { GrpcCode } from './validate.js'

/** The body of `POST /clock`: how far to move the ledger's clock forward (up to 10 years). */
const ClockRequestSchema = z.strictObject({
  advanceMs: z
    .number()
    .int()
    .min(0)
    .max(10 * 365 * 86_400_000),
})

/** Faults to inject; change them at any time through `faults`. */
export type Faults = {
  /** Answer every call UNAVAILABLE (the node is down). */
  unavailable?: boolean
  /** The next N executions fail with UNAVAILABLE and execute nothing. */
  failNextExecutions?: number
  /** The next N executions commit, then the connection drops before the answer. */
  loseNextResponses?: number
  /** Extra delay added to every answer, in ms. */
  slowMs?: number
}

/** Options of the server. */
export type ServerOptions = {
  engine: LedgerEngine
  /** Port on 127.0.0.1; 0 picks a free one. */
  port?: number
  /** Delay before each execution commits, in ms (0 in tests, ~400 in demos). */
  latencyMs?: number
  faults?: Faults
  /** Largest request body accepted, in bytes. Default 1 MiB. */
  maxBodyBytes?: number
}

/** A running server. */
export type LedgerServer = { url: string; faults: Faults; server: Server; close(): Promise<void> }

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const CORS = {
  'access-control-allow-origin': '*',
  'access-control-allow-headers': '*',
  'access-control-expose-headers': 'grpc-status, grpc-message',
}

class LostResponse extends Error {}

function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > limit) {
        reject(new GrpcError(GrpcCode.invalidArgument, 'request too large'))
        req.destroy()
      } else chunks.push(chunk)
    })
    req.on('end', () => resolve(Buffer.concat(chunks)))
    req.on('error', reject)
  })
}

/** Starts the server; resolves once it listens. */
export async function startServer(options: ServerOptions): Promise<LedgerServer> {
  const { engine } = options
  const faults: Faults = options.faults ?? {}
  const limit = options.maxBodyBytes ?? 1024 * 1024
  const types = methodTypes()
  const handlers = createHandlers({
    engine,
    execute: async (txBytes, signatures, mask) => {
      if ((faults.failNextExecutions ?? 0) > 0) {
        faults.failNextExecutions = (faults.failNextExecutions ?? 0) - 1
        throw new GrpcError(
          GrpcCode.unavailable,
          'injected fault: node unavailable, nothing executed',
        )
      }
      if (options.latencyMs) await sleep(options.latencyMs)
      const result = await engine.submit(txBytes, signatures)
      if (result.status === 'rejected') throw new GrpcError(result.code, result.message)
      if ((faults.loseNextResponses ?? 0) > 0) {
        faults.loseNextResponses = (faults.loseNextResponses ?? 0) - 1
        throw new LostResponse()
      }
      return { transaction: executedTransactionProto(result.record, fieldsOf(mask)) }
    },
  })

  const grpc = async (req: IncomingMessage, res: ServerResponse, name: string) => {
    const format = formatOf(req.headers['content-type']) ?? 'text'
    const answerError = (code: number, message: string) => {
      res.writeHead(200, {
        ...CORS,
        'content-type': contentTypeOf(format),
        'grpc-status': String(code),
        'grpc-message': encodeStatusMessage(message),
        'content-length': '0',
      })
      res.end()
    }
    try {
      const body = await readBody(req, limit)
      if (faults.slowMs) await sleep(faults.slowMs)
      if (faults.unavailable)
        return answerError(GrpcCode.unavailable, 'injected fault: node unavailable')
      const method = types.get(name)
      const handler = handlers.get(name)
      if (!method || !handler)
        return answerError(
          GrpcCode.unimplemented,
          `method ${name} is not implemented by the local ledger`,
        )
      const message = decodeRequest(body, format)
      if (!message) return answerError(GrpcCode.invalidArgument, 'malformed grpc-web request body')
      let input: object
      try {
        input = method.I.fromBinary(message)
      } catch {
        return answerError(GrpcCode.invalidArgument, 'request message does not decode')
      }
      const output = await handler(input as never)
      // A known length lets Node send headers and body in one write (no chunked framing).
      const response = encodeResponse(method.O.toBinary(output as never), format)
      res.writeHead(200, {
        ...CORS,
        'content-type': contentTypeOf(format),
        'content-length': String(response.length),
      })
      res.end(response)
    } catch (error) {
      if (error instanceof LostResponse) {
        res.socket?.destroy()
        return
      }
      if (error instanceof GrpcError) return answerError(error.code, error.message)
      return answerError(GrpcCode.internal, 'internal error in the local ledger')
    }
  }

  const faucet = async (req: IncomingMessage, res: ServerResponse) => {
    const json = (status: number, value: unknown) => {
      const body = Buffer.from(JSON.stringify(value))
      res.writeHead(status, {
        ...CORS,
        'content-type': 'application/json',
        'content-length': String(body.length),
      })
      res.end(body)
    }
    try {
      const body = await readBody(req, 4096)
      const parsed = FaucetRequestSchema.safeParse(JSON.parse(body.toString('utf8') || '{}'))
      if (!parsed.success)
        return json(400, {
          error: 'invalid faucet request',
          issues: parsed.error.issues.map((i) => i.message),
        })
      return json(200, runFaucet(engine, parsed.data))
    } catch (error) {
      return json(400, { error: error instanceof Error ? error.message : 'invalid faucet request' })
    }
  }

  const clock = async (req: IncomingMessage, res: ServerResponse) => {
    const json = (status: number, value: unknown) => {
      const body = Buffer.from(JSON.stringify(value))
      res.writeHead(status, {
        'content-type': 'application/json',
        'content-length': String(body.length),
      })
      res.end(body)
    }
    try {
      const body = await readBody(req, 1024)
      const parsed = ClockRequestSchema.safeParse(JSON.parse(body.toString('utf8') || '{}'))
      if (!parsed.success) return json(400, { error: 'invalid clock request' })
      return json(200, { nowMs: engine.advanceClock(parsed.data.advanceMs) })
    } catch {
      return json(400, { error: 'invalid clock request' })
    }
  }

  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/'
    if (req.method === 'OPTIONS') {
      res.writeHead(204, { ...CORS, 'access-control-allow-methods': 'POST, GET, OPTIONS' })
      return res.end()
    }
    if (req.method === 'POST' && path === '/faucet') return void faucet(req, res)
    if (req.method === 'POST' && path === '/clock') return void clock(req, res)
    if (req.method === 'POST' && path.startsWith('/sui.')) return void grpc(req, res, path.slice(1))
    if (req.method === 'GET' && (path === '/' || path === '/health')) {
      res.writeHead(200, { 'content-type': 'application/json' })
      return res.end(
        JSON.stringify({
          ok: true,
          chainId: engine.state.chainId,
          notice: 'LOCAL LEDGER: payments are not real',
          // What a buyer on this ledger pins (it records them with the URL): the coin treated as
          // USDC, the project's package, its escrow config and its session channel registry.
          usdcType: engine.state.usdcType,
          modulesPackage: engine.modulesPackage,
          escrowConfig: escrowConfigId(engine.modulesPackage),
          channelRegistry: channelRegistryId(engine.modulesPackage),
        }),
      )
    }
    res.writeHead(404, { 'content-type': 'text/plain' })
    res.end('not found')
  })
  server.keepAliveTimeout = 5_000
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve())
  })
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    faults,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
