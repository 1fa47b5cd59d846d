/**
 * The gateway's HTTP server: listens before the app exists (so the public URL is known when the
 * app is built), answers 503 until {@link ListeningServer.serve} hands it the app, and counts the
 * requests not yet answered for the graceful shutdown.
 *
 * @module
 */
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createAdaptorServer } from '@hono/node-server'
import type { GatewayConfig } from '../config.js'
import { listenProblem } from '../startup.js'
import type { Cleanups } from './shutdown.js'

/** A request handler with the Node bindings of `@hono/node-server` (`env.incoming`, `env.outgoing`). */
export type GatewayHandler = (request: Request, env: unknown) => Response | Promise<Response>

/** A server listening on the configured address. */
export type ListeningServer = {
  server: Server
  /** The port it listens on (the one chosen, for port 0). */
  port: number
  /** `http://host:port` it listens on (loopback for a wildcard host). */
  url: string
  /** The public base URL bound into challenges (`publicBaseUrl`, else `url`), no trailing slash. */
  publicBaseUrl: string
  /** HTTP requests not yet answered. */
  httpInFlight(): number
  /** Serves requests with `handler` from now on. */
  serve(handler: GatewayHandler): void
}

/**
 * Listens on `config.host`:`config.port`; registers closing the server (and its connections) with
 * `cleanups`. A port in use or an address it cannot bind fails with the setting named.
 *
 * @example
 * ```ts
 * const listening = await listenGateway(config, cleanups)
 * listening.serve((request, env) => app.fetch(request, env))
 * ```
 */
export async function listenGateway(
  config: GatewayConfig,
  cleanups: Cleanups,
): Promise<ListeningServer> {
  // The Node bindings (`env.incoming`, `env.outgoing`) are passed on: the paywall reads paid
  // requests' bodies and finishes paid responses through them.
  let handler: GatewayHandler = () => new Response('starting', { status: 503 })
  const server = createAdaptorServer({
    fetch: (request: Request, env: unknown) => handler(request, env),
  }) as Server
  let httpInFlight = 0
  server.on('request', (_req, res) => {
    httpInFlight++
    res.once('close', () => httpInFlight--)
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) => reject(listenProblem(error, config) ?? error))
    // A deep accept queue: bursts of buyers are queued, not reset.
    server.listen({ port: config.port, host: config.host, backlog: 4096 }, () => {
      server.off('error', reject)
      resolve()
    })
  })
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  )
  const port = (server.address() as AddressInfo).port
  const urlHost = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host
  const url = `http://${urlHost.includes(':') ? `[${urlHost}]` : urlHost}:${port}`
  const publicBaseUrl = (config.publicBaseUrl ?? url).replace(/\/+$/, '')
  return {
    server,
    port,
    url,
    publicBaseUrl,
    httpInFlight: () => httpInFlight,
    serve: (next) => {
      handler = next
    },
  }
}
