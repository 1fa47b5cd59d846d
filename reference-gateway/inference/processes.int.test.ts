/**
 * Two `tollgate gateway` processes (the real CLI, configured by environment variables only) share the
 * private inference API's keys and credit through PostgreSQL and its rate limit through Redis: a key
 * made by `tollgate keys create` with the same settings works at both, 50 calls spread over both on a
 * credit that covers 20 reservations serve exactly 20 (the model, the model server of
 * `tollgate/testing` configured through `INFERENCE_MODELS`, answers slowly enough that they all
 * overlap) and the credit left is what their usage did not spend, and the 121st request of a key in
 * a minute is refused whichever process gets it.
 */
import { type ChildProcess, execFile, fork } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import { formatAmount } from 'tollgate'
import { type ModelUpstream, startModelUpstream, useTestLedger } from 'tollgate/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cliArgs, cliModule } from '../../scripts/cliUnderTest.js'
import { serviceUrl, uniqueName } from '../../src/stores/contract.js'
import { tokenCost } from './pricing.js'
import { estimatePromptTokens } from './request.js'
import { spentBy } from './testHelpers.js'

const cli = cliModule()
const databaseUrl = serviceUrl('DATABASE_URL')
const redisUrl = serviceUrl('REDIS_URL')
const model = 'slow-llama'
const messages = [{ role: 'user', content: 'hi' }]
// 1 USDC per million prompt tokens, 2 per million output tokens, at most 1 000 output tokens.
const pricing = { promptPerMillion: 1_000_000n, completionPerMillion: 2_000_000n }
const reservation = tokenCost(pricing, {
  promptTokens: estimatePromptTokens(messages),
  completionTokens: 1_000,
})

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
    let upstream: ModelUpstream

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
      upstream = await startModelUpstream({ latencyMs: 1_500 })
      env = {
        INFERENCE_MODELS: JSON.stringify([
          {
            id: model,
            pricing: { prompt: '1', completion: '2' },
            contextWindow: 8_192,
            maxOutputTokens: 1_000,
            upstream: { kind: 'openai-compatible', baseUrl: upstream.baseUrl },
          },
        ]),
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
      await upstream?.stop()
      if (folder) rmSync(folder, { recursive: true, force: true })
      if (databaseUrl !== undefined) {
        const client = new pg.Client({ connectionString: databaseUrl })
        await client.connect()
        await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
        await client.end()
      }
    })

    it('a key from tollgate keys works at both; 50 calls over both on a credit for 20 reservations serve 20', async () => {
      const credit = formatAmount(20n * reservation)
      const created = JSON.parse(await keysCli('create', '--credit', credit, '--json')) as {
        id: string
        key: string
        credit: string
      }
      expect(created.credit).toBe(credit)
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          chat(i % 2 === 0 ? a : b, created.key, { model, messages }),
        ),
      )
      const served = answers.filter((r) => r.status === 200)
      expect(served).toHaveLength(20)
      expect(answers.filter((r) => r.status === 402)).toHaveLength(30)
      // Each served call kept the cost of its usage; the rest of its reservation came back.
      const spent = await spentBy(pricing, served)
      const listed = JSON.parse(await keysCli('list', '--json')) as { id: string; credit: string }[]
      expect(listed.find((k) => k.id === created.id)?.credit).toBe(
        formatAmount(20n * reservation - spent),
      )
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
