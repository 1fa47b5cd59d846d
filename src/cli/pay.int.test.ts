/**
 * `tollgate wallet` and `tollgate pay` as a user runs them: subprocesses with their own config
 * folder (TOLLGATE_HOME), against local sellers on the ledger emulator.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, statSync } from 'node:fs'
import { type AddressInfo, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { beforeAll, describe, expect, it } from 'vitest'
import { cliArgs } from '../../scripts/cliUnderTest.js'
import { useSellers } from '../client/testHelpers.js'

const run = promisify(execFile)
const sellers = useSellers()
let home: string
const outputs: string[] = []

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'tollgate-cli-'))
})

/** A loopback port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  await new Promise((resolve) => server.close(resolve))
  return port
}

type Result = { code: number; stdout: string; stderr: string }

async function tollgate(...args: string[]): Promise<Result> {
  const env = { ...process.env, TOLLGATE_HOME: home, NO_COLOR: '1', FORCE_COLOR: '0' }
  try {
    const { stdout, stderr } = await run(process.execPath, cliArgs(...args), {
      env,
      timeout: 120_000,
    })
    outputs.push(stdout, stderr)
    return { code: 0, stdout, stderr }
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string }
    outputs.push(e.stdout ?? '', e.stderr ?? '')
    return {
      code: typeof e.code === 'number' ? e.code : -1,
      stdout: e.stdout ?? '',
      stderr: e.stderr ?? '',
    }
  }
}

// Each subprocess loads the Sui SDK through tsx: seconds apiece on a busy machine.
describe('tollgate wallet and tollgate pay', { timeout: 300_000 }, () => {
  it('creates a wallet in a 0600 file, funds it from the faucet and shows the balance', async () => {
    const created = await tollgate('wallet', 'new', '--json')
    expect(created.code).toBe(0)
    const { address, file } = JSON.parse(created.stdout) as { address: string; file: string }
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect((await tollgate('wallet', 'address')).stdout.trim()).toBe(address)
    expect((await tollgate('wallet', 'new')).code).toBe(2)

    expect(
      (await tollgate('wallet', 'fund', '--ledger', sellers.chain.url, '--usdc', '1')).code,
    ).toBe(0)
    const balance = await tollgate('wallet', 'balance', '--ledger', sellers.chain.url, '--json')
    expect(JSON.parse(balance.stdout)).toMatchObject({
      address,
      usdc: '1.000000',
      usdcAddressBalance: '1.000000',
      sui: '1.000000000',
    })
  })

  it('pays a 402 and prints the challenge, the payment, the digest and the pretty JSON answer', async () => {
    const before = await sellers.usdcOf(sellers.payTo)
    const result = await tollgate(
      'pay',
      'POST',
      `${sellers.base}/paid`,
      '-d',
      '{"q":"sui"}',
      '--max',
      '0.10',
      '--ledger',
      sellers.chain.url,
    )
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(
      /challenge\s+0\.020000 USDC to 0x[0-9a-f]{64} on sui:mainnet \(offered: x402, mpp\)/,
    )
    expect(result.stdout).toMatch(/paid\s+0\.020000 USDC in x402 \(gasless form\)/)
    expect(result.stdout).toMatch(/digest\s+[1-9A-HJ-NP-Za-km-z]{32,44}/)
    expect(result.stdout).toMatch(/status\s+200/)
    expect(result.stdout).toContain('{\n  "ok": true,')
    expect(result.stdout).toContain('"q": "sui"')
    expect(await sellers.usdcOf(sellers.payTo)).toBe(before + 20_000n)
  })

  it('prints one JSON object with --json, whose digest is the one the seller settled', async () => {
    const result = await tollgate(
      'pay',
      `${sellers.base}/mpp-only`,
      '-d',
      '{}',
      '--json',
      '--ledger',
      sellers.chain.url,
    )
    expect(result.code).toBe(0)
    const out = JSON.parse(result.stdout)
    expect(out).toMatchObject({
      ok: true,
      status: 200,
      challenge: { dialect: 'mpp', amount: '0.020000', offered: ['mpp'] },
      payment: { dialect: 'mpp', amount: '0.020000', receipt: { status: 'success' } },
      body: { ok: true },
    })
    expect(out.payment.receipt.reference).toBe(out.payment.digest)
  })

  it('streams an SSE answer as it arrives', async () => {
    const result = await tollgate(
      'pay',
      `${sellers.base}/v1/chat/completions`,
      '--ledger',
      sellers.chain.url,
      '-d',
      JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true }),
    )
    expect(result.code).toBe(0)
    expect(result.stdout).toContain('data: {"id":"chatcmpl-test","object":"chat.completion.chunk"')
    expect(result.stdout.trimEnd().endsWith('data: [DONE]')).toBe(true)
  })

  it('refuses with exit 2 and the code: above --max, and above the wallet limit set by wallet limits', async () => {
    const above = await tollgate(
      'pay',
      'POST',
      `${sellers.base}/dear`,
      '--max',
      '0.05',
      '--ledger',
      sellers.chain.url,
    )
    expect(above.code).toBe(2)
    expect(above.stderr).toContain('error PRICE_ABOVE_MAX:')

    expect((await tollgate('wallet', 'limits', '--per-tx', '0.05')).code).toBe(0)
    const limited = await tollgate(
      'pay',
      'POST',
      `${sellers.base}/dear`,
      '--json',
      '--ledger',
      sellers.chain.url,
    )
    expect(limited.code).toBe(2)
    expect(JSON.parse(limited.stdout)).toMatchObject({ ok: false, error: { code: 'LIMIT_PER_TX' } })
    const limits = JSON.parse((await tollgate('wallet', 'limits', '--json')).stdout)
    expect(limits).toMatchObject({ perTransaction: '0.050000', perDay: '100.000000' })
    // What the earlier calls paid stays counted across processes: 0.02 + 0.02 + 0.05.
    expect(limits.spentLast24h).toBe('0.090000')
  })

  it('says what to check when the seller, the ledger or a payable offer is missing', async () => {
    const closed = `http://127.0.0.1:${await closedPort()}`
    const noSeller = await tollgate('pay', `${closed}/paid`, '--ledger', sellers.chain.url)
    expect(noSeller.code).toBe(1)
    expect(noSeller.stderr.trim()).toBe(
      `error unreachable: Cannot reach ${closed}/paid (connect ECONNREFUSED ${closed.slice(7)}). Check the URL and that the seller is running.`,
    )

    // A usage error names its stable code, and exits 1 like any command that could not run.
    const badMethod = await tollgate('pay', 'FETCH', `${sellers.base}/paid`)
    expect(badMethod.code).toBe(1)
    expect(badMethod.stderr.trim()).toBe('error invalid_options: Unknown HTTP method FETCH.')

    const noLedger = await tollgate('pay', `${sellers.base}/paid`, '--ledger', closed)
    expect(noLedger.code).toBe(2)
    expect(noLedger.stderr).toContain(
      `error ledger_unavailable: The ledger at ${closed} did not answer (`,
    )
    expect(noLedger.stderr).toContain(
      '): the payment could not be prepared. Check the ledger URL (the local emulator: tollgate ledger).',
    )

    // Offers on testnet only, and one in wUSDC: each offer's reason is listed.
    const testnet = await tollgate('pay', `${sellers.base}/testnet`, '--ledger', sellers.chain.url)
    expect(testnet.code).toBe(2)
    expect(testnet.stderr).toContain(
      'error NO_PAYABLE_REQUIREMENT: No offer is payable in USDC on sui:mainnet with scheme exact. Offers: x402 v2: network sui:testnet is not sui:mainnet; x402: network sui:testnet is not sui:mainnet; mpp: network sui:testnet is not sui:mainnet.',
    )
    const wusdc = await tollgate('pay', `${sellers.base}/wusdc`, '--ledger', sellers.chain.url)
    expect(wusdc.stderr).toMatch(
      /Offers: x402 v2: asset 0x[0-9a-f]+::\w+::\w+ is not the USDC of sui:mainnet; x402: asset 0x[0-9a-f]+::\w+::\w+ is not the USDC of sui:mainnet; mpp: /,
    )
  })

  it('exits 1 on a non-2xx answer that needed no payment, and never prints the key', async () => {
    const missing = await tollgate('pay', `${sellers.base}/nowhere`, '--ledger', sellers.chain.url)
    expect(missing.code).toBe(1)
    expect(missing.stdout).toMatch(/status\s+404/)
    const wallet = JSON.parse(readFileSync(join(home, 'wallet.json'), 'utf8')) as {
      secretKey: string
    }
    for (const output of outputs) {
      expect(output).not.toContain(wallet.secretKey)
      expect(output).not.toContain('suiprivkey')
    }
  })
})
