/**
 * Test wallets funded by a running local ledger's faucet over HTTP (for tests that talk to a
 * `tollgate ledger` process rather than an in-process `startLedger()`).
 *
 * @module
 */
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import type { FaucetRequest, FaucetResult } from './ledger/faucet.js'

/** Options of {@link createTestWallet}. */
export type TestWalletOptions = Omit<FaucetRequest, 'address' | 'extra'> & {
  /** Base URL of the local ledger (what `tollgate ledger` prints). */
  url: string
  /** Abort after this many ms. Default 10 000. */
  timeoutMs?: number
}

/**
 * Creates a fresh Ed25519 keypair and funds it through `POST {url}/faucet` (default 10 USDC and
 * 1 SUI as coins). Test money only: the local ledger's payments are not real.
 *
 * @example
 * const buyer = await createTestWallet({ url: 'http://127.0.0.1:9123', usdc: '5' })
 */
export async function createTestWallet(
  options: TestWalletOptions,
): Promise<{ keypair: Ed25519Keypair; address: string; funded: FaucetResult }> {
  const keypair = Ed25519Keypair.generate()
  const { url, timeoutMs, ...funding } = options
  const response = await fetch(new URL('/faucet', url), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...funding, address: keypair.toSuiAddress() }),
    signal: AbortSignal.timeout(timeoutMs ?? 10_000),
  })
  if (!response.ok) throw new Error(`faucet answered HTTP ${response.status}`)
  const funded = (await response.json()) as FaucetResult
  return { keypair, address: keypair.toSuiAddress(), funded }
}
