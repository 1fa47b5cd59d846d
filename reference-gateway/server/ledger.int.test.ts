/**
 * One local ledger: the gateway's embedded ledger listens on `EMULATOR_PORT` (9123 for `tollgate
 * gateway`; each test here picks its own port). A `tollgate ledger` already running there is
 * joined — the gateway's operator is funded and its payments settle on that same ledger, so a
 * wallet funded there pays the gateway. A port held by something else moves the ledger to another
 * port, and `/healthz` says so.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { createPayingFetch } from '../../src/client/index.js'
import { createLedger } from '../../src/ledger/index.js'
import { startLedger } from '../../src/testing/index.js'
import { parseConfig } from '../config.js'
import { startGateway } from './server.js'

const folder = mkdtempSync(join(tmpdir(), 'tollgate-one-ledger-'))
afterAll(() => rmSync(folder, { recursive: true, force: true }))

const config = (name: string, emulatorPort: number) =>
  parseConfig({
    port: 0,
    dataDir: join(folder, name),
    emulatorPort,
    emulatorLatencyMs: 0,
    logLevel: 'silent',
  })

async function healthz(url: string) {
  return (await (await fetch(`${url}/healthz`)).json()) as {
    ledger: { url: string; local?: { mode: string; note: string } }
  }
}

/** A loopback port nothing listens on (bound, then closed). */
async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

describe('the gateway’s local ledger', { timeout: 120_000 }, () => {
  it('joins a local ledger already running on its port, and payments settle there', async () => {
    const chain = await startLedger({ latencyMs: 0 })
    const gateway = await startGateway({
      config: config('joined', Number(new URL(chain.url).port)),
    })
    try {
      expect(gateway.emulator).toBeUndefined()
      expect(gateway.ledger).toMatchObject({ url: chain.url, emulated: true })
      expect(gateway.ledger.local?.mode).toBe('joined')
      expect((await healthz(gateway.url)).ledger).toMatchObject({
        url: chain.url,
        local: { mode: 'joined', note: expect.stringContaining(chain.url) },
      })
      // A wallet funded on that ledger pays the gateway; the money arrives there.
      const buyer = chain.createTestWallet({ usdc: '1', sui: '1' })
      const ledger = createLedger({ url: chain.url })
      const before = (await ledger.getBalance(gateway.payTo, chain.usdcType)).total
      const pay = createPayingFetch({ signer: buyer, ledger: chain.url, limits: false })
      const answer = await pay(`${gateway.url}/openai/v1/chat/completions`, {
        method: 'POST',
        body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] }),
      })
      expect(answer.status).toBe(200)
      expect((await ledger.getBalance(gateway.payTo, chain.usdcType)).total).toBeGreaterThan(before)
    } finally {
      await gateway.stop()
      await chain.stop()
    }
  })

  it('moves to another port when something else holds it, and says so', async () => {
    const other: Server = createServer((_req, res) => res.end('not a ledger'))
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve))
    const port = (other.address() as AddressInfo).port
    const gateway = await startGateway({ config: config('moved', port) })
    try {
      expect(gateway.emulator).toBeDefined()
      expect(gateway.ledger.url).not.toBe(`http://127.0.0.1:${port}`)
      const { ledger } = await healthz(gateway.url)
      expect(ledger.local?.mode).toBe('moved')
      expect(ledger.local?.note).toContain(`127.0.0.1:${port} is taken by something else`)
      expect(ledger.local?.note).toContain(gateway.ledger.url)
    } finally {
      await gateway.stop()
      await new Promise((resolve) => other.close(resolve))
    }
  })

  it('listens on its port when it is free', async () => {
    const port = await freePort()
    const gateway = await startGateway({ config: config('started', port) })
    try {
      expect(gateway.ledger.url).toBe(`http://127.0.0.1:${port}`)
      expect((await healthz(gateway.url)).ledger.local?.mode).toBe('started')
    } finally {
      await gateway.stop()
    }
  })
})
