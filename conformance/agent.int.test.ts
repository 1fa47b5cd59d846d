/**
 * `tollgate agent register` (the real CLI) writes the agent identity record of gate (a) on the
 * local ledger, through the same `Ledger` a real network uses; after it, `tollgate conformance`
 * passes all four gates for a seller paid to that agent: a local CI run can be LISTABLE.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { useTestLedger } from 'tollgate/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cliArgs } from '../scripts/cliUnderTest.js'
import { createLedger } from '../src/ledger/index.js'
import { lookUpAgent, registerAgent } from './agent.js'
import { type RunningSeller, startSeller } from './fixtures/sellers.js'
import type { ConformanceReport } from './report.js'

const root = new URL('..', import.meta.url).pathname
const chain = useTestLedger({ beforeAll, afterAll })
let key: Ed25519Keypair
let seller: RunningSeller

beforeAll(async () => {
  // The seller's key: funded with SUI for the registration's gas, not yet registered.
  key = chain.createTestWallet({ usdc: '0', sui: '1' })
  seller = await startSeller({
    ledgerUrl: chain.url,
    wallet: key.toSuiAddress(),
    stranger: new Ed25519Keypair().toSuiAddress(),
  })
})

afterAll(async () => {
  await seller?.close()
})

function tollgate(args: string[], env: Record<string, string> = {}) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      cliArgs(...args),
      {
        cwd: root,
        timeout: 120_000,
        env: {
          ...process.env,
          NO_COLOR: '1',
          TOLLGATE_HOME: mkdtempSync(join(tmpdir(), 'tollgate-agent-')),
          ...env,
        },
      },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1
        resolve({ code, stdout, stderr })
      },
    )
  })
}

const conformance = () =>
  tollgate([
    'conformance',
    seller.url,
    '--agent',
    key.toSuiAddress(),
    '--ledger',
    chain.url,
    '--allow-private-network',
    '--json',
  ])

describe('tollgate agent register', { timeout: 300_000 }, () => {
  it('registers the agent, and conformance then passes all four gates', async () => {
    const before = await conformance()
    expect(before.code, before.stderr).toBe(1)
    expect((JSON.parse(before.stdout) as ConformanceReport).gates.a).toBe('fail')

    const registered = await tollgate(
      ['agent', 'register', '--name', 'local-seller', '--ledger', chain.url, '--json'],
      { TOLLGATE_AGENT_KEY: key.getSecretKey() },
    )
    expect(registered.code, registered.stderr).toBe(0)
    const done = JSON.parse(registered.stdout) as { agent: string; digest: string }
    expect(done.agent).toBe(key.toSuiAddress())
    expect(registered.stdout).not.toContain('suiprivkey')

    const client = chain.client
    const found = await lookUpAgent(client, { address: key.toSuiAddress() })
    expect(found).toMatchObject({
      status: 'found',
      record: { agent: key.toSuiAddress(), name: 'local-seller' },
    })

    const after = await conformance()
    expect(after.code, after.stderr).toBe(0)
    const report = JSON.parse(after.stdout) as ConformanceReport
    expect(report.gates).toEqual({ a: 'pass', b: 'pass', c: 'pass', d: 'pass' })
    expect(report.listable).toBe(true)
  })

  it('says what is wrong when the package is not the registry of that ledger', async () => {
    const done = await registerAgent({
      ledger: createLedger({ url: chain.url }),
      signer: key,
      name: 'x',
      registryPackage: `0x${'42'.repeat(32)}`,
    })
    expect(done.status).toBe('failed')
    expect(done.status === 'failed' && done.error.message).toMatch(
      /Is 0x(42){32} the agent_registry package of this network\?/,
    )
  })
})
