/**
 * The shared set-up of the ledger's integration tests (not exported): one emulator and one real
 * `SuiGrpcClient` per test file, stopped after the file's tests.
 *
 * @module
 */
import { SuiGrpcClient } from '@mysten/sui/grpc'
import { afterAll, beforeAll } from 'vitest'
import { type StartedLedger, startLedger } from './index.js'

/** Starts a ledger before the file's tests and stops it after them; `use` receives it and a client. */
export function useTestLedger(use: (ledger: StartedLedger, client: SuiGrpcClient) => void): void {
  let started: StartedLedger | undefined
  beforeAll(async () => {
    started = await startLedger()
    use(started, new SuiGrpcClient({ network: 'mainnet', baseUrl: started.url }))
  })
  afterAll(() => started?.stop())
}

/** The USDC balance of `address` as the client reports it (total, coins, address balance). */
export async function usdcBalanceOf(client: SuiGrpcClient, ledger: StartedLedger, address: string) {
  return (await client.core.getBalance({ owner: address, coinType: ledger.usdcType })).balance
}
