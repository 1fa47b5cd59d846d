/**
 * The options several commands share, written once: which ledger and network a command talks to,
 * and which payment dialect a paying command prefers.
 *
 * @module
 */
import { Option } from 'commander'

/** The networks a command can name (`--network`). */
export const networks = ['sui:mainnet', 'sui:testnet'] as const

/** `--ledger <url>` (or `TOLLGATE_LEDGER`): the ledger's gRPC URL. */
export function ledgerOption(): Option {
  return new Option('--ledger <url>', 'ledger gRPC URL (the emulator: tollgate ledger)').env(
    'TOLLGATE_LEDGER',
  )
}

/** `--network <network>`: one of {@link networks}, default `sui:mainnet`. */
export function networkOption(): Option {
  return new Option('--network <network>', 'network').default('sui:mainnet').choices(networks)
}

/** `--prefer <dialect>`: the dialect a paying command picks when a 402 offers both. */
export function preferOption(): Option {
  return new Option('--prefer <dialect>', 'dialect when both are offered').choices(['x402', 'mpp'])
}

/** The message of a thrown value (`Error` or not), for a one-line CLI error. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
