/**
 * What `tollgate conformance` tells a seller in its first hour: progress lines while paid checks run
 * (the expiry check waits for a challenge to expire), the real CLI flags in its advice, `--body`
 * when the probe's body is refused, and the networks and assets offered when none is Sui.
 */

import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { stripVTControlCharacters } from 'node:util'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { useTestLedger, WORMHOLE_USDC_TYPE } from 'tollgate/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { registerAgent } from './fixtures/agent.js'
import { type RunningSeller, startSeller } from './fixtures/sellers.js'
import { terminalProgress } from './reporters/terminal.js'
import { type ProgressEvent, runConformance } from './run.js'

const chain = useTestLedger({ beforeAll, afterAll })
let seller: RunningSeller
let agent: string
const servers: Server[] = []

/** A server answering every request with `status`, `body`, JSON content type and `headers`. */
async function answering(
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<string> {
  const server = createServer((_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers })
    res.end(JSON.stringify(body))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  servers.push(server)
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/answer`
}

beforeAll(async () => {
  const key = chain.createTestWallet({ usdc: '0' })
  await registerAgent(chain.client, key, chain.modulesPackage)
  agent = key.toSuiAddress()
  seller = await startSeller({
    ledgerUrl: chain.url,
    wallet: agent,
    stranger: new Ed25519Keypair().toSuiAddress(),
  })
})

afterAll(async () => {
  for (const server of servers) server.close()
  await seller?.close()
})

describe('conformance messages', () => {
  it('prints progress lines while the paid checks run, the expiry wait included', async () => {
    const events: ProgressEvent[] = []
    let printed = ''
    // Colours off: picocolors colours its output wherever CI is set.
    const print = terminalProgress((text) => {
      printed += stripVTControlCharacters(text)
    })
    const report = await runConformance({
      url: seller.url,
      agent,
      ledger: chain.client,
      registryPackage: chain.modulesPackage,
      mode: 'paid',
      wallet: chain.createTestWallet({
        usdc: '40',
        extra: { coinType: WORMHOLE_USDC_TYPE, amount: 1_000_000n },
      }),
      allowPrivateNetwork: true,
      onProgress: (event) => {
        events.push(event)
        print(event)
      },
    })
    expect(report.listable).toBe(true)
    const waits = events.filter((e) => e.type === 'progress' && e.id === 'paid.expired-challenge')
    expect(waits.length).toBeGreaterThan(0)
    // The wait's line, or — on a machine slow enough that the challenge expired before the check
    // began — the line that says it expired.
    expect(printed).toMatch(
      /… {9}paid\.expired-challenge +(waiting for the challenge to expire: \d+ s left|the challenge has expired: paying it)\n/,
    )
    // Each paid check is announced when it starts, before its result line.
    const started = printed.indexOf('paid.expired-challenge ')
    const ended = printed.search(/PASS {2}\s+paid\.expired-challenge/)
    expect(started).toBeGreaterThanOrEqual(0)
    expect(ended).toBeGreaterThan(started)
  })

  it('names the CLI flag for a local seller', async () => {
    const report = await runConformance({ url: seller.url })
    const live = report.checks.find((c) => c.id === 'gate.live-402')
    expect(live?.status).toBe('error')
    expect(`${live?.message} ${live?.hint}`).toContain('--allow-private-network')
  })

  it('suggests --body when the probe is answered 400', async () => {
    const url = await answering(400, { error: 'text is required' })
    const report = await runConformance({ url, allowPrivateNetwork: true })
    const live = report.checks.find((c) => c.id === 'gate.live-402')
    expect(live?.status).toBe('fail')
    expect(live?.hint).toContain("--body '<json>'")
  })

  it('tells a seller with no Sui entry which networks and assets it offered', async () => {
    const asset = '0x036CbD53842c5426634e7929541eC2318f3dCF7e'
    const url = await answering(402, {
      x402Version: 1,
      error: 'Payment required',
      accepts: [
        {
          scheme: 'exact',
          network: 'base-sepolia',
          maxAmountRequired: '20000',
          resource: 'http://127.0.0.1/v1/answer',
          description: '',
          mimeType: 'application/json',
          payTo: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C',
          maxTimeoutSeconds: 60,
          asset,
        },
      ],
    })
    const report = await runConformance({ url, allowPrivateNetwork: true })
    const live = report.checks.find((c) => c.id === 'gate.live-402')
    expect(live?.status).toBe('fail')
    expect(live?.message).toBe(
      `402, but with no well-formed Sui challenge in either dialect; it offers base-sepolia (asset ${asset})`,
    )
  })

  it('tells a seller whose MPP challenge is for another method which method it offered', async () => {
    const url = await answering(
      402,
      {},
      {
        'www-authenticate': `Payment id="abc", realm="127.0.0.1", method="tempo", intent="charge", request="${Buffer.from('{"amount":"1000"}').toString('base64url')}"`,
      },
    )
    const report = await runConformance({ url, allowPrivateNetwork: true })
    const live = report.checks.find((c) => c.id === 'gate.live-402')
    expect(live?.status).toBe('fail')
    expect(live?.message).toBe(
      '402, but with no well-formed Sui challenge in either dialect; it offers MPP method="tempo" (charge)',
    )
  })

  it('says a 402 with a 60 KB header is too large to read, not that the host is unreachable', async () => {
    const url = await answering(402, {}, { 'x-padding': 'a'.repeat(60 * 1024) })
    const report = await runConformance({ url, allowPrivateNetwork: true })
    const live = report.checks.find((c) => c.id === 'gate.live-402')
    expect(live?.status).toBe('fail')
    expect(live?.message).toBe(
      "the answer could not be read: the response headers are over 16 KiB (Node's HTTP client reads no more)",
    )
    expect(live?.hint).toContain('16 KiB')
  })
})
