/**
 * The shared set-up of the ledger's integration tests (not exported): the public
 * {@link useTestLedger} with every change the ledger commits checked for conservation (per coin
 * type, money appears only by a mint and SUI leaves only as gas); each test ends by asserting that
 * no change broke it.
 *
 * @module
 */
import { afterAll, afterEach, beforeAll, expect } from 'vitest'
import type { StartLedgerOptions } from './index.js'
import { checkSupply } from './supply.js'
import { type TestLedger, useTestLedger } from './testLedger.js'

/** Starts a ledger before the file's tests and stops it after them, checking its supply. */
export function useCheckedLedger(options: Omit<StartLedgerOptions, 'onCommit'> = {}): TestLedger {
  const supply = checkSupply()
  const ledger = useTestLedger({ beforeAll, afterAll }, { ...options, onCommit: supply.observe })
  afterEach(() => {
    // Reported once, by the test during which it happened.
    const found = supply.violations.splice(0)
    expect(found, 'money was created or destroyed').toEqual([])
  })
  return ledger
}

/** The USDC balance of `address` as the client reports it (total, coins, address balance). */
export async function usdcBalanceOf(ledger: TestLedger, address: string) {
  return (await ledger.client.core.getBalance({ owner: address, coinType: ledger.usdcType }))
    .balance
}
