/**
 * The shared set-up of the ledger's integration tests (not exported): one emulator and one real
 * `SuiGrpcClient` per test file, stopped after the file's tests. Every change the ledger commits is
 * checked for conservation (per coin type, money appears only by a mint and SUI leaves only as
 * gas); each test ends by asserting that no change broke it.
 *
 * @module
 */
import { SuiGrpcClient } from '@mysten/sui/grpc'
import { afterAll, afterEach, beforeAll, expect } from 'vitest'
import { type StartedLedger, startLedger } from './index.js'
import { checkSupply } from './supply.js'

/** Starts a ledger before the file's tests and stops it after them; `use` receives it and a client. */
export function useTestLedger(use: (ledger: StartedLedger, client: SuiGrpcClient) => void): void {
  let started: StartedLedger | undefined
  const supply = checkSupply()
  beforeAll(async () => {
    started = await startLedger({ onCommit: supply.observe })
    use(started, new SuiGrpcClient({ network: 'mainnet', baseUrl: started.url }))
  })
  afterEach(() => {
    // Reported once, by the test during which it happened.
    const found = supply.violations.splice(0)
    expect(found, 'money was created or destroyed').toEqual([])
  })
  afterAll(() => started?.stop())
}

/** The USDC balance of `address` as the client reports it (total, coins, address balance). */
export async function usdcBalanceOf(client: SuiGrpcClient, ledger: StartedLedger, address: string) {
  return (await client.core.getBalance({ owner: address, coinType: ledger.usdcType })).balance
}
