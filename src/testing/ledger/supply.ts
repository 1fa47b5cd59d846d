/**
 * The ledger's conservation invariant, for its tests (not exported): per coin type, what exists
 * (coin objects plus address balances, plus what escrow jobs and session channels hold) changes only by a mint (the faucet), and SUI also by the gas
 * a transaction is charged. A transaction that moves money around can never create or destroy it.
 *
 * @module
 */
import { channelEscrow } from './channel.js'
import type { LedgerChange } from './engine.js'
import { type LedgerState, SUI_TYPE } from './state.js'

/** What exists of each coin type: coin object balances plus address balances. */
export function holdings(state: LedgerState): Map<string, bigint> {
  const out = new Map<string, bigint>()
  const add = (type: string, amount: bigint) => out.set(type, (out.get(type) ?? 0n) + amount)
  for (const object of state.objects.values()) {
    if (object.coin) add(object.coin.coinType, object.coin.balance)
    // USDC locked in an escrow job (docs/escrow.md) still exists until it is paid out or returned.
    const locked = (object.fields as { balance?: unknown } | undefined)?.balance
    if (object.type.endsWith('::escrow::EscrowJob') && typeof locked === 'string') {
      add(state.usdcType, BigInt(locked))
    }
    // A session channel's deposit not yet paid out or refunded.
    const held = channelEscrow(object)
    if (held) add(held.coinType, held.amount)
  }
  for (const [key, amount] of state.addressBalances) add(key.split('|')[1] ?? '', amount)
  return out
}

/** SUI a transaction's gas took out of circulation (computation and storage, less the rebate). */
export function gasCharged(record: Extract<LedgerChange, { kind: 'transaction' }>['record']) {
  const gas = record.gasUsed
  return gas.computationCost + gas.storageCost - gas.storageRebate
}

/**
 * A checker for `onCommit` of a ledger that starts empty: after every change, the holdings of every coin type must equal the
 * holdings before plus what was minted, minus the gas charged (SUI). Violations are collected (an
 * `onCommit` that threw would break the ledger under test rather than report).
 *
 * @example
 * const supply = checkSupply()
 * const ledger = await startLedger({ onCommit: supply.observe })
 * // … after the tests:
 * expect(supply.violations).toEqual([])
 */
export function checkSupply(): {
  observe(change: LedgerChange, state: LedgerState): void
  violations: string[]
} {
  let expected = new Map<string, bigint>()
  const violations: string[] = []
  return {
    violations,
    observe(change, state) {
      const now = holdings(state)
      if (change.kind === 'mint') {
        expected.set(change.coinType, (expected.get(change.coinType) ?? 0n) + change.amount)
      } else {
        expected.set(SUI_TYPE, (expected.get(SUI_TYPE) ?? 0n) - gasCharged(change.record))
      }
      for (const type of new Set([...expected.keys(), ...now.keys()])) {
        const want = expected.get(type) ?? 0n
        const have = now.get(type) ?? 0n
        if (want !== have) {
          const what = change.kind === 'mint' ? 'a mint' : `transaction ${change.record.digest}`
          violations.push(`${type}: ${have} exist after ${what}, ${want} expected`)
        }
      }
      expected = now
    },
  }
}
