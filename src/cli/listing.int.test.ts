/**
 * `tollgate listing` end to end (the real CLI in subprocesses) against the reference gateway on its
 * embedded ledger: an agent registered with `tollgate agent register` submits a local seller
 * (`tollgate listing submit`, signed with TOLLGATE_AGENT_KEY) and it is listed, with its input
 * schema in discovery; `status` shows it with its probe; a seller without a 402 is refused with
 * the gate named (exit 1); `delist` withdraws it from `/v1/services`.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { serve } from '@hono/node-server'
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Hono } from 'hono'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { paywall, type TollgateEnv } from '../../adapters/hono.js'
import { parseConfig } from '../../reference-gateway/config.js'
import { type RunningGateway, startGateway } from '../../reference-gateway/server/server.js'
import { createMemoryStore } from '../stores/memory.js'
import type { StartedLedger } from '../testing/index.js'

const run = promisify(execFile)
const folder = mkdtempSync(join(tmpdir(), 'tollgate-listing-'))
let gateway: RunningGateway
let emulator: StartedLedger
let agent: Ed25519Keypair
let seller: { url: string; close(): Promise<void> }
let broken: { url: string; close(): Promise<void> }

async function tollgate(...args: string[]) {
  const env = {
    ...process.env,
    NO_COLOR: '1',
    FORCE_COLOR: '0',
    TOLLGATE_AGENT_KEY: agent.getSecretKey(),
    TOLLGATE_GATEWAY: gateway.url,
  }
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      ['--import', 'tsx', 'src/cli.ts', ...args],
      { env, timeout: 120_000 },
    )
    return { code: 0, stdout, stderr }
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string }
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' }
  }
}

async function listen(fetch: (request: Request) => Response | Promise<Response>) {
  const http = serve({ port: 0, hostname: '127.0.0.1', fetch })
  await new Promise((resolve) => http.once('listening', resolve))
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/v1/answer`,
    close: () => new Promise<void>((resolve) => http.close(() => resolve())),
  }
}

beforeAll(async () => {
  gateway = await startGateway({
    config: parseConfig({
      port: 0,
      dataDir: join(folder, 'gateway'),
      emulatorLatencyMs: 0,
      logLevel: 'silent',
      // The seller listens on 127.0.0.1; private addresses are off unless set.
      listingAllowPrivateNetwork: true,
    }),
  })
  emulator = gateway.emulator as StartedLedger
  agent = emulator.createTestWallet({ usdc: '0', sui: '1' })
  const paid = paywall({
    routes: { 'POST /v1/answer': { price: '0.02', maxTimeoutSeconds: 2 } },
    payTo: agent.toSuiAddress(),
    ledger: emulator.url,
    store: createMemoryStore(),
    secrets: 'listing-cli-seller-secret-of-32-bytes-or-more',
  })
  const app = new Hono<TollgateEnv>()
  app.use(paid)
  app.post('/v1/answer', (c) => c.json({ answer: 42 }))
  const running = await listen((request) => app.fetch(request))
  seller = {
    url: running.url,
    async close() {
      await paid.close()
      await running.close()
    },
  }
  // Answers without asking to be paid: gate b fails.
  broken = await listen(() => Response.json({ answer: 42 }))
}, 120_000)

afterAll(async () => {
  await seller?.close()
  await broken?.close()
  await gateway?.stop()
  rmSync(folder, { recursive: true, force: true })
})

describe('tollgate listing', { timeout: 240_000 }, () => {
  it('lists a local seller end to end, shows it, refuses a broken one, and delists', async () => {
    const address = agent.toSuiAddress()
    const registered = await tollgate(
      'agent',
      'register',
      '--name',
      'cli-seller',
      '--ledger',
      emulator.url,
      '--registry-package',
      emulator.modulesPackage,
      '--json',
    )
    expect(registered.code, registered.stderr).toBe(0)

    const schemaFile = join(folder, 'schema.json')
    const schema = { type: 'object', properties: { question: { type: 'string' } } }
    writeFileSync(schemaFile, JSON.stringify(schema))
    const submitted = await tollgate(
      'listing',
      'submit',
      seller.url,
      '--name',
      'Answer',
      '--description',
      'Answers any question',
      '--tag',
      'qa',
      '--tag',
      'text',
      '--body',
      '{"question":"why"}',
      '--input-schema',
      schemaFile,
      '--json',
    )
    expect(submitted.code, submitted.stdout + submitted.stderr).toBe(0)
    const { listing } = JSON.parse(submitted.stdout) as {
      listing: { id: string; state: string; price: string; tags: string[]; seller: string }
    }
    expect(listing).toMatchObject({
      state: 'listed',
      price: '20000',
      tags: ['qa', 'text'],
      seller: address,
    })

    const resources = (await (
      await fetch(`${gateway.url}/discovery/resources?payTo=${address}`)
    ).json()) as { items: { resource: string; metadata: { inputSchema: unknown } }[] }
    expect(resources.items).toEqual([
      expect.objectContaining({
        resource: seller.url,
        metadata: expect.objectContaining({ inputSchema: schema }),
      }),
    ])

    const status = await tollgate('listing', 'status', '--json')
    expect(status.code).toBe(0)
    expect(JSON.parse(status.stdout)).toMatchObject({
      address,
      identity: { status: 'found', name: 'cli-seller' },
      endpoints: [
        { id: listing.id, state: 'listed', probes: [{ kind: 'submission', passed: true }] },
      ],
    })
    const human = await tollgate('listing', 'status', address)
    expect(human.stdout).toContain('registered as cli-seller')
    // The price as users read it, in USDC (it was "20000 base units").
    expect(human.stdout).toMatch(
      new RegExp(`${listing.id}\\s+listed\\s+POST ${seller.url}  0\\.020000 USDC  Answer`),
    )

    const refused = await tollgate('listing', 'submit', broken.url, '--name', 'Broken', '--json')
    expect(refused.code).toBe(1)
    expect(JSON.parse(refused.stdout)).toMatchObject({
      ok: false,
      status: 422,
      code: 'listing_refused',
      failedGates: ['b'],
    })
    const refusedText = await tollgate('listing', 'submit', broken.url, '--name', 'Broken')
    expect(refusedText.code).toBe(1)
    expect(refusedText.stderr).toContain('refused listing_refused')
    expect(refusedText.stderr).toMatch(/gate b /)

    const delisted = await tollgate('listing', 'delist', listing.id, '--json')
    expect(delisted.code, delisted.stdout + delisted.stderr).toBe(0)
    expect(JSON.parse(delisted.stdout)).toMatchObject({
      listing: { id: listing.id, state: 'delisted' },
    })
    const services = (await (
      await fetch(`${gateway.url}/v1/services?seller=${address}`)
    ).json()) as { total: number }
    expect(services.total).toBe(0)

    // An unknown listing: the gateway's refusal is printed, exit 1.
    const other = await tollgate('listing', 'delist', `lst_${'0'.repeat(24)}`, '--json')
    expect(other.code).toBe(1)
    expect(JSON.parse(other.stdout)).toMatchObject({ ok: false, code: 'listing_not_found' })
  })
})
