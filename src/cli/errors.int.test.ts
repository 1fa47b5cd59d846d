/**
 * Every failure a user can cause is one line naming what to do, with the exit code of
 * docs/buyers.md: a usage error exits 1 in every command; a setting to fix (a busy port, a data
 * folder) exits 2. Driven as a user runs `tollgate`: subprocesses with their own config folder.
 */
import { mkdtempSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type CliResult, linesOf, runCli } from './testHelpers.js'

let folder: string
let taken: Server
let busyPort: number

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), 'tollgate-cli-errors-'))
  taken = createServer()
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
  busyPort = (taken.address() as { port: number }).port
})

afterAll(() => {
  taken?.close()
})

/** A user's environment: its own config folder, no gateway store but `DATA_DIR`. */
function tollgate(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return runCli(args, {
    TOLLGATE_HOME: join(folder, 'home'),
    DATABASE_URL: undefined,
    REDIS_URL: undefined,
    TOLLGATE_LEDGER: undefined,
    ...env,
  })
}

/** The one line on stderr, asserting there is exactly one and the exit code. */
function oneLine(result: CliResult, code: number): string {
  const lines = linesOf(result.stderr)
  expect(lines, result.stderr + result.stdout).toHaveLength(1)
  expect(result.code, result.stderr).toBe(code)
  return lines[0] as string
}

// Each subprocess loads its command through tsx: seconds apiece on a busy machine.
describe('tollgate fails in one line', { timeout: 300_000 }, () => {
  it('ledger: on a busy port, naming --port (exit 2)', async () => {
    const line = oneLine(await tollgate(['ledger', '--port', String(busyPort)]), 2)
    expect(line).toBe(
      `tollgate ledger: 127.0.0.1:${busyPort} is already in use (EADDRINUSE): a ledger may already run there (use it), or start this one elsewhere with --port <port> (0 for any free port)`,
    )
  })

  it('keys: with DATA_DIR a file, naming DATA_DIR (exit 2)', async () => {
    const file = join(folder, 'a-file')
    writeFileSync(file, 'not a folder')
    const line = oneLine(await tollgate(['keys', 'list'], { DATA_DIR: file }), 2)
    expect(line).toBe(`tollgate keys: DATA_DIR (dataDir): ${file} is a file, not a folder`)
  })

  it('keys: with DATA_DIR under /proc, at once (a recursive mkdir there never returns on Node 20)', async () => {
    const line = oneLine(await tollgate(['keys', 'list'], { DATA_DIR: '/proc/tollgate/data' }), 2)
    expect(line).toMatch(
      /^tollgate keys: DATA_DIR \(dataDir\): cannot write to \/proc\/tollgate\/data \(ENOENT/,
    )
  })

  it('keys: with a PostgreSQL it cannot reach, naming DATABASE_URL without echoing it (exit 2)', async () => {
    const url = 'postgres://tollgate:hunter2-secret@127.0.0.1:1/nothing'
    const line = oneLine(await tollgate(['keys', 'list'], { DATABASE_URL: url }), 2)
    expect(line).toMatch(
      /^tollgate keys: DATABASE_URL \(databaseUrl\): cannot open the gateway's database: connect ECONNREFUSED 127\.0\.0\.1:1/,
    )
    expect(line).not.toContain('hunter2')
  })

  it('refunds: a --store it cannot create says why in one line, not a stack trace', async () => {
    const line = oneLine(await tollgate(['refunds', '--store', '/proc/tollgate/payments.db']), 1)
    expect(line).toBe("tollgate refunds: ENOENT: no such file or directory, mkdir '/proc/tollgate'")
  })

  it('agent show: a ledger that does not answer is named, with the command that starts one', async () => {
    const line = oneLine(
      await tollgate(['agent', 'show', '0x1', '--ledger', 'http://127.0.0.1:1']),
      2,
    )
    expect(line).toMatch(
      /^error ledger_unavailable: The ledger at http:\/\/127\.0\.0\.1:1 did not answer \(.*\)\. Start the local one with tollgate ledger, or pass --ledger <url>\.$/,
    )
  })

  it('wallet: a config folder under /proc fails at once, naming TOLLGATE_HOME (exit 2)', async () => {
    const line = oneLine(
      await tollgate(['wallet', 'new'], { TOLLGATE_HOME: '/proc/tollgate/home' }),
      2,
    )
    expect(line).toBe(
      "error invalid_config: Cannot create the folder /proc/tollgate (ENOENT: no such file or directory, mkdir '/proc/tollgate'); choose a folder you can write (TOLLGATE_HOME for the config folder).",
    )
  })

  it('pay: a --max or -d that is not what it takes is a usage error (exit 1)', async () => {
    const url = `http://127.0.0.1:${busyPort}/paid`
    expect(oneLine(await tollgate(['pay', url, '--max', 'abc']), 1)).toBe(
      'error invalid_options: --max must be a USDC amount like 0.10, not "abc"',
    )
    expect(oneLine(await tollgate(['pay', url, '-d', '{x']), 1)).toMatch(
      /^error invalid_options: -d is not JSON \(.*\): give it as '\{"key":"value"\}'$/,
    )
  })

  it('conformance: usage errors exit 1, as in every command', async () => {
    const url = `http://127.0.0.1:${busyPort}/paid`
    expect(oneLine(await tollgate(['conformance', 'not a url']), 1)).toBe(
      "error invalid_options: not a url is not a URL: give the endpoint's full URL (https://seller.example/v1/answer)",
    )
    expect(oneLine(await tollgate(['conformance', url, '--body', '{x']), 1)).toBe(
      `error invalid_options: --body is not JSON: give it as '{"key":"value"}'`,
    )
    expect(oneLine(await tollgate(['conformance', url, '--mode', 'bogus']), 1)).toMatch(
      /^error: option '--mode <mode>' argument 'bogus' is invalid/,
    )
    expect(oneLine(await tollgate(['pay', url, '--prefer', 'bogus']), 1)).toMatch(
      /^error: option '--prefer <dialect>' argument 'bogus' is invalid/,
    )
  })
})
