/**
 * The shared `Clock` object (`0x6`) on the local ledger. The project's functions take `&Clock` as
 * they do on Sui; the emulator checks that the argument is this object and reads the time from the
 * ledger's clock at execution (the object's own fields are not kept current).
 *
 * @module
 */
import { normalizeSuiAddress } from '@mysten/sui/utils'
import { type LedgerState, putObject } from './state.js'

/** The id of the shared `Clock` object. */
export const CLOCK_OBJECT_ID = normalizeSuiAddress('0x6')
/** The Move type of the shared `Clock` object. */
export const CLOCK_OBJECT_TYPE = `${normalizeSuiAddress('0x2')}::clock::Clock`

/** Creates the shared `Clock` (initial shared version 1, as on Sui) when the state has none yet. */
export function ensureClockObject(state: LedgerState): void {
  if (state.objects.has(CLOCK_OBJECT_ID)) return
  putObject(state, {
    objectId: CLOCK_OBJECT_ID,
    version: 1n,
    owner: { kind: 'shared', initialVersion: 1n },
    type: CLOCK_OBJECT_TYPE,
    fields: { id: CLOCK_OBJECT_ID, timestamp_ms: '0' },
    previousTransaction: 'genesis',
  })
}
