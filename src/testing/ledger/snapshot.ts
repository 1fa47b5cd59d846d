/**
 * JSON snapshots of the ledger state, so a demo ledger survives restarts.
 *
 * @module
 */
import { fromBase64, toBase64 } from '@mysten/sui/utils'
import type { LedgerState } from './state.js'

const VERSION = 1

/** Serializes the state (bigints as tagged strings, bytes as base64). */
export function toSnapshot(state: LedgerState): string {
  return JSON.stringify(
    {
      version: VERSION,
      ...state,
      objects: [...state.objects.values()],
      addressBalances: [...state.addressBalances],
      transactions: [...state.transactions.values()],
    },
    (_key, value) => {
      if (typeof value === 'bigint') return `${value}n`
      if (value instanceof Uint8Array) return { $bytes: toBase64(value) }
      return value
    },
  )
}

/** Restores a state written by {@link toSnapshot}. */
export function fromSnapshot(text: string): LedgerState {
  const raw = JSON.parse(text, (_key, value) => {
    if (typeof value === 'string' && /^-?\d+n$/.test(value)) return BigInt(value.slice(0, -1))
    if (value && typeof value === 'object' && typeof value.$bytes === 'string')
      return fromBase64(value.$bytes)
    return value
  })
  if (raw?.version !== VERSION) throw new Error('unsupported ledger snapshot version')
  return {
    chainId: raw.chainId,
    usdcType: raw.usdcType,
    seed: raw.seed,
    referenceGasPrice: raw.referenceGasPrice,
    epoch: raw.epoch,
    epochStartMs: raw.epochStartMs,
    checkpoint: raw.checkpoint,
    objectCounter: raw.objectCounter,
    objects: new Map(raw.objects.map((o: { objectId: string }) => [o.objectId, o])),
    addressBalances: new Map(raw.addressBalances),
    transactions: new Map(raw.transactions.map((t: { digest: string }) => [t.digest, t])),
  }
}
