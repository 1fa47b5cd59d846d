/**
 * `tollgate conformance` as a subprocess against local sellers and the ledger emulator: exit codes
 * 0 (gates pass), 1 (a gate fails, or a usage error as in every command), 2 (the probe could not be
 * made), JSON on stdout, JUnit to a file.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { useTestLedger } from 'tollgate/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cliArgs } from '../scripts/cliUnderTest.js'
import { registerAgent } from './fixtures/agent.js'
import {
  brokenSellers,
  goodSessionSeller,
  type RunningSeller,
  startSeller,
} from './fixtures/sellers.js'
import type { ConformanceReport } from './report.js'
import { checkWellFormedXml } from './testHelpers.js'

const root = new URL('..', import.meta.url).pathname
const chain = useTestLedger({ beforeAll, afterAll })
let agent: string
let good: RunningSeller
let free: RunningSeller
let sessions: RunningSeller

beforeAll(async () => {
  const client = chain.client
  const seller = chain.createTestWallet({ usdc: '0' })
  await registerAgent(client, seller, chain.modulesPackage)
  agent = seller.toSuiAddress()
  const env = {
    ledgerUrl: chain.url,
    wallet: agent,
    stranger: new Ed25519Keypair().toSuiAddress(),
  }
  good = await startSeller(env)
  const noPaywall = brokenSellers.find((f) => f.name.startsWith('no 402'))
  free = await (noPaywall as NonNullable<typeof noPaywall>).start(env)
  sessions = await goodSessionSeller.start({
    ...env,
    sessions: { payee: seller, package: chain.modulesPackage, registry: chain.channel.registry },
  })
})

afterAll(async () => {
  await Promise.all([good?.close(), free?.close(), sessions?.close()])
})

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      cliArgs('conformance', ...args),
      { cwd: root, timeout: 90_000, env: { ...process.env, NO_COLOR: '1' } },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1
        resolve({ code, stdout, stderr })
      },
    )
  })
}

const local = () => [
  '--agent',
  agent,
  '--ledger',
  chain.url,
  '--registry-package',
  chain.modulesPackage,
  '--allow-private-network',
]

describe('tollgate conformance (subprocess)', () => {
  it('exits 0 for a good seller, prints the JSON report and writes JUnit', async () => {
    const junit = join(mkdtempSync(join(tmpdir(), 'conformance-')), 'report.xml')
    const { code, stdout, stderr } = await cli([good.url, ...local(), '--json', '--junit', junit])
    expect(code, stderr).toBe(0)
    const report = JSON.parse(stdout) as ConformanceReport
    expect(report.listable).toBe(true)
    expect(report.summary.fail).toBe(0)
    expect(stderr).toContain('PASS  (b) gate.live-402')
    expect(stderr).toContain('LISTABLE')
    const testcases = checkWellFormedXml(readFileSync(junit, 'utf8')).filter(
      (e) => e === 'testcase',
    )
    expect(testcases).toHaveLength(report.checks.length)
  })

  it('exits 1 when a gate fails', async () => {
    const [noAgent, noPaywall] = await Promise.all([
      cli([good.url, '--wallet-address', agent, '--allow-private-network']),
      cli([free.url, ...local()]),
    ])
    expect(noAgent.code, noAgent.stderr).toBe(1)
    expect(noAgent.stderr).toContain('FAIL  (a) gate.agent-identity')
    expect(noPaywall.code, noPaywall.stderr).toBe(1)
    expect(noPaywall.stderr).toContain('FAIL  (b) gate.live-402')
  })

  it('exits 2 on a refused address, 1 on a bad option or a bad body (a usage error)', async () => {
    const [blocked, ...usage] = await Promise.all([
      cli([good.url, '--agent', agent, '--ledger', chain.url]),
      cli([good.url, '--mode', 'bogus']),
      cli([good.url, '--body', '{not json', '--allow-private-network']),
      cli(['not a url']),
      cli([good.url, '--mode', 'paid', '--allow-private-network']),
      cli([good.url, '--session-package', '0x1', '--allow-private-network']),
      cli([good.url, '--max-session-deposit', 'lots', '--allow-private-network']),
    ])
    expect(blocked?.code).toBe(2)
    expect(blocked?.stderr).toContain('could not be reached')
    expect(usage.map((u) => u.code)).toEqual([1, 1, 1, 1, 1, 1])
  })

  it('follows no seller redirect to the metadata address, even with --allow-private-network', async () => {
    const paths: string[] = []
    const redirecting = createServer((req, res) => {
      paths.push(req.url ?? '')
      res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' })
      res.end()
    })
    await new Promise<void>((resolve) => redirecting.listen(0, '127.0.0.1', resolve))
    const url = `http://127.0.0.1:${(redirecting.address() as AddressInfo).port}/v1/answer`
    try {
      const { code, stdout, stderr } = await cli([url, ...local(), '--json'])
      expect(code, stderr).not.toBe(0)
      const report = JSON.parse(stdout) as ConformanceReport
      const live = report.checks.find((c) => c.id === 'gate.live-402')
      expect(live?.status).toBe('error')
      expect(live?.message).toContain('redirects to another host')
      expect(report.listable).toBe(false)
    } finally {
      await new Promise<void>((resolve) => redirecting.close(() => resolve()))
    }
  })

  it('runs the paid checks with a faucet-funded wallet', async () => {
    const { code, stdout, stderr } = await cli([
      good.url,
      ...local(),
      '--mode',
      'paid',
      '--faucet',
      '--json',
    ])
    expect(code, stderr).toBe(0)
    const report = JSON.parse(stdout) as ConformanceReport
    const notPassed = report.checks.filter((c) => c.status !== 'pass').map((c) => c.id)
    // The HTTP faucet mints USDC and SUI only, so there is no second coin for the wrong-asset check.
    expect(notPassed).toEqual(['paid.wrong-asset'])
  })

  it("checks a seller's sessions, its deposit capped by --max-session-deposit", async () => {
    const paid = [...local(), '--mode', 'paid', '--faucet', '--json']
    const [runs, capped] = await Promise.all([
      cli([sessions.url, ...paid]),
      cli([sessions.url, ...paid, '--max-session-deposit', '0.01']),
    ])
    const session = (stdout: string) =>
      (JSON.parse(stdout) as ConformanceReport).checks.filter((c) => c.id.startsWith('session.'))
    expect(runs?.code, runs?.stderr).toBe(0)
    expect(session(runs?.stdout ?? '').map((c) => [c.id, c.status])).toEqual([
      ['session.challenge', 'pass'],
      ['session.voucher-served', 'pass'],
      ['session.voucher-replay', 'pass'],
      ['session.voucher-lower', 'pass'],
      ['session.closed-410', 'pass'],
    ])
    // 0.01 USDC cannot hold one call at 0.02: no channel is opened.
    const served = session(capped?.stdout ?? '').find((c) => c.id === 'session.voucher-served')
    expect(served?.status).toBe('error')
    expect(served?.message).toContain('above the most a channel may hold (0.010000 USDC)')
  })
})
