/**
 * Shared set-up of the escrow tests (not exported): a ledger with a movable clock and a known
 * admin and treasury, real keypairs, and a helper that builds, signs and executes a move.
 *
 * @module
 */
import { SuiGrpcClient } from '@mysten/sui/grpc'
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import type { Transaction } from '@mysten/sui/transactions'
import { afterAll, afterEach, beforeAll, expect } from 'vitest'
import { type StartedLedger, startLedger } from '../testing/index.js'
import { checkSupply } from '../testing/ledger/supply.js'
import { readJob } from './job.js'
import type { EscrowTerms } from './terms.js'
import { termsHash } from './terms.js'

/** What executing a move came to: success, or the Move abort code (or another failure). */
export type MoveResult =
  | {
      status: 'ok'
      digest: string
      /** The job a `fund` created (from its `JobFunded` event). */
      jobId: string | undefined
      balanceChanges: { address: string; amount: bigint }[]
    }
  | { status: 'aborted'; code: number | undefined; message: string }

/** A ledger with a movable clock, an admin and a treasury, for escrow tests. */
export type EscrowBench = {
  ledger: StartedLedger
  client: SuiGrpcClient
  admin: Ed25519Keypair
  treasury: string
  /** The ledger's clock; set it to move time. */
  clock: { now: number }
  /** Conservation violations seen so far (money created or destroyed, escrow included). */
  violations: string[]
  exec(signer: Ed25519Keypair, tx: Promise<Transaction> | Transaction): Promise<MoveResult>
  terms(seller: string, amount: bigint, extra?: Partial<EscrowTerms>): EscrowTerms
  /** The deployment a buyer on this ledger pins (its package, config object and USDC). */
  pinned: { package: string; config: string; asset: string }
  job(id: string): ReturnType<typeof readJob>
  usdc(address: string): Promise<bigint>
}

/** Options of {@link useEscrowBench}. */
export type EscrowBenchOptions = {
  /** The escrow's fee rate at genesis, in basis points. Default 500. */
  feeBps?: bigint
  /** Whether each test ends by asserting that no money was created or destroyed. Default true. */
  checkEachTest?: boolean
}

/**
 * Starts a bench before the tests of the enclosing file or `describe` and stops its ledger after
 * them; with `checkEachTest`, each test ends by asserting the bench's conservation. The handle is
 * readable from `beforeAll` on.
 */
export function useEscrowBench(options: EscrowBenchOptions = {}): EscrowBench {
  const { feeBps = 500n, checkEachTest = true } = options
  let started: EscrowBench | undefined
  beforeAll(async () => {
    started = await startEscrowBench(feeBps)
  })
  if (checkEachTest) {
    afterEach(() => {
      expect(running().violations.splice(0), 'money was created or destroyed').toEqual([])
    })
  }
  afterAll(async () => {
    await started?.ledger.stop()
  })
  const running = () => {
    if (!started) throw new Error('useEscrowBench: the bench is readable from beforeAll on')
    return started
  }
  return {
    get ledger() {
      return running().ledger
    },
    get client() {
      return running().client
    },
    get admin() {
      return running().admin
    },
    get treasury() {
      return running().treasury
    },
    get clock() {
      return running().clock
    },
    get violations() {
      return running().violations
    },
    get pinned() {
      return running().pinned
    },
    exec: (signer, tx) => running().exec(signer, tx),
    terms: (seller, amount, extra) => running().terms(seller, amount, extra),
    job: (id) => running().job(id),
    usdc: (address) => running().usdc(address),
  }
}

/** Starts the bench (stop with `bench.ledger.stop()`). */
async function startEscrowBench(feeBps = 500n): Promise<EscrowBench> {
  const clock = { now: Date.now() }
  const admin = Ed25519Keypair.generate()
  const treasury = Ed25519Keypair.generate().toSuiAddress()
  const supply = checkSupply()
  const ledger = await startLedger({
    onCommit: supply.observe,
    now: () => clock.now,
    escrow: { admin: admin.toSuiAddress(), treasury, feeBps },
  })
  ledger.faucet({ address: admin.toSuiAddress(), sui: '1' })
  const client = new SuiGrpcClient({ network: 'mainnet', baseUrl: ledger.url })
  return {
    ledger,
    client,
    admin,
    treasury,
    clock,
    violations: supply.violations,
    async exec(signer, txOrPromise) {
      const tx = await txOrPromise
      const bytes = await tx.build()
      const { signature } = await signer.signTransaction(bytes)
      const result = await client.core.executeTransaction({
        transaction: bytes,
        signatures: [signature],
        include: { effects: true, balanceChanges: true, events: true },
      })
      if (result.$kind === 'Transaction') {
        return {
          status: 'ok',
          digest: result.Transaction.digest,
          jobId: result.Transaction.events
            ?.map((e) => (e.json as { job_id?: string } | null)?.job_id)
            .find((id) => id !== undefined),
          balanceChanges: (result.Transaction.balanceChanges ?? [])
            .filter((c) => c.coinType === ledger.usdcType)
            .map((c) => ({ address: c.address, amount: BigInt(c.amount) })),
        }
      }
      const error = result.FailedTransaction.status.error
      const code = error?.$kind === 'MoveAbort' ? Number(error.MoveAbort.abortCode) : undefined
      return { status: 'aborted', code, message: error?.message ?? '' }
    },
    terms(seller, amount, extra = {}) {
      return {
        package: ledger.modulesPackage,
        config: ledger.escrow.config,
        seller,
        amount: amount.toString(),
        asset: ledger.usdcType,
        feeBps: Number(feeBps),
        deliverByMs: clock.now + 60_000,
        reviewMs: 30_000,
        terms: termsHash({ job: 'translate', seller, amount: amount.toString() }),
        ...extra,
      }
    },
    pinned: {
      package: ledger.modulesPackage,
      config: ledger.escrow.config,
      asset: ledger.usdcType,
    },
    job: (id) => readJob(client, id, { package: ledger.modulesPackage }),
    async usdc(address) {
      const { balance } = await client.core.getBalance({
        owner: address,
        coinType: ledger.usdcType,
      })
      return BigInt(balance.balance)
    },
  }
}
