import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Transaction } from '@mysten/sui/transactions'
import { describe, expect, it } from 'vitest'
import { EscrowAbort } from '../testing/ledger/escrow.js'
import { structOf } from '../testing/ledger/signatures.js'
import { readEscrowConfig } from './job.js'
import {
  buildDeliver,
  buildFund,
  buildRefund,
  buildReject,
  buildRelease,
  buildSetFee,
} from './moves.js'
import type { EscrowTerms } from './terms.js'
import { deliveryHash } from './terms.js'
import { type MoveResult, useEscrowBench } from './testHelpers.js'

const bench = useEscrowBench()

const pkg = () => bench.ledger.modulesPackage
const HASH = deliveryHash('the translated document')

type Party = { key: Ed25519Keypair; address: string }
function party(usdc = '0'): Party {
  const key = bench.ledger.createTestWallet({ usdc })
  return { key, address: key.toSuiAddress() }
}

async function fund(buyer: Party, terms: EscrowTerms) {
  const result = await bench.exec(
    buyer.key,
    buildFund({ client: bench.client, package: pkg(), sender: buyer.address, terms }),
  )
  return result
}

async function funded(amount = 1_000_001n, extra: Partial<EscrowTerms> = {}) {
  const buyer = party('5')
  const seller = party()
  const stranger = party()
  const result = await fund(buyer, bench.terms(seller.address, amount, extra))
  expect(result.status).toBe('ok')
  const job = await bench.job((result as { jobId: string }).jobId)
  if (!job) throw new Error('no job')
  return { buyer, seller, stranger, job }
}

const move = {
  deliver: (who: Party, job: { id: string; initialSharedVersion: string }, hash = HASH) =>
    bench.exec(
      who.key,
      buildDeliver({
        client: bench.client,
        package: pkg(),
        sender: who.address,
        job,
        deliveryHash: hash,
      }),
    ),
  release: (who: Party, job: { id: string; initialSharedVersion: string }) =>
    bench.exec(
      who.key,
      buildRelease({ client: bench.client, package: pkg(), sender: who.address, job }),
    ),
  reject: (who: Party, job: { id: string; initialSharedVersion: string }, reason = 'wrong') =>
    bench.exec(
      who.key,
      buildReject({ client: bench.client, package: pkg(), sender: who.address, job, reason }),
    ),
  refund: (who: Party, job: { id: string; initialSharedVersion: string }) =>
    bench.exec(
      who.key,
      buildRefund({ client: bench.client, package: pkg(), sender: who.address, job }),
    ),
}

function aborted(result: MoveResult, code: bigint) {
  expect(result).toMatchObject({ status: 'aborted', code: Number(code) })
}

describe('fund', () => {
  it('locks exactly the budget in a shared job with the current fee rate copied in', async () => {
    const { buyer, seller, job } = await funded(1_000_001n)
    expect(job).toMatchObject({
      state: 'funded',
      buyer: buyer.address,
      seller: seller.address,
      amount: 1_000_001n,
      balance: 1_000_001n,
      feeBps: 500n,
      treasury: bench.treasury,
    })
    expect(await bench.usdc(buyer.address)).toBe(5_000_000n - 1_000_001n)
  })

  it('writes the job and the config with the fields the Move structs declare', async () => {
    const { job } = await funded(1_000n)
    const fieldsOf = async (objectId: string) =>
      Object.keys(
        (await bench.client.core.getObject({ objectId, include: { json: true } })).object.json ??
          {},
      ).sort()
    const declared = (name: string) =>
      structOf('escrow', name)
        .fields.map((f) => f.name)
        .sort()
    expect(await fieldsOf(job.id)).toEqual(declared('EscrowJob'))
    expect(await fieldsOf(bench.ledger.escrow.config)).toEqual(declared('EscrowConfig'))
  })

  it('funds from the address balance when the buyer holds no USDC coins', async () => {
    const buyer = bench.ledger.createTestWallet({ usdc: '2', into: 'addressBalance' })
    bench.ledger.faucet({ address: buyer.toSuiAddress(), sui: '1', usdc: '0' })
    const seller = party()
    const result = await fund(
      { key: buyer, address: buyer.toSuiAddress() },
      bench.terms(seller.address, 1_500_000n),
    )
    expect(result.status).toBe('ok')
    expect(await bench.usdc(buyer.toSuiAddress())).toBe(500_000n)
  })

  it('aborts when the fee rate is not the one the buyer agreed to (nothing is locked)', async () => {
    const buyer = party('5')
    const seller = party()
    aborted(
      await fund(buyer, { ...bench.terms(seller.address, 1_000_000n), feeBps: 250 }),
      EscrowAbort.feeChanged,
    )
    expect(await bench.usdc(buyer.address)).toBe(5_000_000n)
  })

  it('aborts on a deadline in the past and a zero review window', async () => {
    const buyer = party('5')
    const seller = party()
    const base = bench.terms(seller.address, 1_000_000n)
    aborted(
      await fund(buyer, { ...base, deliverByMs: bench.clock.now - 1 }),
      EscrowAbort.badDeadline,
    )
    // A 402's terms never carry a zero window (the schema says positive); the ledger refuses it too.
    aborted(await fund(buyer, { ...base, reviewMs: 0 }), EscrowAbort.badDeadline)
  })
})

describe('deliver', () => {
  it('only the seller delivers, a 32-byte hash, before the deadline', async () => {
    const { buyer, seller, stranger, job } = await funded()
    aborted(await move.deliver(buyer, job), EscrowAbort.notSeller)
    aborted(await move.deliver(stranger, job), EscrowAbort.notSeller)
    expect((await move.deliver(seller, job)).status).toBe('ok')
    expect(await bench.job(job.id)).toMatchObject({ state: 'delivered', deliveryHash: HASH })
    aborted(await move.deliver(seller, job), EscrowAbort.wrongState)
  })

  it('refuses a delivery at or after the deadline', async () => {
    const { seller, job } = await funded()
    const saved = bench.clock.now
    bench.clock.now = Number(job.deliverByMs)
    try {
      aborted(await move.deliver(seller, job), EscrowAbort.deliveryClosed)
    } finally {
      bench.clock.now = saved
    }
  })
})

describe('release', () => {
  it('pays the seller 95 % and the treasury 5 % of an odd amount at 500 bps, no base unit lost', async () => {
    const { buyer, seller, stranger, job } = await funded(1_000_001n)
    aborted(await move.release(buyer, job), EscrowAbort.wrongState)
    await move.deliver(seller, job)
    aborted(await move.release(stranger, job), EscrowAbort.notParty)
    aborted(await move.release(seller, job), EscrowAbort.reviewOpen)
    const treasuryBefore = await bench.usdc(bench.treasury)
    const released = await move.release(buyer, job)
    expect(released.status).toBe('ok')
    // fee = floor(1 000 001 × 500 / 10 000) = 50 000; the seller gets 950 001.
    expect(await bench.usdc(seller.address)).toBe(950_001n)
    expect((await bench.usdc(bench.treasury)) - treasuryBefore).toBe(50_000n)
    expect(await bench.job(job.id)).toMatchObject({
      state: 'released',
      balance: 0n,
      paidToSeller: 950_001n,
      paidFee: 50_000n,
    })
    aborted(await move.release(buyer, job), EscrowAbort.wrongState)
    aborted(await move.refund(seller, job), EscrowAbort.wrongState)
    aborted(await move.refund(buyer, job), EscrowAbort.wrongState)
  })

  it.each([
    [1n, 0n],
    [19n, 0n],
    [20n, 1n],
    [39n, 1n],
    [4_567_891n, 228_394n],
  ])('rounds the fee of %s base units at 500 bps down to %s', async (amount, fee) => {
    const { buyer, seller, job } = await funded(amount)
    await move.deliver(seller, job)
    expect((await move.release(buyer, job)).status).toBe('ok')
    const after = await bench.job(job.id)
    expect(after?.paidFee).toBe(fee)
    expect(after?.paidToSeller).toBe(amount - fee)
    expect(await bench.usdc(seller.address)).toBe(amount - fee)
  })

  it('lets the seller release once the review window has passed in silence', async () => {
    const { seller, job } = await funded(2_000_000n)
    await move.deliver(seller, job)
    const saved = bench.clock.now
    bench.clock.now = saved + Number(job.reviewMs)
    try {
      expect((await move.release(seller, job)).status).toBe('ok')
      expect(await bench.usdc(seller.address)).toBe(1_900_000n)
    } finally {
      bench.clock.now = saved
    }
  })
})

describe('reject', () => {
  it('only the buyer rejects a delivery, within the review window; the seller may deliver again', async () => {
    const { buyer, seller, stranger, job } = await funded()
    aborted(await move.reject(buyer, job), EscrowAbort.wrongState)
    await move.deliver(seller, job)
    aborted(await move.reject(seller, job), EscrowAbort.notBuyer)
    aborted(await move.reject(stranger, job), EscrowAbort.notBuyer)
    expect((await move.reject(buyer, job, 'missing pages')).status).toBe('ok')
    expect(await bench.job(job.id)).toMatchObject({
      state: 'rejected',
      rejections: 1n,
      rejectReason: 'missing pages',
    })
    // A rejected delivery cannot be released; the buyer cannot refund before the deadline.
    aborted(await move.release(buyer, job), EscrowAbort.wrongState)
    aborted(await move.refund(buyer, job), EscrowAbort.deadlineNotReached)
    expect((await move.deliver(seller, job, deliveryHash('v2'))).status).toBe('ok')
    expect((await move.release(buyer, job)).status).toBe('ok')
  })

  it('closes with the review window', async () => {
    const { buyer, seller, job } = await funded()
    await move.deliver(seller, job)
    const saved = bench.clock.now
    bench.clock.now = saved + Number(job.reviewMs)
    try {
      aborted(await move.reject(buyer, job), EscrowAbort.reviewClosed)
    } finally {
      bench.clock.now = saved
    }
  })

  it('after the deadline, a rejected job can only go back to the buyer', async () => {
    const { buyer, seller, job } = await funded(3_000_000n)
    await move.deliver(seller, job)
    await move.reject(buyer, job)
    const saved = bench.clock.now
    bench.clock.now = Number(job.deliverByMs)
    try {
      aborted(await move.deliver(seller, job), EscrowAbort.deliveryClosed)
      expect((await move.refund(buyer, job)).status).toBe('ok')
      expect(await bench.usdc(buyer.address)).toBe(5_000_000n)
    } finally {
      bench.clock.now = saved
    }
  })
})

describe('refund', () => {
  it('the buyer gets 100 % back, no fee, once nothing was delivered by the deadline', async () => {
    const { buyer, stranger, job } = await funded(1_234_567n)
    aborted(await move.refund(buyer, job), EscrowAbort.deadlineNotReached)
    aborted(await move.refund(stranger, job), EscrowAbort.notParty)
    const saved = bench.clock.now
    bench.clock.now = Number(job.deliverByMs)
    try {
      aborted(await move.refund(stranger, job), EscrowAbort.notParty)
      const refunded = await move.refund(buyer, job)
      expect(refunded).toMatchObject({
        status: 'ok',
        balanceChanges: [{ address: buyer.address, amount: 1_234_567n }],
      })
      expect(await bench.usdc(buyer.address)).toBe(5_000_000n)
      expect(await bench.job(job.id)).toMatchObject({ state: 'refunded', refunded: 1_234_567n })
    } finally {
      bench.clock.now = saved
    }
  })

  it('the seller may refund at any time before the job is final, even with a delivery pending', async () => {
    const { buyer, seller, job } = await funded(1_000_000n)
    await move.deliver(seller, job)
    expect((await move.refund(seller, job)).status).toBe('ok')
    expect(await bench.usdc(buyer.address)).toBe(5_000_000n)
    expect(await bench.usdc(seller.address)).toBe(0n)
    aborted(await move.deliver(seller, job), EscrowAbort.wrongState)
  })

  it('a delivery pending review keeps the buyer from refunding until it is rejected', async () => {
    const { buyer, seller, job } = await funded(1_000_000n, { reviewMs: 120_000 })
    await move.deliver(seller, job)
    const saved = bench.clock.now
    bench.clock.now = Number(job.deliverByMs)
    try {
      aborted(await move.refund(buyer, job), EscrowAbort.wrongState)
      expect((await move.reject(buyer, job)).status).toBe('ok')
      expect((await move.refund(buyer, job)).status).toBe('ok')
    } finally {
      bench.clock.now = saved
    }
  })
})

describe('the fee rate is fixed at funding', () => {
  // A bench of its own, whose fee rate this test changes.
  const local = useEscrowBench({ feeBps: 250n, checkEachTest: false })

  it('a job funded at 250 bps keeps 250 after the admin sets 500; a new job gets 500', async () => {
    const admin = local.admin
    const buyer = local.ledger.createTestWallet({ usdc: '5' })
    const seller = local.ledger.createTestWallet({ usdc: '0' })
    const fundIt = async (feeBps: number) =>
      local.exec(
        buyer,
        buildFund({
          client: local.client,
          package: local.ledger.modulesPackage,
          sender: buyer.toSuiAddress(),
          terms: { ...local.terms(seller.toSuiAddress(), 1_000_000n), feeBps },
        }),
      )
    const old = await fundIt(250)
    expect(old.status).toBe('ok')
    const { objects } = await local.client.core.listOwnedObjects({
      owner: admin.toSuiAddress(),
      type: `${local.ledger.modulesPackage}::escrow::AdminCap`,
    })
    const cap = objects[0]
    if (!cap) throw new Error('no AdminCap')
    const setFee = (signer: Ed25519Keypair) =>
      local.exec(
        signer,
        buildSetFee({
          client: local.client,
          package: local.ledger.modulesPackage,
          sender: signer.toSuiAddress(),
          adminCap: cap,
          config: local.ledger.escrow.config,
          feeBps: 500,
        }),
      )
    // Nobody but the holder of the AdminCap can use it: the ledger refuses the transaction.
    await expect(setFee(buyer)).rejects.toThrow(/not owned by/)
    expect((await setFee(admin)).status).toBe('ok')
    expect((await readEscrowConfig(local.client, local.ledger.escrow.config)).feeBps).toBe(500n)
    // A buyer still holding the old 402's terms (250) is stopped: nothing locked.
    expect(await fundIt(250)).toMatchObject({
      status: 'aborted',
      code: Number(EscrowAbort.feeChanged),
    })
    const fresh = await fundIt(500)
    const oldJob = await local.job((old as { jobId: string }).jobId)
    const newJob = await local.job((fresh as { jobId: string }).jobId)
    expect(oldJob?.feeBps).toBe(250n)
    expect(newJob?.feeBps).toBe(500n)
    // Released after the change, the old job still pays 2.5 %.
    const pkgId = local.ledger.modulesPackage
    for (const [job, fee] of [
      [oldJob, 25_000n],
      [newJob, 50_000n],
    ] as const) {
      if (!job) throw new Error('no job')
      const before = await local.usdc(local.treasury)
      await local.exec(
        seller,
        buildDeliver({
          client: local.client,
          package: pkgId,
          sender: seller.toSuiAddress(),
          job,
          deliveryHash: HASH,
        }),
      )
      await local.exec(
        buyer,
        buildRelease({ client: local.client, package: pkgId, sender: buyer.toSuiAddress(), job }),
      )
      expect((await local.usdc(local.treasury)) - before).toBe(fee)
    }
    expect(local.violations).toEqual([])
  })
})

describe('malformed calls the builders never make', () => {
  async function raw(signer: Ed25519Keypair, build: (tx: Transaction) => void) {
    const tx = new Transaction()
    tx.setSender(signer.toSuiAddress())
    tx.setGasPrice(1000)
    tx.setGasBudget(10_000_000)
    const { objects } = await bench.client.core.listCoins({
      owner: signer.toSuiAddress(),
      coinType: '0x2::sui::SUI',
    })
    tx.setGasPayment(
      objects.map(({ objectId, version, digest }) => ({ objectId, version, digest })),
    )
    build(tx)
    return bench.exec(signer, tx)
  }
  const target = (fn: string) => `${pkg()}::escrow::${fn}` as const
  const shared = (
    tx: Transaction,
    job: { id: string; initialSharedVersion: string },
    mutable = true,
  ) =>
    tx.sharedObjectRef({
      objectId: job.id,
      initialSharedVersion: job.initialSharedVersion,
      mutable,
    })

  it('aborts on a delivery hash that is not 32 bytes, a reason over 1024 bytes, an immutable job', async () => {
    const { buyer, seller, job } = await funded()
    aborted(
      await raw(seller.key, (tx) =>
        tx.moveCall({
          target: target('deliver'),
          arguments: [shared(tx, job), tx.pure.vector('u8', new Uint8Array(31)), tx.object.clock()],
        }),
      ),
      EscrowAbort.badHash,
    )
    aborted(
      await raw(seller.key, (tx) =>
        tx.moveCall({
          target: target('deliver'),
          arguments: [
            shared(tx, job, false),
            tx.pure.vector('u8', new Uint8Array(32)),
            tx.object.clock(),
          ],
        }),
      ),
      EscrowAbort.readOnly,
    )
    await move.deliver(seller, job)
    aborted(
      await raw(buyer.key, (tx) =>
        tx.moveCall({
          target: target('reject'),
          arguments: [shared(tx, job), tx.pure.string('x'.repeat(1025)), tx.object.clock()],
        }),
      ),
      EscrowAbort.tooLong,
    )
    expect((await bench.job(job.id))?.state).toBe('delivered')
  })

  it('fails a fund with a coin that is not USDC, not the budget, or empty; and a fee over 10 000 bps', async () => {
    const buyer = party('5')
    const seller = party()
    const terms = bench.terms(seller.address, 1_000n)
    const notUsdc = await raw(buyer.key, (tx) => {
      const [coin] = tx.splitCoins(tx.gas, [tx.pure.u64(1_000n)])
      tx.moveCall({
        target: target('fund'),
        arguments: [
          tx.sharedObjectRef({ objectId: terms.config, initialSharedVersion: '1', mutable: false }),
          coin!,
          tx.pure.address(seller.address),
          tx.pure.u64(1_000n),
          tx.pure.u64(500n),
          tx.pure.u64(terms.deliverByMs),
          tx.pure.u64(terms.reviewMs),
          tx.pure.vector('u8', new Uint8Array(32)),
          tx.object.clock(),
        ],
      })
    })
    expect(notUsdc).toMatchObject({ status: 'aborted', code: undefined })
    const [usdcCoin] = (
      await bench.client.core.listCoins({ owner: buyer.address, coinType: bench.ledger.usdcType })
    ).objects
    if (!usdcCoin) throw new Error('no USDC coin')
    for (const [amount, expected, code] of [
      [1_000n, 999n, EscrowAbort.budgetMismatch],
      [0n, 0n, EscrowAbort.zeroAmount],
    ] as const) {
      const result = await raw(buyer.key, (tx) => {
        const [coin] = tx.splitCoins(tx.objectRef(usdcCoin), [tx.pure.u64(amount)])
        tx.moveCall({
          target: target('fund'),
          arguments: [
            tx.sharedObjectRef({
              objectId: terms.config,
              initialSharedVersion: '1',
              mutable: false,
            }),
            coin!,
            tx.pure.address(seller.address),
            tx.pure.u64(expected),
            tx.pure.u64(500n),
            tx.pure.u64(terms.deliverByMs),
            tx.pure.u64(terms.reviewMs),
            tx.pure.vector('u8', new Uint8Array(32)),
            tx.object.clock(),
          ],
        })
      })
      aborted(result, code)
    }
    expect(await bench.usdc(buyer.address)).toBe(5_000_000n)
    const { objects } = await bench.client.core.listOwnedObjects({
      owner: bench.admin.toSuiAddress(),
      type: `${pkg()}::escrow::AdminCap`,
    })
    const cap = objects[0]
    if (!cap) throw new Error('no AdminCap')
    aborted(
      await bench.exec(
        bench.admin,
        buildSetFee({
          client: bench.client,
          package: pkg(),
          sender: bench.admin.toSuiAddress(),
          adminCap: cap,
          config: bench.ledger.escrow.config,
          feeBps: 10_001,
        }),
      ),
      EscrowAbort.badFee,
    )
  })
})

describe('shared objects on the ledger', () => {
  it('refuses a job named with the wrong initial shared version, and an owned object passed as shared', async () => {
    const { buyer, seller, job } = await funded()
    const wrongVersion = {
      id: job.id,
      initialSharedVersion: String(BigInt(job.initialSharedVersion) + 1n),
    }
    await expect(move.deliver(seller, wrongVersion)).rejects.toThrow(/initial shared version/)
    const [coin] = (
      await bench.client.core.listCoins({ owner: buyer.address, coinType: bench.ledger.usdcType })
    ).objects
    if (!coin) throw new Error('no coin')
    await expect(
      move.refund(buyer, { id: coin.objectId, initialSharedVersion: '1' }),
    ).rejects.toThrow(/not a shared object/)
    expect((await bench.job(job.id))?.state).toBe('funded')
  })
})
