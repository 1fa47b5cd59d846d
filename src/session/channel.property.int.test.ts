/**
 * The session channel under random moves by random parties, against an independent model of the
 * rules (docs/ledger-modules.md, "channel"): every move succeeds or aborts as the model says, the
 * payee never receives more than the highest voucher nor more than was deposited, and at the end
 * the payer has everything else back. The test ledger checks conservation after every transaction.
 */
import type { SuiGrpcClient } from '@mysten/sui/grpc'
import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import type { Transaction } from '@mysten/sui/transactions'
import { ed25519 } from '@noble/curves/ed25519.js'
import fc from 'fast-check'
import { beforeAll, describe, expect, it } from 'vitest'
import { ChannelAbort, MIN_GRACE_MS } from '../testing/ledger/channel.js'
import type { StartedLedger } from '../testing/ledger/index.js'
import { useCheckedLedger } from '../testing/ledger/testSetup.js'
import {
  buildClose,
  buildOpen,
  buildRequestClose,
  buildSettle,
  buildTopUp,
  buildWithdraw,
  readChannel,
} from './channelTx.js'
import { channelIdOf, signVoucher, type Voucher } from './voucher.js'

let ledger: StartedLedger
let client: SuiGrpcClient
const checked = useCheckedLedger()
beforeAll(() => {
  ledger = checked.ledger
  client = checked.client
})

type Who = 'payer' | 'payee' | 'stranger'
type Move =
  | { kind: 'sign'; raise: bigint }
  | { kind: 'settle' | 'close'; who: Who; delta: bigint; forged: boolean }
  | { kind: 'topUp'; who: Who; amount: bigint }
  | { kind: 'requestClose' | 'withdraw'; who: Who }
  | { kind: 'wait'; ms: number }

/** What the rules say the channel is. */
type Model = {
  deposited: bigint
  settled: bigint
  /** The highest voucher the payer signed (0: none). */
  highest: bigint
  /** Ledger time waited since the close request; undefined when none is pending. */
  sinceRequest: number | undefined
  closed: boolean
}

const GRACE = Number(MIN_GRACE_MS)

/** The documented rules: ok, or the abort code. */
function expected(model: Model, move: Exclude<Move, { kind: 'sign' | 'wait' }>): bigint | 'ok' {
  if (model.closed) return ChannelAbort.closed
  switch (move.kind) {
    case 'settle':
    case 'close': {
      if (move.who !== 'payee') return ChannelAbort.notPayee
      const capture = model.settled + move.delta
      const low = move.kind === 'settle' ? capture <= model.settled : capture < model.settled
      if (low || capture > model.highest || capture > model.deposited) return ChannelAbort.badAmount
      if (move.forged && capture > model.settled) return ChannelAbort.badSignature
      return 'ok'
    }
    case 'topUp':
      return move.who === 'payer' ? 'ok' : ChannelAbort.notPayer
    case 'requestClose':
      return move.who === 'payer' ? 'ok' : ChannelAbort.notPayer
    case 'withdraw':
      if (move.who !== 'payer') return ChannelAbort.notPayer
      if (model.sinceRequest === undefined) return ChannelAbort.noCloseRequest
      return model.sinceRequest < GRACE ? ChannelAbort.graceNotOver : 'ok'
  }
}

const who = fc.constantFrom<Who>('payer', 'payee', 'payee', 'stranger')
const moveArb: fc.Arbitrary<Move> = fc.oneof(
  fc.record({ kind: fc.constant('sign' as const), raise: fc.bigInt({ min: 0n, max: 600_000n }) }),
  fc.record({
    kind: fc.constantFrom('settle' as const, 'close' as const),
    who,
    delta: fc.oneof(fc.constant(0n), fc.bigInt({ min: 1n, max: 500_000n })),
    forged: fc.boolean(),
  }),
  fc.record({
    kind: fc.constant('topUp' as const),
    who,
    amount: fc.bigInt({ min: 1n, max: 500_000n }),
  }),
  fc.record({ kind: fc.constantFrom('requestClose' as const, 'withdraw' as const), who }),
  // Steps of a minute stay well inside the grace period (at most 12 moves); the long step passes
  // it by a minute, so the ledger's wall-clock drift never decides an outcome.
  fc.record({ kind: fc.constant('wait' as const), ms: fc.constantFrom(60_000, GRACE + 60_000) }),
)

async function exec(signer: Ed25519Keypair, tx: Promise<Transaction>) {
  const bytes = await (await tx).build()
  const { signature } = await signer.signTransaction(bytes)
  const result = await client.core.executeTransaction({
    transaction: bytes,
    signatures: [signature],
    include: { effects: true },
  })
  if (result.$kind === 'Transaction') return 'ok' as const
  const error = result.FailedTransaction.status.error
  return error?.$kind === 'MoveAbort' ? BigInt(error.MoveAbort.abortCode) : undefined
}

const usdc = async (address: string) => checked.usdcBalance(address)

describe('channel property: random moves by random parties', () => {
  it('follows the rules, pays the payee at most the highest voucher, and returns the rest', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.bigInt({ min: 1n, max: 3_000_000n }),
        fc.array(moveArb, { minLength: 1, maxLength: 12 }),
        async (deposit, moves) => {
          const keys: Record<Who, Ed25519Keypair> = {
            payer: ledger.createTestWallet({ usdc: '10', sui: '1' }),
            // USDC of their own, so that their top-ups reach the ledger's check.
            payee: ledger.createTestWallet({ usdc: '1', sui: '1' }),
            stranger: ledger.createTestWallet({ usdc: '1', sui: '1' }),
          }
          const address = (w: Who) => keys[w].toSuiAddress()
          const sessionKey = ed25519.utils.randomSecretKey()
          const forger = ed25519.utils.randomSecretKey()
          const salt = crypto.getRandomValues(new Uint8Array(32))
          const id = channelIdOf({
            packageId: ledger.modulesPackage,
            registry: ledger.channel.registry,
            coinType: ledger.usdcType,
            payer: address('payer'),
            payee: address('payee'),
            salt,
          })
          const base = (w: Who) => ({
            client,
            package: ledger.modulesPackage,
            sender: address(w),
          })
          expect(
            await exec(
              keys.payer,
              buildOpen({
                ...base('payer'),
                registry: ledger.channel.registry,
                coinType: ledger.usdcType,
                deposit,
                payee: address('payee'),
                salt,
                signerPublicKey: ed25519.getPublicKey(sessionKey),
                graceMs: MIN_GRACE_MS,
              }),
            ),
          ).toBe('ok')
          const channel = await readChannel(client, id)
          const model: Model = {
            deposited: deposit,
            settled: 0n,
            highest: 0n,
            sinceRequest: undefined,
            closed: false,
          }
          const voucher = (amount: bigint, forged: boolean): Promise<Voucher> =>
            signVoucher({ sign: (m) => ed25519.sign(m, forged ? forger : sessionKey) }, id, amount)

          const run = async (move: Move) => {
            if (move.kind === 'sign') {
              model.highest += move.raise
              return
            }
            if (move.kind === 'wait') {
              ledger.advanceClock(move.ms)
              if (model.sinceRequest !== undefined) model.sinceRequest += move.ms
              return
            }
            const want = expected(model, move)
            const signer = keys[move.who]
            let got: 'ok' | bigint | undefined
            if (move.kind === 'settle' || move.kind === 'close') {
              const capture = model.settled + move.delta
              const options = {
                ...base(move.who),
                channel,
                voucher: await voucher(model.highest, move.forged),
                capture,
              }
              got = await exec(
                signer,
                move.kind === 'settle' ? buildSettle(options) : buildClose(options),
              )
              if (got === 'ok') {
                model.settled = capture
                if (move.kind === 'close') model.closed = true
              }
            } else if (move.kind === 'topUp') {
              got = await exec(
                signer,
                buildTopUp({ ...base(move.who), channel, amount: move.amount }),
              )
              if (got === 'ok') {
                model.deposited += move.amount
                model.sinceRequest = undefined
              }
            } else if (move.kind === 'requestClose') {
              got = await exec(signer, buildRequestClose({ ...base(move.who), channel }))
              if (got === 'ok' && model.sinceRequest === undefined) model.sinceRequest = 0
            } else {
              got = await exec(signer, buildWithdraw({ ...base(move.who), channel }))
              if (got === 'ok') model.closed = true
            }
            expect(got, `${move.who} ${move.kind}`).toBe(want)
            const state = await readChannel(client, id)
            expect(state).toMatchObject({
              deposited: model.deposited,
              settled: model.settled,
              escrow: model.closed ? 0n : model.deposited - model.settled,
              closed: model.closed,
            })
          }

          for (const move of moves) await run(move)
          // The payee ends it with nothing more to take, when the payer has not.
          if (!model.closed) {
            await run({ kind: 'close', who: 'payee', delta: 0n, forged: true })
          }
          const paid = (await usdc(address('payee'))) - 1_000_000n
          expect(paid).toBe(model.settled)
          expect(paid).toBeLessThanOrEqual(model.highest)
          expect(paid).toBeLessThanOrEqual(model.deposited)
          // Deposits and top-ups came back but for what the payee was paid.
          expect(await usdc(address('payer'))).toBe(10_000_000n - paid)
          expect(await usdc(address('stranger'))).toBe(1_000_000n)
        },
      ),
      { numRuns: 25 },
    )
  }, 240_000)
})
