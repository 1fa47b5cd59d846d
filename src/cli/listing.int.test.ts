/**
 * `tollgate listing` end to end (the real CLI in subprocesses) against the reference gateway on its
 * embedded ledger: an agent registered with `tollgate agent register` submits a local seller
 * (`tollgate listing submit`, signed with TOLLGATE_AGENT_KEY) and it is listed, with its input
 * schema in discovery; `status` shows it with its probe; a seller without a 402 is refused with
 * the gate named (exit 1); `delist` withdraws it from `/v1/services`.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type RunningSeller, startSeller } from '../../conformance/fixtures/sellers.js'
import { useTestGateway } from '../../reference-gateway/server/testHelpers.js'
import { cliArgs } from '../../scripts/cliUnderTest.js'

const run = promisify(execFile)
const folder = mkdtempSync(join(tmpdir(), 'tollgate-listing-'))
let agent: Ed25519Keypair
let seller: RunningSeller
let broken: RunningSeller

async function tollgate(...args: string[]) {
  const env = {
    ...process.env,
    NO_COLOR: '1',
    FORCE_COLOR: '0',
    TOLLGATE_AGENT_KEY: agent.getSecretKey(),
    TOLLGATE_GATEWAY: gateway.url,
  }
  try {
    const { stdout, stderr } = await run(process.execPath, cliArgs(...args), {
      env,
      timeout: 120_000,
    })
    return { code: 0, stdout, stderr }
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string }
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' }
  }
}

const gateway = useTestGateway({
  // The seller listens on 127.0.0.1; private addresses are off unless set.
  config: { listingAllowPrivateNetwork: true },
})

beforeAll(async () => {
  agent = gateway.emulator.createTestWallet({ usdc: '0', sui: '1' })
  const env = { ledgerUrl: gateway.emulator.url, wallet: agent.toSuiAddress() }
  seller = await startSeller(env, { adapter: 'hono' })
  // Answers without asking to be paid: gate b fails.
  broken = await startSeller(env, { wrap: () => async () => Response.json({ answer: 42 }) })
}, 120_000)

afterAll(async () => {
  await seller?.close()
  await broken?.close()
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
      gateway.emulator.url,
      '--registry-package',
      gateway.emulator.modulesPackage,
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

  it('names an answer that is not a JSON object, with one line and exit code 1', async () => {
    const { createServer } = await import('node:http')
    const bodies = ['[1, 2, 3]', '"text"', 'not json']
    const server = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end(bodies.shift() ?? '{}')
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const address = server.address()
    const url = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`
    try {
      for (let i = 0; i < 3; i++) {
        const answer = await tollgate('listing', 'status', agent.toSuiAddress(), '--gateway', url)
        expect(answer.code).toBe(1)
        expect(answer.stderr).toMatch(/answered 200 with a body that is not a JSON object/)
        expect(answer.stderr.trim().split('\n')).toHaveLength(1)
      }
    } finally {
      server.close()
    }
  })
})
