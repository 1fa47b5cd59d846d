/**
 * Two `tollgate gateway` processes (the real CLI) on one SQLite store and one ledger, with one
 * operator key, race to anchor the same confidential receipts: each worker polls every 100 ms, and
 * `POST /v1/aci/anchor/{id}` is sent to both at once for every receipt. The ledger holds exactly one
 * successful `ReceiptAnchored` transaction per receipt, the one both processes answer.
 */
import { type ChildProcess, fork } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { useTestLedger } from 'tollgate/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cliModule } from '../../scripts/cliUnderTest.js'
import { openDatabase } from '../db/database.js'
import { createKeyStore } from './keys.js'

const cli = cliModule()
const model = 'confidential/llama-3.3-70b'

type Gateway = { url: string; child: ChildProcess; exited: Promise<number | null> }

describe('two gateway processes racing to anchor the same receipts', () => {
  const chain = useTestLedger({ beforeAll, afterAll })
  let folder: string
  let env: Record<string, string>
  const gateways: Gateway[] = []

  function start(): Promise<Gateway> {
    const child = fork(cli.file, ['gateway', '--port', '0'], {
      execArgv: cli.execArgv,
      env,
      stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
    })
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve))
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

  beforeAll(async () => {
    folder = mkdtempSync(join(tmpdir(), 'tollgate-anchor-race-'))
    env = {
      PATH: process.env.PATH ?? '',
      LEDGER_URL: chain.url,
      OPERATOR_KEY: chain.createTestWallet({ usdc: '1', sui: '1' }).getSecretKey(),
      RECEIPT_ANCHOR_PACKAGE: chain.modulesPackage,
      CHALLENGE_SECRETS: 'one-secret-shared-by-both-gateway-processes',
      UPSTREAMS: 'stub',
      STORE: 'memory',
      // Both workers poll the shared outbox every 100 ms.
      REFUND_INTERVAL_MS: '100',
      LOG_LEVEL: 'error',
      DATA_DIR: folder,
      NO_COLOR: '1',
    }
    // One first, so the store's migrations run once; then the second on the same store.
    gateways.push(await start())
    gateways.push(await start())
  }, 120_000)

  afterAll(async () => {
    for (const g of gateways) g.child.kill('SIGTERM')
    await Promise.all(gateways.map((g) => g.exited))
    if (folder) rmSync(folder, { recursive: true, force: true })
  })

  it('anchors each receipt in exactly one ledger transaction', async () => {
    const [a, b] = gateways as [Gateway, Gateway]
    const database = await openDatabase({ kind: 'sqlite', file: join(folder, 'gateway.db') })
    const { key } = await createKeyStore(database.db).create({ credit: 100_000n })
    await database.close()

    const ids: string[] = []
    for (let i = 0; i < 6; i++) {
      const answer = await fetch(`${(i % 2 === 0 ? a : b).url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model, messages: [{ role: 'user', content: `Hi ${i}` }] }),
      })
      expect(answer.status).toBe(200)
      ids.push(answer.headers.get('x-receipt-id') ?? '')
      await answer.text()
    }
    // Both processes asked to anchor every receipt at the same moment.
    await Promise.all(
      ids.flatMap((id) =>
        [a, b].map((g) => fetch(`${g.url}/v1/aci/anchor/${id}`, { method: 'POST' })),
      ),
    )
    const digests = new Map<string, string>()
    const deadline = Date.now() + 60_000
    while (digests.size < ids.length && Date.now() < deadline) {
      for (const id of ids) {
        const anchor = (await (await fetch(`${b.url}/v1/aci/anchor/${id}`)).json()) as {
          state: string
          digest: string
        }
        if (anchor.state === 'anchored') digests.set(id, anchor.digest)
      }
      if (digests.size < ids.length) await new Promise((r) => setTimeout(r, 200))
    }
    expect(digests.size).toBe(ids.length)
    // Longer than the retry backoff (5 s), for any late duplicate to land.
    await new Promise((r) => setTimeout(r, 6_000))

    const anchoredBy = new Map<string, string[]>()
    for (const tx of chain.engine.state.transactions.values()) {
      if (!tx.status.success) continue
      for (const event of tx.events) {
        if (!event.eventType.endsWith('::receipt_anchor::ReceiptAnchored')) continue
        const id = String(event.json.receipt_id)
        anchoredBy.set(id, [...(anchoredBy.get(id) ?? []), tx.digest])
      }
    }
    for (const id of ids) {
      expect(anchoredBy.get(id)).toEqual([digests.get(id)])
      const fromA = (await (await fetch(`${a.url}/v1/aci/anchor/${id}`)).json()) as {
        digest: string
      }
      expect(fromA.digest).toBe(digests.get(id))
    }
  }, 120_000)
})
