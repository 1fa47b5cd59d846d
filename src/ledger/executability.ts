/**
 * Whether signed transaction bytes that are not on the ledger could still execute there. A refund
 * must never be paid twice, so a recorded refund is replaced only once this says `never`: its
 * expiration has passed by the ledger's own epoch and clock, or an owned object it names (an input
 * or a gas coin) is no longer at the version it names (versions only grow: that version is spent).
 *
 * @module
 */
import type { ClientWithCoreApi } from '@mysten/sui/client'
import { normalizeSuiAddress } from '@mysten/sui/utils'
import { messageOf } from '../internal/messageOf.js'
import { parseTransactionData } from '../internal/transactionData.js'
import type { ExecutabilityOutcome } from './types.js'

type Ref = { objectId: string; version: string | number | bigint }

/** Judges `txBytes` against the ledger's current epoch, clock and object versions. */
export async function judgeExecutability(
  client: ClientWithCoreApi,
  txBytes: Uint8Array,
  timeoutMs: number,
): Promise<ExecutabilityOutcome> {
  let data: ReturnType<typeof parseTransactionData>['V1']
  try {
    data = parseTransactionData(txBytes).V1
  } catch {
    return { status: 'never', reason: 'the bytes are not a transaction' }
  }
  try {
    const { systemState } = await client.core.getCurrentSystemState({
      signal: AbortSignal.timeout(timeoutMs),
    })
    const epoch = BigInt(systemState.epoch ?? '0')
    // The ledger's clock is at least the start of its epoch: judged by that, never by ours.
    const ledgerTimeMs = BigInt(systemState.epochStartTimestampMs ?? '0')
    const expiration = data.expiration
    if (expiration.$kind === 'Epoch' && epoch > BigInt(expiration.Epoch)) {
      return { status: 'never', reason: `expired at the end of epoch ${expiration.Epoch}` }
    }
    if (expiration.$kind === 'ValidDuring') {
      const { maxEpoch, maxTimestamp } = expiration.ValidDuring
      if (maxEpoch !== null && epoch > BigInt(maxEpoch)) {
        return { status: 'never', reason: `valid only until epoch ${maxEpoch}` }
      }
      if (maxTimestamp !== null && ledgerTimeMs > BigInt(maxTimestamp)) {
        return { status: 'never', reason: `valid only until ${maxTimestamp} ms` }
      }
    }

    const refs: Ref[] = [...data.gasData.payment]
    for (const input of data.kind.ProgrammableTransaction?.inputs ?? []) {
      const owned = input.$kind === 'Object' ? input.Object.ImmOrOwnedObject : undefined
      if (owned) refs.push(owned)
    }
    if (refs.length > 0) {
      const { objects } = await client.core.getObjects({
        objectIds: refs.map((r) => normalizeSuiAddress(r.objectId)),
        signal: AbortSignal.timeout(timeoutMs),
      })
      for (const [i, ref] of refs.entries()) {
        const object = objects[i]
        if (object instanceof Error) {
          if ((object as { code?: unknown }).code === 'notExists') {
            return { status: 'never', reason: `input ${ref.objectId} no longer exists` }
          }
          return { status: 'unknown', reason: object.message.slice(0, 200) }
        }
        if (object === undefined) return { status: 'unknown', reason: 'object look-up incomplete' }
        if (BigInt(object.version) !== BigInt(ref.version)) {
          return {
            status: 'never',
            reason: `input ${ref.objectId} moved on from version ${ref.version}`,
          }
        }
      }
    }
    return { status: 'possible' }
  } catch (error) {
    return {
      status: 'unknown',
      reason: messageOf(error).slice(0, 200),
    }
  }
}
