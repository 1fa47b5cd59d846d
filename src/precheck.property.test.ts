/**
 * Random programmable transactions, built and signed with `@mysten/sui` (random commands, type
 * arguments including primitives and vectors, pure, object and withdrawal inputs, the three ways of
 * paying gas): the pre-check never throws and rejects only with a `PaymentError`; the ledger
 * emulator never fails internally (every answer is a rejection a node would give or an executed
 * transaction that encodes), and no transaction creates or destroys money.
 */
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Transaction, type TransactionArgument } from '@mysten/sui/transactions'
import { toBase64 } from '@mysten/sui/utils'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { PaymentError } from './errors.js'
import { normalizeTerms, precheckPayment } from './precheck.js'
import { createEngine } from './testing/ledger/engine.js'
import { executedTransactionProto, fieldsOf } from './testing/ledger/proto.js'
import { type StoredObject, SUI_TYPE } from './testing/ledger/state.js'
import { checkSupply } from './testing/ledger/supply.js'

const supply = checkSupply()
const engine = createEngine({ onCommit: supply.observe })
const usdc = engine.state.usdcType
const payer = new Ed25519Keypair()
const sender = payer.toSuiAddress()
const seller = new Ed25519Keypair().toSuiAddress()
const target = normalizeTerms({ payTo: seller, asset: usdc, amount: 20_000n })

/** Keeps the payer funded: coins of both kinds and address balances. */
function refill() {
  const owned = [...engine.state.objects.values()].filter(
    (o) => o.owner.kind === 'address' && o.owner.address === sender && o.coin,
  )
  if (owned.filter((o) => o.coin?.coinType === SUI_TYPE).length < 2) {
    engine.mint({ address: sender, coinType: SUI_TYPE, amount: 1_000_000_000n, into: 'coin' })
    engine.mint({ address: sender, coinType: SUI_TYPE, amount: 1_000_000_000n, into: 'coin' })
    engine.mint({
      address: sender,
      coinType: SUI_TYPE,
      amount: 100_000_000n,
      into: 'addressBalance',
    })
  }
  if (owned.filter((o) => o.coin?.coinType === usdc).length < 1) {
    engine.mint({ address: sender, coinType: usdc, amount: 5_000_000n, into: 'coin' })
    engine.mint({ address: sender, coinType: usdc, amount: 5_000_000n, into: 'addressBalance' })
  }
}

const typeTag = fc.constantFrom(
  'u8',
  'u64',
  'u128',
  'bool',
  'address',
  'vector<u8>',
  'vector<vector<u64>>',
  'vector<0x2::sui::SUI>',
  '0x2::sui::SUI',
  '0x2::coin::Coin<0x2::sui::SUI>',
  '0x2::coin::Coin<u64>',
  '0x2::balance::Balance<vector<u8>>',
  '0x42::nope::NOPE',
  '0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC',
  '0x5d4b302506645c37ff133b98c4b50a5ae14841659738d6d733d59d0d217a93bf::coin::COIN',
)
const functions = fc.constantFrom(
  '0x2::balance::zero',
  '0x2::balance::destroy_zero',
  '0x2::balance::join',
  '0x2::balance::split',
  '0x2::balance::send_funds',
  '0x2::balance::redeem_funds',
  '0x2::coin::zero',
  '0x2::coin::destroy_zero',
  '0x2::coin::value',
  '0x2::coin::split',
  '0x2::coin::join',
  '0x2::coin::send_funds',
  '0x2::coin::into_balance',
  '0x2::coin::from_balance',
  '0x2::coin::redeem_funds',
  '0x2::transfer::public_transfer',
  '0x2::nope::nothing',
  '0x42::m::f',
)

/** How one argument is chosen: a pure value, an input object, the gas coin, or an earlier result. */
const argument = fc.oneof(
  fc.record({
    kind: fc.constant('u64' as const),
    value: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
  }),
  fc.record({ kind: fc.constant('address' as const), who: fc.constantFrom('seller', 'payer') }),
  fc.record({ kind: fc.constant('bytes' as const), value: fc.uint8Array({ maxLength: 40 }) }),
  fc.record({ kind: fc.constant('bool' as const), value: fc.boolean() }),
  fc.record({
    kind: fc.constant('object' as const),
    which: fc.constantFrom('usdc', 'sui', 'stale', 'missing'),
  }),
  fc.record({
    kind: fc.constant('withdrawal' as const),
    type: typeTag,
    amount: fc.bigInt({ min: 0n, max: 50_000_000n }),
  }),
  fc.record({ kind: fc.constant('gas' as const) }),
  fc.record({
    kind: fc.constant('result' as const),
    index: fc.nat(8),
    nested: fc.option(fc.nat(2)),
  }),
)

const command = fc.oneof(
  fc.record({
    kind: fc.constant('split' as const),
    coin: argument,
    amounts: fc.array(argument, { minLength: 1, maxLength: 3 }),
  }),
  fc.record({
    kind: fc.constant('merge' as const),
    into: argument,
    from: fc.array(argument, { minLength: 1, maxLength: 2 }),
  }),
  fc.record({
    kind: fc.constant('transfer' as const),
    objects: fc.array(argument, { minLength: 1, maxLength: 3 }),
    to: argument,
  }),
  fc.record({
    kind: fc.constant('call' as const),
    target: functions,
    types: fc.array(typeTag, { maxLength: 2 }),
    args: fc.array(argument, { maxLength: 3 }),
  }),
  fc.record({
    kind: fc.constant('vec' as const),
    type: fc.option(typeTag),
    elements: fc.array(argument, { maxLength: 2 }),
  }),
)

const transaction = fc.record({
  gas: fc.constantFrom('coin', 'gasless', 'addressBalance'),
  commands: fc.array(command, { minLength: 1, maxLength: 6 }),
})

type Plan = typeof transaction extends fc.Arbitrary<infer T> ? T : never
type Arg = Plan['commands'][number] extends infer C
  ? C extends { coin: infer A }
    ? A
    : never
  : never

const ref = (o: StoredObject) => ({
  objectId: o.objectId,
  version: String(o.version),
  digest: o.digest,
})

function build(plan: Plan): Transaction {
  const coins = [...engine.state.objects.values()].filter(
    (o) => o.owner.kind === 'address' && o.owner.address === sender && o.coin,
  )
  const [gasCoin, otherSui] = coins.filter((o) => o.coin?.coinType === SUI_TYPE)
  const usdcCoin = coins.find((o) => o.coin?.coinType === usdc)
  const tx = new Transaction()
  tx.setSender(sender)
  if (plan.gas === 'coin') {
    tx.setGasPrice(1000)
    tx.setGasBudget(10_000_000n)
    tx.setGasPayment(gasCoin ? [ref(gasCoin)] : [])
  } else {
    tx.setGasPrice(plan.gas === 'gasless' ? 0 : 1000)
    tx.setGasBudget(plan.gas === 'gasless' ? 0 : 10_000_000n)
    tx.setGasPayment([])
    tx.setExpiration({
      ValidDuring: {
        minEpoch: String(engine.state.epoch),
        maxEpoch: String(engine.state.epoch + 1n),
        minTimestamp: null,
        maxTimestamp: null,
        chain: engine.state.chainId,
        nonce: Math.floor(Math.random() * 2 ** 32),
      },
    })
  }
  const results: TransactionArgument[][] = []
  const arg = (a: Arg): TransactionArgument => {
    switch (a.kind) {
      case 'u64':
        return tx.pure.u64(a.value)
      case 'address':
        return tx.pure.address(a.who === 'seller' ? seller : sender)
      case 'bytes':
        return tx.pure.vector('u8', [...a.value])
      case 'bool':
        return tx.pure.bool(a.value)
      case 'object': {
        const o = a.which === 'usdc' ? usdcCoin : a.which === 'sui' ? otherSui : undefined
        if (o) return tx.objectRef(ref(o))
        const stale = {
          objectId: `0x${'ab'.repeat(32)}`,
          version: '1',
          digest: gasCoin?.digest ?? '',
        }
        return tx.objectRef(
          a.which === 'stale' && usdcCoin ? { ...ref(usdcCoin), version: '1' } : stale,
        )
      }
      case 'withdrawal':
        return tx.withdrawal({ amount: a.amount, type: a.type })
      case 'gas':
        return tx.gas
      case 'result': {
        const earlier = results[a.index % Math.max(1, results.length)]
        if (earlier === undefined || earlier.length === 0) return tx.gas
        return a.nested === null
          ? (earlier[0] as TransactionArgument)
          : (earlier[a.nested % earlier.length] as TransactionArgument)
      }
    }
  }
  for (const c of plan.commands) {
    let out: TransactionArgument[] = []
    switch (c.kind) {
      case 'split': {
        const result = tx.splitCoins(
          arg(c.coin) as never,
          c.amounts.map((a) => arg(a) as never),
        )
        out = c.amounts.map((_, i) => result[i] as TransactionArgument)
        break
      }
      case 'merge':
        tx.mergeCoins(
          arg(c.into) as never,
          c.from.map((a) => arg(a) as never),
        )
        break
      case 'transfer':
        tx.transferObjects(
          c.objects.map((a) => arg(a) as never),
          arg(c.to) as never,
        )
        break
      case 'call': {
        const result = tx.moveCall({
          target: c.target as `${string}::${string}::${string}`,
          typeArguments: c.types,
          arguments: c.args.map((a) => arg(a) as never),
        })
        out = [result[0] as TransactionArgument, result[1] as TransactionArgument]
        break
      }
      case 'vec': {
        const result = tx.makeMoveVec({
          ...(c.type === null ? {} : { type: c.type }),
          elements: c.elements.map((a) => arg(a) as never),
        })
        out = [result]
        break
      }
    }
    results.push(out)
  }
  return tx
}

describe('random programmable transactions', () => {
  it('the pre-check answers with a PaymentError at worst; the emulator never fails internally', async () => {
    let executed = 0
    let rejected = 0
    await fc.assert(
      fc.asyncProperty(transaction, async (plan) => {
        refill()
        let bytes: Uint8Array
        try {
          bytes = await build(plan).build({ assumeSufficientAddressBalances: true } as never)
        } catch {
          return // the SDK's own builder refused the shape: nothing to sign
        }
        const { signature } = await payer.signTransaction(bytes)

        const checked = await precheckPayment(toBase64(bytes), signature, target)
        if (checked.status === 'rejected') expect(checked.error).toBeInstanceOf(PaymentError)

        const submitted = await engine.submit(bytes, [signature])
        if (submitted.status === 'rejected') {
          rejected++
          expect(submitted.code).not.toBe(13)
        } else {
          executed++
          expect(() =>
            executedTransactionProto(submitted.record, fieldsOf(undefined)),
          ).not.toThrow()
        }
        expect(supply.violations).toEqual([])
      }),
      { numRuns: 400 },
    )
    // The generator reaches execution as well as rejection.
    expect(executed).toBeGreaterThan(20)
    expect(rejected).toBeGreaterThan(20)
  }, 120_000)
})
