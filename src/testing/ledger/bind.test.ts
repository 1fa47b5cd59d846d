import { bcs } from '@mysten/sui/bcs'
import { normalizeSuiAddress } from '@mysten/sui/utils'
import { describe, expect, it } from 'vitest'
import { eventBcs } from './bind.js'

describe('eventBcs', () => {
  it('encodes an event as the BCS struct of its declared fields, in order', () => {
    const values = {
      job_id: normalizeSuiAddress('0xa0b'),
      to: normalizeSuiAddress('0x5e'),
      amount: 950_001n,
      fee: 50_000n,
    }
    const expected = bcs
      .struct('JobReleased', {
        job_id: bcs.Address,
        to: bcs.Address,
        amount: bcs.u64(),
        fee: bcs.u64(),
      })
      .serialize(values)
      .toBytes()
    expect(eventBcs('escrow', 'JobReleased', values)).toEqual(expected)
    const anchored = {
      receipt_id: 'rcpt_1',
      wire_hash: 'sha256:ab',
      workload_id: 'sha256:wl',
      served_at_ms: 1n,
      gateway_receipt_hash: '',
      anchored_at_ms: 2n,
      anchored_by: normalizeSuiAddress('0x0e'),
    }
    expect(
      bcs
        .struct('ReceiptAnchored', {
          receipt_id: bcs.string(),
          wire_hash: bcs.string(),
          workload_id: bcs.string(),
          served_at_ms: bcs.u64(),
          gateway_receipt_hash: bcs.string(),
          anchored_at_ms: bcs.u64(),
          anchored_by: bcs.Address,
        })
        .parse(eventBcs('receipt_anchor', 'ReceiptAnchored', anchored)),
    ).toEqual({ ...anchored, served_at_ms: '1', anchored_at_ms: '2' })
  })

  it('refuses an event with a declared field missing', () => {
    expect(() => eventBcs('escrow', 'FeeChanged', { old_bps: 1n })).toThrow(
      'no value for event field FeeChanged.new_bps',
    )
  })
})
