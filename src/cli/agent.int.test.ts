/**
 * `tollgate agent show ADDRESS` (the real CLI in a subprocess) against the local ledger: a
 * registered agent's record is shown (text and JSON, exit 0); an address with none exits 1. And
 * `tollgate agent register` names the ledger it tried when there is none, or no gas to pay with.
 */
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Transaction } from '@mysten/sui/transactions'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cliArgs } from '../../scripts/cliUnderTest.js'
import { useTestLedger } from '../testing/index.js'
import { coinRefs } from '../testing/ledger/testHelpers.js'
import { linesOf, runCli } from './testHelpers.js'

const run = promisify(execFile)
const chain = useTestLedger({ beforeAll, afterAll })

async function tollgate(...args: string[]) {
  const env = { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' }
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

describe('tollgate agent show', { timeout: 180_000 }, () => {
  it("shows a registered agent's record, and exits 1 for an address without one", async () => {
    const client = chain.client
    const agent = chain.createTestWallet()
    const tx = new Transaction()
    tx.setSender(agent.toSuiAddress())
    tx.setGasPrice(1000)
    tx.setGasBudget(10_000_000)
    tx.setGasPayment(await coinRefs(client, agent.toSuiAddress(), '0x2::sui::SUI'))
    tx.moveCall({
      target: `${chain.modulesPackage}::agent_registry::register`,
      arguments: [
        tx.pure.string('scout'),
        tx.pure.string('https://agent.example/card.json'),
        tx.object.clock(),
      ],
    })
    const bytes = await tx.build()
    const executed = await client.core.executeTransaction({
      transaction: bytes,
      signatures: [(await agent.signTransaction(bytes)).signature],
    })
    expect(executed.$kind).toBe('Transaction')

    const shown = await tollgate(
      'agent',
      'show',
      agent.toSuiAddress(),
      '--ledger',
      chain.url,
      '--json',
    )
    expect(shown.code).toBe(0)
    expect(JSON.parse(shown.stdout)).toMatchObject({
      status: 'found',
      record: {
        agent: agent.toSuiAddress(),
        name: 'scout',
        metadataUri: 'https://agent.example/card.json',
      },
    })
    const text = await tollgate('agent', 'show', agent.toSuiAddress(), '--ledger', chain.url)
    expect(text.stdout).toMatch(/name\s+scout/)

    const nobody = chain.createTestWallet().toSuiAddress()
    const missing = await tollgate('agent', 'show', nobody, '--ledger', chain.url)
    expect(missing.code).toBe(1)
    expect(missing.stderr).toContain(`no agent record is owned by ${nobody}`)
  })
})

describe('tollgate agent register, as the marketplace guide has a new seller run it', {
  timeout: 180_000,
}, () => {
  it('names the ledger it tried and what to do: no ledger there, no SUI for gas', async () => {
    const key = new Ed25519Keypair()
    const env = { TOLLGATE_AGENT_KEY: key.getSecretKey(), TOLLGATE_LEDGER: undefined }
    const closed = 'http://127.0.0.1:9'
    const nowhere = await runCli(['agent', 'register', '--name', 'x', '--ledger', closed], env)
    expect(nowhere.code).toBe(2)
    expect(linesOf(nowhere.stderr)).toHaveLength(1)
    expect(nowhere.stderr).toMatch(
      /^error ledger_unavailable: The ledger at http:\/\/127\.0\.0\.1:9 did not answer \(.*\)\. Start the local one with tollgate ledger, or pass --ledger <url>\.$/m,
    )
    const unfunded = await runCli(['agent', 'register', '--name', 'x', '--ledger', chain.url], env)
    expect(unfunded.code).toBe(2)
    expect(linesOf(unfunded.stderr)).toHaveLength(1)
    expect(unfunded.stderr).toContain(
      `error INSUFFICIENT_BALANCE: ${key.toSuiAddress()} has not enough SUI on ${chain.url} to pay the gas (`,
    )
    expect(unfunded.stderr).toContain(
      "Fund it first: tollgate wallet fund (the local ledger's faucet), or send it SUI.",
    )
  })
})
