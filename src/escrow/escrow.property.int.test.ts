import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { EscrowAbort } from '../testing/ledger/escrow.js'
import type { EscrowJob } from './job.js'
import { buildDeliver, buildFund, buildRefund, buildReject, buildRelease } from './moves.js'
import { deliveryHash } from './terms.js'
import { useEscrowBench } from './testHelpers.js'

const bench = useEscrowBench()

type Who = 'buyer' | 'seller' | 'stranger'
type Move = { kind: 'deliver' | 'release' | 'reject' | 'refund'; who: Who; advanceMs: number }

const DELIVER_BY = 60_000
const REVIEW = 20_000

/** The documented rules (docs/escrow.md), as an independent model: ok, or the abort code. */
function expected(job: EscrowJob, move: Move, now: bigint): bigint | 'ok' {
  const { state } = job
  const reviewEnds = job.deliveredAtMs + job.reviewMs
  switch (move.kind) {
    case 'deliver':
      if (move.who !== 'seller') return EscrowAbort.notSeller
      if (state !== 'funded' && state !== 'rejected') return EscrowAbort.wrongState
      return now >= job.deliverByMs ? EscrowAbort.deliveryClosed : 'ok'
    case 'release':
      if (move.who === 'stranger') return EscrowAbort.notParty
      if (state !== 'delivered') return EscrowAbort.wrongState
      return move.who === 'seller' && now < reviewEnds ? EscrowAbort.reviewOpen : 'ok'
    case 'reject':
      if (move.who !== 'buyer') return EscrowAbort.notBuyer
      if (state !== 'delivered') return EscrowAbort.wrongState
      return now >= reviewEnds ? EscrowAbort.reviewClosed : 'ok'
    case 'refund':
      if (move.who === 'seller')
        return state === 'released' || state === 'refunded' ? EscrowAbort.wrongState : 'ok'
      if (move.who === 'stranger') return EscrowAbort.notParty
      if (state !== 'funded' && state !== 'rejected') return EscrowAbort.wrongState
      return now < job.deliverByMs ? EscrowAbort.deadlineNotReached : 'ok'
  }
}

const moveArb: fc.Arbitrary<Move> = fc.record({
  kind: fc.constantFrom('deliver', 'release', 'reject', 'refund'),
  who: fc.constantFrom('buyer', 'seller', 'stranger'),
  advanceMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 40_000 })),
})

describe('escrow property: random moves by random parties', () => {
  it('never moves more USDC than was funded, follows the rules, and always ends paid out or returned', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.bigInt({ min: 1n, max: 4_999_999n }),
        fc.array(moveArb, { minLength: 1, maxLength: 7 }),
        async (amount, moves) => {
          const keys: Record<Who, Ed25519Keypair> = {
            buyer: bench.ledger.createTestWallet({ usdc: '5' }),
            seller: bench.ledger.createTestWallet({ usdc: '0' }),
            stranger: bench.ledger.createTestWallet({ usdc: '0' }),
          }
          const address = (who: Who) => keys[who].toSuiAddress()
          const start = bench.clock.now
          const funded = await bench.exec(
            keys.buyer,
            buildFund({
              client: bench.client,
              package: bench.ledger.modulesPackage,
              sender: address('buyer'),
              terms: bench.terms(address('seller'), amount, {
                deliverByMs: start + DELIVER_BY,
                reviewMs: REVIEW,
              }),
            }),
          )
          if (funded.status !== 'ok' || !funded.jobId) throw new Error('fund failed')
          const jobId = funded.jobId
          const treasuryBefore = await bench.usdc(bench.treasury)
          let moved = 0n
          const run = async (move: Move) => {
            const job = (await bench.job(jobId)) as EscrowJob
            const want = expected(job, move, BigInt(bench.clock.now))
            const options = {
              client: bench.client,
              package: bench.ledger.modulesPackage,
              sender: address(move.who),
              job,
            }
            const tx =
              move.kind === 'deliver'
                ? buildDeliver({ ...options, deliveryHash: deliveryHash(String(Math.random())) })
                : move.kind === 'release'
                  ? buildRelease(options)
                  : move.kind === 'reject'
                    ? buildReject(options)
                    : buildRefund(options)
            const result = await bench.exec(keys[move.who], tx)
            if (want === 'ok')
              expect(result.status, `${move.who} ${move.kind} in ${job.state}`).toBe('ok')
            else
              expect(result, `${move.who} ${move.kind} in ${job.state}`).toMatchObject({
                code: Number(want),
              })
            if (result.status === 'ok') {
              for (const c of result.balanceChanges) if (c.amount > 0n) moved += c.amount
            }
            expect(moved).toBeLessThanOrEqual(amount)
            // Conservation, escrow included: no move creates or destroys USDC.
            expect(bench.violations).toEqual([])
          }
          try {
            for (const move of moves) {
              bench.clock.now += move.advanceMs
              await run(move)
            }
            // Past the deadline: whatever the state, the job can be closed, and the buyer's refund
            // needs no one else (a pending delivery is first rejected while its review is open).
            bench.clock.now = Math.max(bench.clock.now, start + DELIVER_BY)
            let job = (await bench.job(jobId)) as EscrowJob
            if (job.state === 'delivered') {
              const open = BigInt(bench.clock.now) < job.deliveredAtMs + job.reviewMs
              await run({
                kind: open ? 'reject' : 'release',
                who: open ? 'buyer' : 'seller',
                advanceMs: 0,
              })
              job = (await bench.job(jobId)) as EscrowJob
            }
            if (job.state === 'funded' || job.state === 'rejected') {
              await run({ kind: 'refund', who: 'buyer', advanceMs: 0 })
            }
            job = (await bench.job(jobId)) as EscrowJob
            expect(['released', 'refunded']).toContain(job.state)
            expect(job.balance).toBe(0n)
            expect(moved).toBe(amount)
            const buyer = await bench.usdc(address('buyer'))
            const seller = await bench.usdc(address('seller'))
            const fee = (await bench.usdc(bench.treasury)) - treasuryBefore
            expect(await bench.usdc(address('stranger'))).toBe(0n)
            if (job.state === 'refunded') {
              expect([buyer, seller, fee]).toEqual([5_000_000n, 0n, 0n])
            } else {
              expect(fee).toBe((amount * 500n) / 10_000n)
              expect([buyer, seller + fee]).toEqual([5_000_000n - amount, amount])
            }
          } finally {
            bench.clock.now = start
          }
        },
      ),
      { numRuns: 25 },
    )
  }, 240_000)
})
