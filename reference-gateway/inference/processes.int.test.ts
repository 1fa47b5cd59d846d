/**
 * Two `tollgate gateway` processes (the real CLI, configured by environment variables only) share the
 * private inference API's keys and credit through PostgreSQL and its rate limit through Redis: a key
 * made by `tollgate keys create` with the same settings works at both, 50 calls spread over both on a
 * credit that covers 20 serve exactly 20, and the 121st request of a key in a minute is refused
 * whichever process gets it.
 */
import { type ChildProcess, execFile, fork } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import { useTestLedger } from 'tollgate/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cliArgs, cliModule } from '../../scripts/cliUnderTest.js'
import { serviceUrl, uniqueName } from '../../src/stores/contract.js'

const cli = cliModule()
const databaseUrl = serviceUrl('DATABASE_URL')
const redisUrl = serviceUrl('REDIS_URL')
const model = 'llama-3.3-70b'
const messages = [{ role: 'user', content: 'hi' }]

type Gateway = { url: string; child: ChildProcess; exited: Promise<number | null> }

// Skipped without DATABASE_URL and REDIS_URL; CI_REQUIRE_SERVICES=1 fails instead (serviceUrl).
describe.skipIf(databaseUrl === undefined || redisUrl === undefined)(
  'two gateway processes on one PostgreSQL and one Redis',
  () => {
    const chain = useTestLedger({ beforeAll, afterAll })
    let folder: string
    let env: Record<string, string>
    const schema = uniqueName('inference').toLowerCase()
    const children = new Set<ChildProcess>()
    let a: Gateway
    let b: Gateway

    function start(): Promise<Gateway> {
      const child = fork(cli.file, ['gateway', '--port', '0'], {
        execArgv: cli.execArgv,
        env,
        stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
      })
      children.add(child)
      const exited = new Promise<number | null>((resolve) =>
        child.once('exit', (code) => {
          children.delete(child)
          resolve(code)
        }),
      )
      return new Promise((resolve, reject) => {
        let out = ''
        child.stdout?.on('data', (chunk: Buffer) => {
          out += chunk.toString()
          const match = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out)
          if (match?.[1]) resolve({ url: match[1], child, exited })
        })
        child.once('exit', (code) => reject(new Error(`gateway exited early (${code}): ${out}`)))
      })
    }

    async function keysCli(...args: string[]): Promise<string> {
      const { stdout } = await promisify(execFile)(process.execPath, cliArgs('keys', ...args), {
        env,
      })
      return stdout
    }

    function chat(gateway: Gateway, key: string, body: unknown) {
      return fetch(`${gateway.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
    }

    beforeAll(async () => {
      folder = mkdtempSync(join(tmpdir(), 'tollgate-inference-processes-'))
      env = {
        PATH: process.env.PATH ?? '',
        LEDGER_URL: chain.url,
        OPERATOR_KEY: chain.createTestWallet({ usdc: '1', sui: '1' }).getSecretKey(),
        CHALLENGE_SECRETS: 'one-secret-shared-by-both-gateway-processes',
        UPSTREAMS: 'stub',
        STORE: 'memory',
        DATABASE_URL: databaseUrl as string,
        DATABASE_SCHEMA: schema,
        REDIS_URL: redisUrl as string,
        // The rate limit's Redis keys start with it: unique per run.
        STORE_PREFIX: uniqueName('rl').toLowerCase(),
        LOG_LEVEL: 'warn',
        DATA_DIR: folder,
        NO_COLOR: '1',
      }
      ;[a, b] = await Promise.all([start(), start()])
    }, 120_000)

    afterAll(async () => {
      for (const g of [a, b]) g?.child.kill('SIGTERM')
      await Promise.all([a?.exited, b?.exited])
      for (const child of children) child.kill('SIGKILL')
      if (folder) rmSync(folder, { recursive: true, force: true })
      if (databaseUrl !== undefined) {
        const client = new pg.Client({ connectionString: databaseUrl })
        await client.connect()
        await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
        await client.end()
      }
    })

    it('a key from tollgate keys works at both; 50 calls over both on a credit for 20 serve 20', async () => {
      const created = JSON.parse(await keysCli('create', '--credit', '0.04', '--json')) as {
        id: string
        key: string
        credit: string
      }
      expect(created.credit).toBe('0.040000')
      const statuses = await Promise.all(
        Array.from(
          { length: 50 },
          async (_, i) =>
            (await chat(i % 2 === 0 ? a : b, created.key, { model, messages })).status,
        ),
      )
      expect(statuses.filter((s) => s === 200)).toHaveLength(20)
      expect(statuses.filter((s) => s === 402)).toHaveLength(30)
      const listed = JSON.parse(await keysCli('list', '--json')) as { id: string; credit: string }[]
      expect(listed.find((k) => k.id === created.id)?.credit).toBe('0.000000')
      // Revoked by the command: refused by both processes.
      await keysCli('revoke', created.id)
      for (const g of [a, b])
        expect((await chat(g, created.key, { model, messages })).status).toBe(401)
    }, 120_000)

    it('the 121st request of a key in a minute is refused, counted across both processes', async () => {
      const { key } = JSON.parse(await keysCli('create', '--json')) as { key: string }
      for (let i = 0; i < 120; i++) {
        // Unknown-model requests count and cost nothing.
        const response = await chat(i % 2 === 0 ? a : b, key, { model: 'none', messages })
        expect(response.status).toBe(404)
      }
      for (const g of [a, b]) {
        const limited = await chat(g, key, { model, messages })
        expect(limited.status).toBe(429)
        expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0)
        expect(((await limited.json()) as { error: { code: string } }).error.code).toBe(
          'rate_limit_exceeded',
        )
      }
    }, 120_000)
  },
)
