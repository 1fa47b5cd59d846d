/**
 * The one way the local stand-ins (stub upstreams, the model server, the simulated enclave) start
 * their HTTP server: on 127.0.0.1, an async handler whose failure answers 500 instead of leaving
 * the request hanging.
 *
 * @module
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * Starts `handle` on 127.0.0.1 at `port` (0: any free port) and resolves once it listens.
 *
 * @param keepAliveTimeoutMs - how long an idle kept-alive connection stays open (Node's default
 *   when omitted).
 */
export async function listenOnLoopback(
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  port = 0,
  keepAliveTimeoutMs?: number,
): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500)
      res.end()
    })
  })
  if (keepAliveTimeoutMs !== undefined) server.keepAliveTimeout = keepAliveTimeoutMs
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => resolve())
  })
  return { server, port: (server.address() as AddressInfo).port }
}
