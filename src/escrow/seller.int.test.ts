import { mkdtempSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { serve } from '@hono/node-server'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createPayingFetch } from '../client/fetch.js'
import { createJobClient } from '../client/jobs.js'
import { createWalletLimits } from '../client/limits.js'
import { isPaymentError, type PaymentError } from '../errors.js'
import { createEscrowSeller } from './seller.js'
import { deliveryHash } from './terms.js'
import { type EscrowBench, useEscrowBench } from './testHelpers.js'

const bench = useEscrowBench()
let base: string
let close: () => void
const sellerKey = {
  current: undefined as ReturnType<EscrowBench['ledger']['createTestWallet']> | undefined,
}

beforeAll(async () => {
  const signer = bench.ledger.createTestWallet({ usdc: '0' })
  sellerKey.current = signer
  const seller = createEscrowSeller({
    signer,
    client: bench.client,
    package: bench.ledger.modulesPackage,
    config: bench.ledger.escrow.config,
    asset: bench.ledger.usdcType,
    secrets: ['an escrow seller secret that is long enough!'],
    price: () => 2_000_001n,
    work: async (body) => `translated: ${JSON.stringify(body)}`,
    now: () => bench.clock.now,
  })
  const server = serve({
    fetch: (request) => seller.handle(request),
    port: 0,
    hostname: '127.0.0.1',
  })
  await new Promise((resolve) => server.once('listening', resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  close = () => server.close()
})
afterAll(async () => {
  close?.()
  await bench.ledger.stop()
})

describe('an escrow seller and the buyer clients', () => {
  it('the paying fetch refuses the escrow 402; the job client funds, gets the delivery and releases', async () => {
    const buyer = bench.ledger.createTestWallet({ usdc: '5' })
    const pay = createPayingFetch({ signer: buyer, ledger: bench.ledger.url, limits: false })
    const url = `${base}/translate`
    const init = { method: 'POST', body: JSON.stringify({ text: 'hola' }) }
    const refusal = (await pay(url, init).catch((e: unknown) => e)) as PaymentError
    expect(isPaymentError(refusal) && refusal.code).toBe('ESCROW_REQUIRED')
    // Nothing was paid instantly.
    expect(await bench.usdc(buyer.toSuiAddress())).toBe(5_000_000n)

    const jobs = createJobClient({
      signer: buyer,
      ledger: bench.ledger.url,
      escrow: bench.pinned,
      maxPrice: '3',
    })
    const { jobId, terms } = await jobs.fundJob(refusal)
    expect(terms).toMatchObject({
      amount: '2000001',
      feeBps: 500,
      seller: sellerKey.current?.toSuiAddress(),
    })
    expect(await bench.usdc(buyer.toSuiAddress())).toBe(5_000_000n - 2_000_001n)

    const answer = await fetch(terms.jobUrl as string, {
      method: 'POST',
      body: JSON.stringify({ jobId }),
    })
    expect(answer.status).toBe(200)
    const delivery = (await answer.json()) as { result: string; deliveryHash: string }
    expect(delivery.result).toBe('translated: {"text":"hola"}')
    const job = await jobs.status(jobId)
    expect(job?.state).toBe('delivered')
    // The buyer checks the delivered content against the hash committed on the ledger.
    expect(job?.deliveryHash).toBe(deliveryHash(delivery.result))
    await jobs.release(jobId)
    expect(await bench.usdc(sellerKey.current?.toSuiAddress() as string)).toBe(
      2_000_001n - 100_000n,
    )
    expect((await jobs.status(jobId))?.state).toBe('released')
  })

  it('refuses terms above the price cap before signing anything', async () => {
    const buyer = bench.ledger.createTestWallet({ usdc: '5' })
    const offer = await fetch(`${base}/translate`, { method: 'POST', body: '{}' })
    expect(offer.status).toBe(402)
    const body = (await offer.json()) as { accepts: { extra: { escrow: unknown } }[] }
    const jobs = createJobClient({
      signer: buyer,
      ledger: bench.ledger.url,
      escrow: bench.pinned,
      maxPrice: '1',
    })
    await expect(jobs.fundJob(body.accepts[0]?.extra.escrow)).rejects.toMatchObject({
      code: 'PRICE_ABOVE_MAX',
    })
    await expect(jobs.fundJob({ package: 'nope' })).rejects.toMatchObject({
      code: 'invalid_payload',
    })
    expect(await bench.usdc(buyer.toSuiAddress())).toBe(5_000_000n)
  })

  it('counts a funded budget against the wallet limits, and refuses one over them before signing', async () => {
    const buyer = bench.ledger.createTestWallet({ usdc: '5' })
    const file = join(mkdtempSync(join(tmpdir(), 'tollgate-limits-')), 'spending.json')
    const limits = createWalletLimits({ perTransaction: '3', perDay: '3', file })
    const jobs = createJobClient({
      signer: buyer,
      ledger: bench.ledger.url,
      escrow: bench.pinned,
      limits,
    })
    const seller = sellerKey.current?.toSuiAddress() as string
    await jobs.fundJob(bench.terms(seller, 2_000_000n))
    expect(await limits.spentToday()).toBe(2_000_000n)
    await expect(jobs.fundJob(bench.terms(seller, 1_500_000n))).rejects.toMatchObject({
      code: 'LIMIT_PER_DAY',
    })
    // A fund the ledger aborts (the fee is not the one offered) is not counted.
    await expect(
      jobs.fundJob({ ...bench.terms(seller, 500_000n), feeBps: 250 }),
    ).rejects.toMatchObject({
      code: 'job_move_failed',
    })
    expect(await limits.spentToday()).toBe(2_000_000n)
    expect(await bench.usdc(buyer.toSuiAddress())).toBe(3_000_000n)
  })

  it('the seller will not deliver a job funded for another offer', async () => {
    const buyer = bench.ledger.createTestWallet({ usdc: '5' })
    const jobs = createJobClient({ signer: buyer, ledger: bench.ledger.url, escrow: bench.pinned })
    const seller = sellerKey.current?.toSuiAddress() as string
    const { jobId } = await jobs.fundJob(bench.terms(seller, 2_000_001n))
    const answer = await fetch(`${base}/translate`, {
      method: 'POST',
      body: JSON.stringify({ jobId }),
    })
    expect(answer.status).toBe(409)
    expect(((await answer.json()) as { code: string }).code).toBe('job_terms_mismatch')
    expect((await jobs.status(jobId))?.state).toBe('funded')
  })
})
