/**
 * A gateway on the ledger emulator says everywhere a buyer looks that its payments are test money,
 * and how to pay it; the commands it shows do pay it. A gateway on another ledger says nothing of
 * the kind.
 */
import { execFile, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { useTestLedger } from 'tollgate/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cliArgs } from '../../scripts/cliUnderTest.js'
import { useTestGateway } from '../server/testHelpers.js'

const run = promisify(execFile)

const chain = useTestLedger({ beforeAll, afterAll })
const emulated = useTestGateway()
// Another ledger (a full node as far as the gateway knows): no test-money notice.
const real = useTestGateway(() => ({
  config: {
    ledgerUrl: chain.url,
    payTo: `0x${'ab'.repeat(32)}`,
    store: 'memory',
    upstreams: 'stub',
  },
}))
/** The buyer's home and the banner gateway's data. */
let folder: string

beforeAll(() => {
  folder = mkdtempSync(join(tmpdir(), 'tollgate-test-money-'))
})

afterAll(() => {
  rmSync(folder, { recursive: true, force: true })
})

const text = async (url: string) => (await fetch(url)).text()
const headline = (ledger: string) =>
  `TEST MONEY: this gateway runs on a local Sui ledger emulator (${ledger}). Payments to it are not real money; real USDC sent here is not accepted.`

describe('test money is labelled', () => {
  it('on the catalog page and in llms.txt, with the ledger URL and a tollgate pay line', async () => {
    const ledger = emulated.ledger.url
    const page = await text(`${emulated.url}/`)
    expect(page).toContain(`<aside class="test-money" role="note"><strong>${headline(ledger)}`)
    expect(page).toContain(`npx tollgate wallet fund --ledger ${ledger} --usdc 1`)
    expect(page).toContain(
      `npx tollgate pay --ledger ${ledger} POST &#39;${emulated.publicBaseUrl}/`,
    )
    const llms = await text(`${emulated.url}/llms.txt`)
    expect(llms).toContain(`**${headline(ledger)}**`)
    expect(llms).toMatch(
      new RegExp(
        `\`\`\`sh\\nnpx tollgate wallet new\\nnpx tollgate wallet fund --ledger ${ledger} --usdc 1\\nnpx tollgate pay --ledger ${ledger} POST '${emulated.publicBaseUrl}/[^']+' -d '\\{.+\\}'\\n\`\`\``,
      ),
    )
  })

  it('nowhere on a gateway whose ledger is not the emulator', async () => {
    expect(await text(`${real.url}/`)).not.toContain('TEST MONEY')
    expect(await text(`${real.url}/llms.txt`)).not.toContain('TEST MONEY')
  })

  it('and the commands it shows pay this gateway', { timeout: 180_000 }, async () => {
    const llms = await text(`${emulated.url}/llms.txt`)
    const commands = (llms.split('```sh\n')[1] ?? '').split('\n```')[0]?.split('\n') ?? []
    expect(commands).toHaveLength(3)
    const env = { ...process.env, TOLLGATE_HOME: join(folder, 'buyer'), NO_COLOR: '1' }
    let last = ''
    for (const command of commands) {
      // `npx tollgate` is this checkout's CLI.
      const tollgate = [process.execPath, ...cliArgs()].map((word) => `'${word}'`).join(' ')
      const local = command.replace(/^npx tollgate /, `${tollgate} `)
      last = (await run('bash', ['-c', local], { env })).stdout
    }
    expect(last).toMatch(/paid\s+\d+\.\d{6} USDC in x402/)
    expect(last).toMatch(/status\s+200/)
  })

  it('in the start banner of tollgate gateway', { timeout: 120_000 }, async () => {
    // One process (no wrapper), so that killing it leaves nothing behind.
    const child = spawn(process.execPath, cliArgs('gateway', '--port', '0'), {
      env: {
        PATH: process.env.PATH ?? '',
        NO_COLOR: '1',
        DATA_DIR: join(folder, 'banner'),
        LOG_LEVEL: 'silent',
        EMULATOR_PORT: '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => resolve(), 60_000)
        child.stdout.on('data', (chunk: Buffer) => {
          stdout += chunk.toString()
          if (/npx tollgate pay .*\n/.test(stdout)) {
            clearTimeout(timer)
            resolve()
          }
        })
        child.on('exit', () => reject(new Error(`the gateway exited:\n${stdout}`)))
      })
    } finally {
      child.kill('SIGKILL')
    }
    const ledger = /ledger\s+(http:\/\/127\.0\.0\.1:\d+) \(sui:mainnet, local emulator\)/.exec(
      stdout,
    )?.[1]
    expect(ledger).toBeDefined()
    expect(stdout).toContain(headline(ledger as string))
    expect(stdout).toMatch(/pay it\s+npx tollgate wallet new\n/)
    expect(stdout).toContain(`npx tollgate wallet fund --ledger ${ledger} --usdc 1\n`)
    expect(stdout).toMatch(
      new RegExp(`npx tollgate pay --ledger ${ledger} POST 'http://127\\.0\\.0\\.1:\\d+/`),
    )
  })
})
