// The main job on embedded defaults. For now: a minimal seller (node:http on 127.0.0.1) with one
// priced route that answers an unpaid request with the dual-dialect 402 built by src/challenge.ts.
// It sends one unpaid request, prints what came back, and exits. (The full gateway demo replaces it.)
import { randomBytes } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { paymentRequiredResponse, type RouteTerms, resourceUrl } from '../src/challenge.js'
import { parseAmount } from '../src/money.js'
import { classifyRequest } from '../src/negotiate.js'

// A fresh HMAC secret per run (a real seller configures one, ≥ 32 bytes, and keeps it).
const secrets = [randomBytes(32).toString('base64url')]
const payTo = '0x5f1c7d4f1e9a0b3c2d8e6f7a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c'
const routes: Record<string, Omit<RouteTerms, 'resource'>> = {
  'POST /v1/chat': { price: parseAmount('$0.02'), payTo, description: 'Chat completion' },
}

const server = createServer(async (req, res) => {
  const headers = new Headers()
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === 'string') headers.set(name, value)
  }
  const request = new Request(`http://${req.headers.host ?? '127.0.0.1'}${req.url ?? '/'}`, {
    method: req.method ?? 'GET',
    headers,
  })
  const route = routes[`${request.method} ${new URL(request.url).pathname}`]
  if (route === undefined) {
    res.writeHead(404).end()
    return
  }
  if (classifyRequest(request).dialect !== 'none') {
    // Settlement arrives with the payment engine; this demo only shows the unpaid path.
    res
      .writeHead(501, { 'content-type': 'text/plain' })
      .end('payments are not settled in this demo')
    return
  }
  const response = paymentRequiredResponse(
    { ...route, resource: resourceUrl(request) },
    { secrets },
  )
  const body = await response.text()
  res.writeHead(response.status, {
    ...Object.fromEntries(response.headers),
    'content-length': Buffer.byteLength(body),
  })
  res.end(body)
})

server.listen(0, '127.0.0.1', async () => {
  const { port } = server.address() as AddressInfo
  const url = `http://127.0.0.1:${port}/v1/chat`
  console.log(`Tollgate demo seller on ${url} (payments are not real)\n`)
  console.log(`> POST ${url} (no payment)\n`)
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'hello' }] }),
  })
  console.log(`< HTTP ${response.status} ${response.statusText}`)
  for (const [name, value] of response.headers) console.log(`< ${name}: ${value}`)
  console.log('')
  console.log(JSON.stringify(await response.json(), null, 2))
  server.close()
})
