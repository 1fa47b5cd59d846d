/**
 * The receipt store on both engines of the relational store (SQLite file, PostgreSQL in a schema of
 * its own): a verified receipt and its session are kept exactly as given, written once by id even
 * when two writers race, read back after the store is closed and opened again, and its ledger
 * anchor is queued with it.
 */
import { afterAll, describe, expect, it } from 'vitest'
import { createTestTdxPlatform } from '../../src/testing/enclave/index.js'
import type { GatewayDatabase } from '../db/database.js'
import { testEngines } from '../db/testHelpers.js'
import type { VerifiedReceipt } from './confidential.js'
import { createReceiptStore } from './receipts.js'

const engines = testEngines('receipts')

const { collateral } = createTestTdxPlatform({ tcbStatus: 'UpToDate' })
const receiptJson = '{"api_version":"aci/1","receipt_id":"rcpt_1","model":"m","signature":"00"}'
const record = (id: string): VerifiedReceipt => ({
  id,
  model: 'confidential/m',
  receiptJson,
  keyId: 'rk-0',
  requestHash: `sha256:${'1'.repeat(64)}`,
  responseHash: `sha256:${'2'.repeat(64)}`,
  policy: {
    tee_type: 'intel-tdx',
    quote_verifier: { kind: 'tdx', collateral },
    allowed_measurements: ['ab'.repeat(48)],
  },
  session: {
    id: 'aci_00',
    nonce: '00',
    workloadId: 'sha256:w',
    keysetDigest: 'sha256:k',
    measurement: 'ab'.repeat(48),
    tcbStatus: 'UpToDate',
    receiptKeys: [],
    attestedAtMs: 1_767_225_600_000,
    staleAtMs: 1_767_225_900_000,
    report: { api_version: 'aci/1' } as never,
  },
})

for (const engine of engines) {
  describe.skipIf(engine.skip)(`receipts on ${engine.name}`, () => {
    afterAll(() => engine.cleanup())

    it('keeps a receipt and its session once, across a reopen', async () => {
      let database: GatewayDatabase = await engine.open()
      const store = createReceiptStore(database.db)
      // Two writers at once (two gateway processes, say): one row each, no error.
      await Promise.all([store.save(record('rcpt_1')), store.save(record('rcpt_1'))])
      await store.save(record('rcpt_2'))
      await database.close()

      database = await engine.open()
      const reopened = createReceiptStore(database.db)
      expect(await reopened.receipt('rcpt_1')).toMatchObject({
        object: 'aci.receipt',
        id: 'rcpt_1',
        session_id: 'aci_00',
        key_id: 'rk-0',
        relayed: { request_hash: `sha256:${'1'.repeat(64)}` },
        receipt: JSON.parse(receiptJson),
      })
      expect(await reopened.session('aci_00')).toMatchObject({
        object: 'aci.session',
        attested_at: '2026-01-01T00:00:00.000Z',
        stale_at: '2026-01-01T00:05:00.000Z',
        policy: { tee_type: 'intel-tdx' },
        report: { api_version: 'aci/1' },
      })
      expect(await reopened.receipt('rcpt_3')).toBeUndefined()
      // Its ledger anchor was queued with it (the outbox), once.
      expect(await reopened.anchor('rcpt_1')).toMatchObject({ state: 'pending', digest: null })
      expect(await reopened.backfillAnchor('rcpt_1')).toBe(true)
      expect(await reopened.backfillAnchor('rcpt_3')).toBe(false)
      const anchors = await database.db.selectFrom('aci_anchors').select('receipt_id').execute()
      expect(anchors).toHaveLength(2)
      const rows = await database.db.selectFrom('aci_receipts').select('id').execute()
      expect(rows.map((r) => r.id).sort()).toEqual(['rcpt_1', 'rcpt_2'])
      await database.close()
    })
  })
}
