/**
 * Tasks run one at a time per key: a wallet's ledger transactions (two built at once would spend
 * the same coin and gas object versions, and the ledger would refuse the second), a channel's
 * top-ups. A task that fails does not stop the next.
 *
 * @module
 */
import type { Signer } from '@mysten/sui/cryptography'

/** Runs `task` once the tasks of `key` before it have finished. */
export type Turns<K> = <T>(key: K, task: () => Promise<T>) => Promise<T>

/**
 * Creates turns per key. A key is forgotten when its last task has finished.
 *
 * @example
 * ```ts
 * const turns = createTurns<string>()
 * await turns(channelId, () => topUp(channelId))
 * ```
 */
export function createTurns<K>(): Turns<K> {
  const last = new Map<K, Promise<unknown>>()
  return (key, task) => {
    const run = (last.get(key) ?? Promise.resolve()).then(task, task)
    const settled = run.catch(() => undefined)
    last.set(key, settled)
    void settled.then(() => {
      if (last.get(key) === settled) last.delete(key)
    })
    return run
  }
}

/**
 * A wallet's turns, shared by everything in this process that builds its transactions from its
 * coins: coin-form payments and session channels' opens, top-ups and withdrawals.
 */
export const walletTurns: Turns<Signer> = createTurns<Signer>()
