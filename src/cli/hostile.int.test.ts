/**
 * The CLI's signing paths against a hostile server (a real HTTP server on loopback that alters
 * what it was asked for), run as a user runs them: subprocesses with their own config folder, the
 * wallet funded on a local ledger with `tollgate wallet fund` (which records the ledger and its
 * package ids), no `--ledger` afterwards.
 *
 * - `tollgate job fund`: the gateway's 402 names the attacker's package and 20 USDC for 1 asked →
 *   `terms_mismatch`, exit 2, nothing sent to `/v1/jobs/fund`, the wallet's USDC untouched.
 * - `tollgate listing submit`: the gateway's prepare asks to sign the message of another body →
 *   `terms_mismatch`, exit 2, nothing submitted.
 * - `tollgate job review`: the message signed is built from the user's own id, rating and comment
 *   (the server supplies nothing that is signed).
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { verifyPersonalMessageSignature } from '@mysten/sui/verify'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { mutationMessage } from '../../reference-gateway/marketplace/signing.js'
import { cliArgs } from '../../scripts/cliUnderTest.js'
import { paymentRequiredResponse } from '../challenge.js'
import { reviewMessage } from '../escrow/review.js'
import { termsHash } from '../escrow/terms.js'
import { useTestLedger } from '../testing/index.js'

const run = promisify(execFile)
const chain = useTestLedger({ beforeAll, afterAll })
let hostile: Server
let hostileUrl: string
let home: string
/** Every request the hostile server received: method, path and body. */
const received: { path: string; body: string }[] = []
const attackerPackage = `0x${'ee'.repeat(32)}`

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => Promise<void>

const routes: Record<string, Handler> = {
  // The job's terms: the attacker's package and 20 USDC, whatever was asked.
  'POST /v1/jobs': async (_req, body, res) => {
    const asked = JSON.parse(body) as { seller: string }
    const terms = {
      package: attackerPackage,
      config: chain.escrow.config,
      seller: asked.seller,
      amount: '20000000',
      asset: chain.usdcType,
      feeBps: 500,
      deliverByMs: Date.now() + 3_600_000,
      reviewMs: 3_600_000,
      terms: termsHash({ asked }),
    }
    const answer = paymentRequiredResponse(
      {
        price: 20_000_000n,
        payTo: asked.seller,
        asset: chain.usdcType,
        network: 'sui:mainnet',
        resource: `${hostileUrl}/v1/jobs`,
        description: 'Escrowed job',
        escrow: terms,
      },
      { secrets: ['a-hostile-secret-of-at-least-32-bytes!!'] },
    )
    res.writeHead(answer.status, Object.fromEntries(answer.headers))
    res.end(await answer.text())
  },
  // A nonce, and the message of another body (one listing the attacker's URL).
  'POST /v1/agent/endpoint/prepare': async (_req, _body, res) => {
    const nonce = 'ab'.repeat(16)
    const json = {
      nonce,
      message: mutationMessage(nonce, 'cd'.repeat(32)),
      sha256: 'cd'.repeat(32),
    }
    res.writeHead(201, { 'content-type': 'application/json' })
    res.end(JSON.stringify(json))
  },
}

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'tollgate-hostile-'))
  hostile = createServer(async (req, res) => {
    let body = ''
    for await (const chunk of req) body += String(chunk)
    received.push({ path: `${req.method} ${req.url}`, body })
    const route = routes[`${req.method} ${req.url}`]
    if (route) return route(req, body, res)
    res.writeHead(201, { 'content-type': 'application/json' })
    res.end('{"ok":true}')
  })
  await new Promise<void>((resolve) => hostile.listen(0, '127.0.0.1', resolve))
  hostileUrl = `http://127.0.0.1:${(hostile.address() as AddressInfo).port}`
})

afterAll(async () => {
  await new Promise((resolve) => hostile?.close(resolve))
  if (home) rmSync(home, { recursive: true, force: true })
})

type Result = { code: number; stdout: string; stderr: string }

async function tollgate(...args: string[]): Promise<Result> {
  const env = {
    ...process.env,
    TOLLGATE_HOME: home,
    NO_COLOR: '1',
    FORCE_COLOR: '0',
    TOLLGATE_LEDGER: '',
    TOLLGATE_AGENT_KEY: '',
  }
  try {
    const { stdout, stderr } = await run(process.execPath, cliArgs(...args), {
      env,
      timeout: 180_000,
    })
    return { code: 0, stdout, stderr }
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string }
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' }
  }
}

async function usdc(owner: string): Promise<bigint> {
  const client = chain.client
  const { balance } = await client.core.getBalance({ owner, coinType: chain.usdcType })
  return BigInt(balance.balance)
}

describe('the CLI signs nothing a hostile server altered', { timeout: 600_000 }, () => {
  let address: string

  it('records the local ledger and its packages when the wallet is funded', async () => {
    const created = await tollgate('wallet', 'new', '--json')
    expect(created.code, created.stderr).toBe(0)
    address = (JSON.parse(created.stdout) as { address: string }).address
    const funded = await tollgate('wallet', 'fund', '--ledger', chain.url, '--usdc', '25')
    expect(funded.code, funded.stderr).toBe(0)
    const settings = JSON.parse(readFileSync(join(home, 'settings.json'), 'utf8'))
    expect(settings).toMatchObject({
      ledger: chain.url,
      localLedger: {
        url: chain.url,
        modulesPackage: chain.modulesPackage,
        escrowConfig: chain.escrow.config,
        usdcType: chain.usdcType,
      },
    })
  })

  it('job fund: 20 USDC into the attacker’s package for 1 asked → terms_mismatch, nothing sent', async () => {
    const seller = Ed25519Keypair.generate().toSuiAddress()
    const before = await usdc(address)
    const result = await tollgate(
      'job',
      'fund',
      '--gateway',
      hostileUrl,
      '--seller',
      seller,
      '--amount',
      '1',
      '--description',
      'translate',
      '--json',
    )
    expect(result.code, result.stdout + result.stderr).toBe(2)
    const error = JSON.parse(result.stdout).error as { code: string; message: string }
    expect(error.code).toBe('terms_mismatch')
    expect(error.message).toContain(`package ${attackerPackage} (expected ${chain.modulesPackage})`)
    expect(error.message).toContain('amount 20.000000 (expected 1.000000)')
    expect(received.map((r) => r.path)).toEqual(['POST /v1/jobs'])
    expect(await usdc(address)).toBe(before)
  })

  it('listing submit: a message over another body → terms_mismatch, nothing submitted', async () => {
    received.length = 0
    const result = await tollgate(
      'listing',
      'submit',
      'http://127.0.0.1:9/v1/answer',
      '--name',
      'mine',
      '--gateway',
      hostileUrl,
      '--json',
    )
    expect(result.code, result.stdout + result.stderr).toBe(2)
    expect(JSON.parse(result.stdout).error.code).toBe('terms_mismatch')
    expect(received.map((r) => r.path)).toEqual(['POST /v1/agent/endpoint/prepare'])
  })

  it('job review: signs the message of the user’s own id, rating and comment', async () => {
    received.length = 0
    const jobId = `0x${'12'.repeat(32)}`
    const result = await tollgate(
      'job',
      'review',
      jobId,
      '--rating',
      '4',
      '--comment',
      'fine',
      '--gateway',
      hostileUrl,
      '--json',
    )
    expect(result.code, result.stdout + result.stderr).toBe(0)
    expect(received.map((r) => r.path)).toEqual([`POST /v1/jobs/${jobId}/review`])
    const sent = JSON.parse(received[0]?.body ?? '{}') as { signature: string; reviewer: string }
    expect(sent.reviewer).toBe(address)
    await verifyPersonalMessageSignature(
      reviewMessage({ purchaseId: jobId, rating: 4, comment: 'fine' }),
      sent.signature,
      { address },
    )
  })
})
