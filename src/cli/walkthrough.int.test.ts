/**
 * A new user's first hour, as the README and docs/buyers.md tell it, with no `--ledger` anywhere:
 * a fresh home folder and data folder; `tollgate ledger`, then `tollgate gateway` (which joins that
 * ledger), `tollgate wallet new`, `tollgate wallet fund`, and `tollgate pay` against a catalog
 * route — paid and answered on the one local ledger, its amounts labelled test money.
 *
 * The ports are this test's own: `tollgate ledger --port` and the gateway's `EMULATOR_PORT` (whose
 * default for `tollgate gateway` is 9123, the user's own ledger, not to be fought over by tests).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cliArgs } from '../../scripts/cliUnderTest.js'
import { createLedger } from '../ledger/index.js'
import { MAINNET_USDC_TYPE } from '../testing/index.js'

const run = promisify(execFile)
const repo = fileURLToPath(new URL('../..', import.meta.url))
const folder = mkdtempSync(join(tmpdir(), 'tollgate-first-hour-'))
const children = new Set<ChildProcess>()

/** A loopback port nothing listens on (bound, then closed). */
async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

let env: Record<string, string>

beforeAll(async () => {
  const [ledgerPort, gatewayPort] = [await freePort(), await freePort()]
  // A new user's machine: a fresh home (so ~/.config/tollgate is new), a fresh data folder.
  env = {
    PATH: process.env.PATH ?? '',
    HOME: join(folder, 'home'),
    NO_COLOR: '1',
    FORCE_COLOR: '0',
    DATA_DIR: join(folder, 'data'),
    LOG_LEVEL: 'warn',
    EMULATOR_PORT: String(ledgerPort),
    LEDGER_PORT: String(ledgerPort),
    GATEWAY_PORT: String(gatewayPort),
  }
})

afterAll(() => {
  for (const child of children) child.kill('SIGKILL')
  rmSync(folder, { recursive: true, force: true })
})

/** Starts a long-running command; resolves with its output once `ready` matches it. */
function start(args: string[], ready: RegExp): Promise<string> {
  const child = spawn(process.execPath, cliArgs(...args), {
    cwd: repo,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.add(child)
  return new Promise((resolve, reject) => {
    let out = ''
    const read = (chunk: Buffer) => {
      out += chunk.toString()
      if (ready.test(out)) resolve(out)
    }
    child.stdout.on('data', read)
    child.stderr.on('data', read)
    child.once('exit', (code) => reject(new Error(`tollgate ${args[0]} exited (${code}):\n${out}`)))
  })
}

async function tollgate(...args: string[]) {
  try {
    const { stdout, stderr } = await run(process.execPath, cliArgs(...args), {
      cwd: repo,
      env,
      timeout: 180_000,
    })
    return { code: 0, stdout, stderr }
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string }
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' }
  }
}

describe('a new user’s first hour, with no --ledger anywhere', { timeout: 600_000 }, () => {
  it('ledger, gateway, wallet new/fund and pay a catalog route on one local ledger', async () => {
    const ledgerUrl = `http://127.0.0.1:${env.LEDGER_PORT}`
    const ledgerOut = await start(
      ['ledger', '--port', env.LEDGER_PORT as string, '--latency-ms', '0'],
      /recorded\s+in .*settings\.json/,
    )
    expect(ledgerOut).toContain(`url         ${ledgerUrl}`)

    const gatewayOut = await start(
      ['gateway', '--port', env.GATEWAY_PORT as string],
      /npx tollgate pay .*\n/,
    )
    expect(gatewayOut).toContain(`joined the local ledger already running on ${ledgerUrl}`)
    const gatewayUrl = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(gatewayOut)?.[1] as string
    const payTo = /pay to\s+(0x[0-9a-f]+)/.exec(gatewayOut)?.[1] as string

    const created = await tollgate('wallet', 'new')
    expect(created.code, created.stderr).toBe(0)
    const funded = await tollgate('wallet', 'fund', '--usdc', '1')
    expect(funded.code, funded.stderr).toBe(0)
    expect(funded.stdout).toContain('test funds, not real money: 1 USDC')

    const ledger = createLedger({ url: ledgerUrl })
    const before = (await ledger.getBalance(payTo, MAINNET_USDC_TYPE)).total
    const paid = await tollgate(
      'pay',
      'POST',
      `${gatewayUrl}/openai/v1/chat/completions`,
      '-d',
      JSON.stringify({ messages: [{ role: 'user', content: 'Say hello' }] }),
    )
    expect(paid.code, paid.stdout + paid.stderr).toBe(0)
    // Which ledger, and why; the amounts labelled as test money.
    expect(paid.stdout).toContain(
      `ledger ${ledgerUrl} (local ledger: TEST MONEY, not real; recorded in`,
    )
    expect(paid.stdout).toMatch(/paid\s+\d+\.\d{6} USDC in x402 .*\(TEST MONEY, not real\)/)
    expect(paid.stdout).toMatch(/status\s+200/)
    // The money reached the gateway on that same ledger.
    expect((await ledger.getBalance(payTo, MAINNET_USDC_TYPE)).total).toBeGreaterThan(before)
  })

  it('a ledger that does not answer is named, with the command that starts one', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`
    const balance = await tollgate('wallet', 'balance', '--ledger', closed)
    expect(balance.code).toBe(1)
    expect(balance.stderr.trim()).toBe(
      `error unreachable: The ledger at ${closed} did not answer; start the local ledger with: tollgate ledger --port ${new URL(closed).port}.`,
    )
    const fund = await tollgate('wallet', 'fund', '--ledger', closed)
    expect(fund.code).toBe(1)
    expect(fund.stderr.trim()).toBe(
      `error unreachable: No local ledger answers at ${closed}; start one with: tollgate ledger --port ${new URL(closed).port}`,
    )
  })
})
