/**
 * Escrowed jobs through the gateway: the routes over HTTP (terms, relayed moves, refusals, the
 * OpenAPI document, reviews), and a whole job round trip with `tollgate job …` run as a user runs
 * it (subprocesses with their own wallets), against the ledger emulator.
 */
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { toBase64 } from '@mysten/sui/utils'
import { compileErrors, validate } from '@readme/openapi-parser'
import { useTestLedger } from 'tollgate/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cliArgs } from '../../scripts/cliUnderTest.js'
import { Escrow } from '../../src/index.js'
import { useTestGateway } from '../server/testHelpers.js'

const run = promisify(execFile)
const chain = useTestLedger({ beforeAll, afterAll })
// On the test ledger (read once it has started), with the escrow it deploys.
const gateway = useTestGateway(() => ({
  config: {
    ledgerUrl: chain.url,
    operatorKey: chain.createTestWallet({ usdc: '1', sui: '10' }).getSecretKey(),
    challengeSecrets: 'a-test-secret-of-at-least-thirty-two-bytes',
    store: 'sqlite',
    upstreams: 'stub',
    escrowPackage: chain.modulesPackage,
    escrowConfig: chain.escrow.config,
  },
}))

const post = (path: string, body: unknown) =>
  fetch(`${gateway.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })

async function termsFor(seller: string, amount = '2.000001') {
  const offer = await post('/v1/jobs', { seller, amount, description: 'translate a page' })
  expect(offer.status).toBe(402)
  const body = (await offer.json()) as { accepts: { extra: { escrow: unknown } }[] }
  return Escrow.EscrowTermsSchema.parse(body.accepts[0]?.extra.escrow)
}

async function signed(signer: Ed25519Keypair, tx: Promise<{ build(): Promise<Uint8Array> }>) {
  const bytes = await (await tx).build()
  const { signature } = await signer.signTransaction(bytes)
  return { transaction: toBase64(bytes), signature }
}

describe('the /v1/jobs routes', () => {
  it('offers escrow terms with the current fee, relays the moves and refuses the wrong ones', async () => {
    const buyer = chain.createTestWallet({ usdc: '5' })
    const seller = chain.createTestWallet({ usdc: '0' })
    const stranger = chain.createTestWallet({ usdc: '5' })
    const terms = await termsFor(seller.toSuiAddress())
    expect(terms).toMatchObject({ amount: '2000001', feeBps: 500, seller: seller.toSuiAddress() })

    const pkg = chain.modulesPackage
    const fund = await post(
      '/v1/jobs/fund',
      await signed(
        buyer,
        Escrow.buildFund({
          client: chain.client,
          package: pkg,
          sender: buyer.toSuiAddress(),
          terms,
        }),
      ),
    )
    expect(fund.status).toBe(201)
    const { jobId } = (await fund.json()) as { jobId: string }
    const job = await Escrow.readJob(chain.client, jobId, { package: pkg })
    if (!job) throw new Error('no job')
    expect((await (await fetch(`${gateway.url}/v1/jobs/${jobId}`)).json()).state).toBe('funded')

    // A release signed by a stranger is relayed, and the ledger refuses it: 409, nothing moves.
    const byStranger = await post(
      `/v1/jobs/${jobId}/release`,
      await signed(
        stranger,
        Escrow.buildRelease({
          client: chain.client,
          package: pkg,
          sender: stranger.toSuiAddress(),
          job,
        }),
      ),
    )
    expect(byStranger.status).toBe(409)
    const strangerRefusal = (await byStranger.json()) as { code: string; detail: string }
    expect(strangerRefusal.code).toBe('job_move_failed')
    // The abort by its name, not only "abort code: 16".
    expect(strangerRefusal.detail).toMatch(
      /^ENOT_PARTY \(abort code 16: release or refund by someone who is neither buyer nor seller\), in '0x[0-9a-f]+::escrow::release'/,
    )
    // A release transaction posted on the refund route, or on another job's path: 400, not relayed.
    const release = await signed(
      buyer,
      Escrow.buildRelease({
        client: chain.client,
        package: pkg,
        sender: buyer.toSuiAddress(),
        job,
      }),
    )
    expect((await post(`/v1/jobs/${jobId}/refund`, release)).status).toBe(400)
    expect((await post(`/v1/jobs/0x${'ab'.repeat(32)}/release`, release)).status).toBe(400)
    expect((await post(`/v1/jobs/${jobId}/release`, { transaction: 'x' })).status).toBe(400)
    expect((await fetch(`${gateway.url}/v1/jobs/0x${'ab'.repeat(32)}`)).status).toBe(404)
    expect((await post('/v1/jobs', { seller: 'nope', amount: '1', description: 'x' })).status).toBe(
      400,
    )
    const after = await Escrow.readJob(chain.client, jobId, { package: pkg })
    expect(after?.state).toBe('funded')
  })

  it('lists the job routes in a valid OpenAPI document', async () => {
    const doc = (await (await fetch(`${gateway.url}/openapi.json`)).json()) as {
      paths: Record<string, unknown>
    }
    for (const path of [
      '/v1/jobs',
      '/v1/jobs/fund',
      '/v1/jobs/{id}',
      '/v1/jobs/{id}/deliver',
      '/v1/jobs/{id}/release',
      '/v1/jobs/{id}/reject',
      '/v1/jobs/{id}/refund',
      '/v1/jobs/{id}/review',
    ]) {
      expect(doc.paths[path], path).toBeDefined()
    }
    const result = await validate(structuredClone(doc) as never)
    if (!result.valid) throw new Error(compileErrors(result))
  })

  it('takes a review only from the buyer of a released job, signed, once; never a self-purchase', async () => {
    const buyer = chain.createTestWallet({ usdc: '5' })
    const seller = chain.createTestWallet({ usdc: '0' })
    const pkg = chain.modulesPackage
    const review = async (signer: Ed25519Keypair, jobId: string, rating = 4, as?: string) => {
      const comment = 'good work'
      const { signature } = await signer.signPersonalMessage(
        Escrow.reviewMessage({ purchaseId: jobId, rating, comment }),
      )
      return post(`/v1/jobs/${jobId}/review`, {
        rating,
        comment,
        reviewer: as ?? signer.toSuiAddress(),
        signature,
      })
    }
    const reasonOf = async (response: Response) =>
      ((await response.json()) as { reason?: string }).reason

    // Self-purchase: the buyer is the seller; released, still no review.
    const self = await termsFor(buyer.toSuiAddress(), '1')
    const selfFund = await post(
      '/v1/jobs/fund',
      await signed(
        buyer,
        Escrow.buildFund({
          client: chain.client,
          package: pkg,
          sender: buyer.toSuiAddress(),
          terms: self,
        }),
      ),
    )
    const selfId = ((await selfFund.json()) as { jobId: string }).jobId
    const { createJobClient } = await import('../../src/client/index.js')
    const selfJobs = createJobClient({
      signer: buyer,
      ledger: chain.url,
      escrow: { package: pkg, config: chain.escrow.config, asset: chain.usdcType },
    })
    await selfJobs.deliver(selfId, Escrow.deliveryHash('x'))
    await selfJobs.release(selfId)
    const selfReview = await review(buyer, selfId)
    expect(selfReview.status).toBe(403)
    expect(await reasonOf(selfReview)).toBe('self_purchase')

    const terms = await termsFor(seller.toSuiAddress(), '1')
    const funded = await post(
      '/v1/jobs/fund',
      await signed(
        buyer,
        Escrow.buildFund({
          client: chain.client,
          package: pkg,
          sender: buyer.toSuiAddress(),
          terms,
        }),
      ),
    )
    const jobId = ((await funded.json()) as { jobId: string }).jobId
    // Not released yet.
    expect(await reasonOf(await review(buyer, jobId))).toBe('not_completed')
    await createJobClient({
      signer: seller,
      ledger: chain.url,
      escrow: { package: pkg, config: chain.escrow.config, asset: chain.usdcType },
    }).deliver(jobId, Escrow.deliveryHash('y'))
    await createJobClient({
      signer: buyer,
      ledger: chain.url,
      escrow: { package: pkg, config: chain.escrow.config, asset: chain.usdcType },
    }).release(jobId)
    // The seller cannot review; a signature by someone else for the buyer's address is refused.
    expect(await reasonOf(await review(seller, jobId))).toBe('not_buyer')
    expect((await review(seller, jobId, 5, buyer.toSuiAddress())).status).toBe(401)
    expect(await reasonOf(await review(buyer, jobId, 6))).toBe('invalid_rating')
    expect((await review(buyer, jobId, 4)).status).toBe(201)
    expect(await reasonOf(await review(buyer, jobId, 5))).toBe('already_reviewed')
    const stored = await (await fetch(`${gateway.url}/v1/jobs/${jobId}/review`)).json()
    expect(stored).toMatchObject({
      rating: 4,
      buyer: buyer.toSuiAddress(),
      seller: seller.toSuiAddress(),
    })
    // One review store: the job's review counts in the seller's public rating beside paid calls'.
    const profile = await (
      await fetch(`${gateway.url}/v1/reviews?seller=${seller.toSuiAddress()}`)
    ).json()
    expect(profile).toMatchObject({ rating: { average: 4, buyers: 1, count: 1 }, total: 1 })
    // The review weighs by the job's value (1 USDC, above the 0.10 minimum).
    expect(profile.reviews[0]).toMatchObject({
      purchase: jobId,
      rating: 4,
      text: 'good work',
      value: '1000000',
    })
  })
})

describe('tollgate job … round trip through the gateway', { timeout: 600_000 }, () => {
  type Result = { code: number; stdout: string; stderr: string }
  const tollgate = async (home: string, ...args: string[]): Promise<Result> => {
    const env = {
      ...process.env,
      TOLLGATE_HOME: home,
      TOLLGATE_GATEWAY: gateway.url,
      TOLLGATE_LEDGER: chain.url,
      // The buyer's own pin of the escrow deployment (never the gateway's terms).
      TOLLGATE_ESCROW_PACKAGE: chain.modulesPackage,
      TOLLGATE_ESCROW_CONFIG: chain.escrow.config,
      NO_COLOR: '1',
      FORCE_COLOR: '0',
    }
    try {
      const { stdout, stderr } = await run(process.execPath, cliArgs(...args), {
        env,
        timeout: 120_000,
      })
      return { code: 0, stdout, stderr }
    } catch (error) {
      const e = error as { code?: number; stdout?: string; stderr?: string }
      return {
        code: typeof e.code === 'number' ? e.code : -1,
        stdout: e.stdout ?? '',
        stderr: e.stderr ?? '',
      }
    }
  }
  const json = (r: Result) => {
    if (r.code !== 0) throw new Error(`exit ${r.code}: ${r.stdout}${r.stderr}`)
    return JSON.parse(r.stdout) as Record<string, unknown> & { job: Record<string, unknown> }
  }

  it('funds, delivers, releases and reviews with the CLI; a refunded job cannot be reviewed', async () => {
    const buyerHome = mkdtempSync(join(tmpdir(), 'tollgate-buyer-'))
    const sellerHome = mkdtempSync(join(tmpdir(), 'tollgate-seller-'))
    try {
      const [buyerWallet, sellerWallet] = await Promise.all([
        tollgate(buyerHome, 'wallet', 'new', '--json'),
        tollgate(sellerHome, 'wallet', 'new', '--json'),
      ])
      const buyer = (json(buyerWallet) as unknown as { address: string }).address
      const seller = (json(sellerWallet) as unknown as { address: string }).address
      chain.faucet({ address: buyer, usdc: '5', sui: '1' })
      chain.faucet({ address: seller, usdc: '0', sui: '1' })

      const funded = json(
        await tollgate(
          buyerHome,
          'job',
          'fund',
          '--seller',
          seller,
          '--amount',
          '2.000001',
          '--description',
          'translate',
          '--json',
        ),
      )
      const jobId = funded.jobId as string
      expect(funded).toMatchObject({ amount: '2.000001', feeBps: 500, seller })
      const delivered = json(
        await tollgate(sellerHome, 'job', 'deliver', jobId, '--text', 'la página', '--json'),
      )
      expect(delivered.job).toMatchObject({
        state: 'delivered',
        deliveryHash: Escrow.deliveryHash('la página'),
      })
      expect(json(await tollgate(buyerHome, 'job', 'status', jobId, '--json')).job.state).toBe(
        'delivered',
      )
      // Without --json: a table with USDC amounts and dated deadlines, not a JSON blob.
      const table = await tollgate(buyerHome, 'job', 'status', jobId)
      expect(table.code).toBe(0)
      expect(table.stdout).not.toContain('{')
      expect(table.stdout).toMatch(/^state\s+delivered$/m)
      expect(table.stdout).toMatch(/^amount\s+2\.000001 USDC \(fee 5 %\)$/m)
      expect(table.stdout).toMatch(/^deliver by\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \(in \d/m)
      expect(table.stdout).toMatch(/^review\s+\d+ (s|min|h|d)\b.* after delivery$/m)
      expect(table.stdout).toMatch(/^delivery\s+sha256 /m)
      const released = json(await tollgate(buyerHome, 'job', 'release', jobId, '--json'))
      expect(released.job).toMatchObject({
        state: 'released',
        paidToSeller: '1.900001',
        paidFee: '0.100000',
      })
      const balance = (owner: string) => chain.usdcBalance(owner)
      expect(await balance(seller)).toBe(1_900_001n)
      expect(await balance(buyer)).toBe(5_000_000n - 2_000_001n)
      expect(
        (await tollgate(buyerHome, 'job', 'review', jobId, '--rating', '5', '--json')).code,
      ).toBe(0)

      // A second job, refunded by the seller: the buyer has it all back, and cannot review it.
      const second = json(
        await tollgate(
          buyerHome,
          'job',
          'fund',
          '--seller',
          seller,
          '--amount',
          '1',
          '--description',
          'again',
          '--json',
        ),
      )
      const refunded = json(
        await tollgate(sellerHome, 'job', 'refund', second.jobId as string, '--json'),
      )
      expect(refunded.job).toMatchObject({ state: 'refunded', refunded: '1.000000' })
      expect(await balance(buyer)).toBe(5_000_000n - 2_000_001n)
      const refused = await tollgate(
        buyerHome,
        'job',
        'review',
        second.jobId as string,
        '--rating',
        '3',
        '--json',
      )
      expect(refused.code).toBe(2)
      expect(JSON.parse(refused.stdout).error.code).toBe('review_refused')
      // The buyer cannot refund before the deadline: the ledger refuses, exit 2 with the code.
      const third = json(
        await tollgate(
          buyerHome,
          'job',
          'fund',
          '--seller',
          seller,
          '--amount',
          '0.5',
          '--description',
          'x',
          '--json',
        ),
      )
      const early = await tollgate(buyerHome, 'job', 'refund', third.jobId as string, '--json')
      expect(early.code).toBe(2)
      expect(JSON.parse(early.stdout).error.code).toBe('job_move_failed')
    } finally {
      rmSync(buyerHome, { recursive: true, force: true })
      rmSync(sellerHome, { recursive: true, force: true })
    }
  })
})
