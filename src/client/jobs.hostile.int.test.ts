/**
 * A hostile gateway (a real HTTP server on loopback) answers `POST /v1/jobs` with escrow terms
 * altered from what the buyer asked: another package, config object, asset, seller or amount. The
 * job client, pinned to the buyer's own escrow deployment, signs and sends nothing; the buyer's
 * USDC on the ledger is untouched. The same terms, unaltered, fund a job (the check is not a
 * blanket refusal), and a later move on a job of another package is refused too.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { paymentRequiredResponse } from '../challenge.js'
import { isPaymentError } from '../errors.js'
import type { EscrowTerms } from '../escrow/terms.js'
import { useEscrowBench } from '../escrow/testHelpers.js'
import { WORMHOLE_USDC_TYPE } from '../testing/index.js'
import { createPayingFetch } from './fetch.js'
import { createJobClient, type MoveSubmitter, type SigningMove } from './jobs.js'

const bench = useEscrowBench({ checkEachTest: false })
let server: Server
let base: string
/** What the hostile server sends as the escrow terms of the next 402. */
let offered: EscrowTerms
/** Every request the hostile server received (method and path). */
const received: string[] = []

beforeAll(async () => {
  server = createServer(async (req, res) => {
    received.push(`${req.method} ${req.url}`)
    for await (const _ of req) {
      // drain
    }
    if (req.method === 'POST' && req.url === '/v1/jobs') {
      const answer = paymentRequiredResponse(
        {
          price: BigInt(offered.amount),
          payTo: offered.seller,
          asset: bench.ledger.usdcType,
          network: 'sui:mainnet',
          resource: `${base}/v1/jobs`,
          description: 'Escrowed job',
          escrow: offered,
        },
        { secrets: ['a-hostile-secret-of-at-least-32-bytes!!'] },
      )
      res.writeHead(answer.status, Object.fromEntries(answer.headers))
      res.end(await answer.text())
      return
    }
    res.writeHead(500, { 'content-type': 'application/json' })
    res.end('{"code":"job_move_failed","detail":"the hostile server relays nothing"}')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve))
})

/** Asks the hostile server for a job and returns its `ESCROW_REQUIRED` refusal. */
async function askForJob(buyer: Ed25519Keypair): Promise<unknown> {
  const pay = createPayingFetch({ signer: buyer, ledger: bench.ledger.url, limits: false })
  try {
    await pay(`${base}/v1/jobs`, { method: 'POST', body: JSON.stringify({ seller: 'x' }) })
  } catch (error) {
    if (isPaymentError(error) && error.code === 'ESCROW_REQUIRED') return error
    throw error
  }
  throw new Error('expected ESCROW_REQUIRED')
}

function client(buyer: Ed25519Keypair, escrow = bench.pinned) {
  const sent: Parameters<MoveSubmitter>[0][] = []
  const signing: SigningMove[] = []
  const jobs = createJobClient({
    signer: buyer,
    ledger: bench.ledger.url,
    escrow,
    onSign: (move) => void signing.push(move),
    // Records what would have been relayed; relays nothing.
    submit: async (move) => {
      sent.push(move)
      throw new Error('not relayed')
    },
  })
  return { jobs, sent, signing }
}

const attacker = Ed25519Keypair.generate().toSuiAddress()
const otherId = `0x${'ab'.repeat(32)}`

describe('a hostile gateway cannot get a job funded on terms the buyer did not ask for', () => {
  it.each([
    ['its own package', (t: EscrowTerms) => ({ ...t, package: otherId }), 'package'],
    [
      'its own config object (fee, treasury)',
      (t: EscrowTerms) => ({ ...t, config: otherId }),
      'config',
    ],
    ['another coin', (t: EscrowTerms) => ({ ...t, asset: WORMHOLE_USDC_TYPE }), 'asset'],
    ['another seller', (t: EscrowTerms) => ({ ...t, seller: attacker }), 'seller'],
    ['20 USDC for 1 asked', (t: EscrowTerms) => ({ ...t, amount: '20000000' }), 'amount'],
  ])(
    'refuses terms naming %s: terms_mismatch, nothing signed or sent',
    async (_name, alter, field) => {
      const buyer = bench.ledger.createTestWallet({ usdc: '25', sui: '1' })
      const seller = bench.ledger.createTestWallet({ usdc: '0' }).toSuiAddress()
      offered = alter(bench.terms(seller, 1_000_000n))
      const refusal = await askForJob(buyer)
      const { jobs, sent, signing } = client(buyer)
      const error = await jobs.fundJob(refusal, { seller, amount: '1' }).catch((e: unknown) => e)
      expect(isPaymentError(error) && error.code).toBe('terms_mismatch')
      expect(
        (error as { details: { differs: { field: string }[] } }).details.differs.map(
          (d) => d.field,
        ),
      ).toEqual([field])
      expect(signing).toEqual([])
      expect(sent).toEqual([])
      expect(await bench.usdc(buyer.toSuiAddress())).toBe(25_000_000n)
      expect(received.filter((r) => r.includes('/fund'))).toEqual([])
    },
  )

  it('funds the same terms unaltered, on the pinned package, and shows them before signing', async () => {
    const buyer = bench.ledger.createTestWallet({ usdc: '5', sui: '1' })
    const seller = bench.ledger.createTestWallet({ usdc: '0' }).toSuiAddress()
    offered = bench.terms(seller, 1_000_000n)
    const signing: SigningMove[] = []
    const jobs = createJobClient({
      signer: buyer,
      ledger: bench.ledger.url,
      escrow: bench.pinned,
      onSign: (move) => void signing.push(move),
    })
    const { jobId } = await jobs.fundJob(await askForJob(buyer), { seller, amount: '1' })
    expect(signing).toMatchObject([
      { move: 'fund', package: bench.ledger.modulesPackage, terms: { seller, amount: '1000000' } },
    ])
    expect(await bench.usdc(buyer.toSuiAddress())).toBe(4_000_000n)
    expect((await bench.job(jobId))?.state).toBe('funded')
  })

  it('refuses a later move on a job of another package than the pinned one', async () => {
    const buyer = bench.ledger.createTestWallet({ usdc: '5', sui: '1' })
    const seller = bench.ledger.createTestWallet({ usdc: '0' }).toSuiAddress()
    const honest = createJobClient({
      signer: buyer,
      ledger: bench.ledger.url,
      escrow: bench.pinned,
    })
    const { jobId } = await honest.fundJob(bench.terms(seller, 1_000_000n))
    // A client pinned to another deployment: the job on the ledger is not of its package.
    const { jobs, sent, signing } = client(buyer, { ...bench.pinned, package: otherId })
    for (const move of [
      () => jobs.refund(jobId),
      () => jobs.release(jobId),
      () => jobs.reject(jobId),
    ]) {
      const error = await move().catch((e: unknown) => e)
      expect(isPaymentError(error) && error.code).toBe('terms_mismatch')
    }
    expect(signing).toEqual([])
    expect(sent).toEqual([])
  })
})
