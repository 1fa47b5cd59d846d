/**
 * `tollgate gateway` (the real CLI, through tsx) refuses to start on a setting it cannot work with:
 * ONE line on stderr naming the setting and the cause, exit code 2, nothing listening. And a running
 * gateway says why it is not ready, and logs an unhandled error with its cause.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cliArgs } from '../scripts/cliUnderTest.js'
import { serviceUrl } from '../src/stores/contract.js'
import { useTestGateway } from './server/testHelpers.js'

const databaseUrl = serviceUrl('DATABASE_URL')

let folder: string

beforeAll(() => {
  folder = mkdtempSync(join(tmpdir(), 'tollgate-startup-'))
})

afterAll(() => {
  if (folder) rmSync(folder, { recursive: true, force: true })
})

type Outcome = { code: number | null; stdout: string; stderr: string }

/** Runs `tsx src/cli.ts gateway …` with only `env` (and PATH) set; kills it if it starts after all. */
function gateway(args: string[], env: Record<string, string>): Promise<Outcome> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, cliArgs('gateway', ...args), {
      // Any free port for its local ledger: 9123 (the default) belongs to the user's own.
      env: {
        PATH: process.env.PATH ?? '',
        NO_COLOR: '1',
        EMULATOR_LATENCY_MS: '0',
        EMULATOR_PORT: '0',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
      // It started although it should not have: stop it, the assertions say what went wrong.
      if (stdout.includes('listening on')) child.kill('SIGKILL')
    })
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
    })
    // One that hangs (a data folder it never finishes creating) is killed, not left behind.
    const hung = setTimeout(() => child.kill('SIGKILL'), 45_000)
    child.on('exit', (code) => {
      clearTimeout(hung)
      resolve({ code, stdout, stderr })
    })
  })
}

/** The one line on stderr (asserting there is exactly one). */
function oneLine(outcome: Outcome): string {
  const lines = outcome.stderr.split('\n').filter((line) => line.trim() !== '')
  expect(lines, outcome.stderr + outcome.stdout).toHaveLength(1)
  expect(outcome.stdout).not.toContain('listening on')
  expect(outcome.code).toBe(2)
  return lines[0] as string
}

describe('tollgate gateway refuses to start, in one line with exit code 2', () => {
  it('on a port in use, naming PORT', async () => {
    const taken: Server = createServer()
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
    const port = (taken.address() as { port: number }).port
    try {
      const line = oneLine(
        await gateway(['--port', String(port)], { DATA_DIR: join(folder, 'port') }),
      )
      expect(line).toBe(
        `tollgate gateway: PORT (port): 127.0.0.1:${port} is already in use (EADDRINUSE); stop what listens there, or choose another port (--port, PORT=0 for any free one)`,
      )
    } finally {
      taken.close()
    }
  })

  it('on a DATA_DIR that is a file', async () => {
    const file = join(folder, 'a-file')
    writeFileSync(file, 'not a folder')
    const line = oneLine(await gateway(['--port', '0'], { DATA_DIR: file }))
    expect(line).toBe(`tollgate gateway: DATA_DIR (dataDir): ${file} is a file, not a folder`)
  })

  it('on a DATA_DIR it cannot create or write', async () => {
    const file = join(folder, 'another-file')
    writeFileSync(file, 'not a folder')
    const line = oneLine(await gateway(['--port', '0'], { DATA_DIR: join(file, 'data') }))
    expect(line).toMatch(
      /^tollgate gateway: DATA_DIR \(dataDir\): cannot write to .*another-file\/data \(ENOTDIR/,
    )
  })

  it('on a DATA_DIR under /proc, at once (a recursive mkdir there never returns on Node 20)', async () => {
    const line = oneLine(await gateway(['--port', '0'], { DATA_DIR: '/proc/tollgate/data' }))
    expect(line).toMatch(
      /^tollgate gateway: DATA_DIR \(dataDir\): cannot write to \/proc\/tollgate\/data \(ENOENT/,
    )
  })

  it('on an OPERATOR_KEY that is not a Sui private key, without echoing it', async () => {
    // The configuration's pattern accepts it; the key itself does not decode (bad checksum).
    const key = 'suiprivkey1qqqqhunter2'
    const line = oneLine(await gateway(['--port', '0'], { DATA_DIR: folder, OPERATOR_KEY: key }))
    expect(line).toBe('tollgate gateway: OPERATOR_KEY (operatorKey): not a valid Sui private key')
  })

  it('on a PostgreSQL store it cannot reach, without echoing the URL', async () => {
    const url = 'postgres://tollgate:hunter2-secret@127.0.0.1:1/nothing'
    const line = oneLine(await gateway(['--port', '0'], { DATA_DIR: folder, DATABASE_URL: url }))
    expect(line).toMatch(
      /^tollgate gateway: DATABASE_URL \(databaseUrl\): cannot use the PostgreSQL store: connect ECONNREFUSED 127\.0\.0\.1:1/,
    )
    expect(line).not.toContain('hunter2')
  })

  it.skipIf(databaseUrl === undefined)(
    'on a DATABASE_URL without a user (the server refuses it), with how to give one',
    async () => {
      const noUser = new URL(databaseUrl as string)
      noUser.username = ''
      noUser.password = ''
      const line = oneLine(
        await gateway(['--port', '0'], { DATA_DIR: folder, DATABASE_URL: noUser.toString() }),
      )
      expect(line).toMatch(
        /^tollgate gateway: DATABASE_URL \(databaseUrl\): cannot use the PostgreSQL store: .*user.*; give the user and password in the URL/,
      )
    },
  )

  it('on a Redis store it cannot reach', async () => {
    const line = oneLine(
      await gateway(['--port', '0'], { DATA_DIR: folder, REDIS_URL: 'redis://127.0.0.1:1' }),
    )
    expect(line).toMatch(/^tollgate gateway: REDIS_URL \(redisUrl\): cannot use the Redis store: /)
  })
})

describe('a running gateway', () => {
  const logs: Record<string, unknown>[] = []
  const log = (object: Record<string, unknown>) => logs.push(object)
  const running = useTestGateway({
    config: {
      // Nothing listens here: the ledger check of /readyz fails.
      ledgerUrl: 'http://127.0.0.1:1',
      ledgerTimeoutMs: 2_000,
      payTo: `0x${'ab'.repeat(32)}`,
      challengeSecrets: 'a-test-secret-of-at-least-thirty-two-bytes',
      store: 'memory',
      upstreams: 'stub',
      // Logged at the default level, so that the unhandled error's line is seen.
      logLevel: 'info',
    },
    logger: { info: log, warn: log, error: log, debug: log },
  })

  it('logs an unhandled error with its cause', async () => {
    const app = running.gateway.app
    // A route that fails outside every handled path (added for this test only, before the first
    // request builds the router).
    const boom = new Error('the handler failed', {
      cause: Object.assign(new Error('the disk is full'), { code: 'ENOSPC' }),
    })
    expect(() =>
      app.get('/test-only/boom', () => {
        throw boom
      }),
    ).not.toThrow()
    const response = await fetch(`${running.url}/test-only/boom`)
    expect(response.status).toBe(500)
    const line = logs.find((entry) => entry.event === 'unhandled')
    expect(line?.error).toEqual({
      name: 'Error',
      message: 'the handler failed: the disk is full (ENOSPC)',
    })
  })

  it('says in /readyz why it is not ready', async () => {
    const response = await fetch(`${running.url}/readyz`)
    expect(response.status).toBe(503)
    const body = (await response.json()) as {
      ready: boolean
      checks: Record<string, string>
      reasons: Record<string, string>
    }
    expect(body.ready).toBe(false)
    expect(body.checks).toEqual({ store: 'ok', database: 'ok', ledger: 'failed' })
    expect(Object.keys(body.reasons)).toEqual(['ledger'])
    expect(body.reasons.ledger).toMatch(/ECONNREFUSED|unavailable|connect/i)
  })
})
