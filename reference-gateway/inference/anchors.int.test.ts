/**
 * Ledger anchors of confidential receipts, on the ledger emulator with the real `@mysten/sui` SDK:
 * the gateway (embedded default) anchors a confidential answer's receipt through its outbox, the
 * `ReceiptAnchored` event commits the receipt's id, wire hash, workload and the gateway receipt's hash, `POST /v1/aci/anchor`
 * is an idempotent backfill, and two workers racing over one store submit one anchor transaction.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { useTestLedger } from 'tollgate/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Attestation, createLedger, type Ledger } from '../../src/index.js'
import { openDatabase } from '../db/database.js'
import { useTestGateway } from '../server/testHelpers.js'
import { createAnchorWorker, enqueueAnchor, readAnchor } from './anchors.js'

const folder = mkdtempSync(join(tmpdir(), 'tollgate-anchors-'))
afterAll(() => rmSync(folder, { recursive: true, force: true }))

describe('the gateway anchors confidential receipts', () => {
  const gateway = useTestGateway()

  it('through the outbox: the event commits the receipt; POST backfills idempotently', async () => {
    const { key } = await gateway.inference.keys.create({ credit: 10_000n })
    const answer = await fetch(`${gateway.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'confidential/llama-3.3-70b',
        messages: [{ role: 'user', content: 'Hi' }],
      }),
    })
    expect(answer.status).toBe(200)
    const id = answer.headers.get('x-receipt-id') ?? ''
    const queued = await (await fetch(`${gateway.url}/v1/aci/anchor/${id}`)).json()
    expect(queued).toMatchObject({ object: 'aci.anchor', receipt_id: id })

    const posted = await fetch(`${gateway.url}/v1/aci/anchor/${id}`, { method: 'POST' })
    expect(posted.status).toBe(200)
    const anchor = (await posted.json()) as { state: string; digest: string }
    expect(anchor.state).toBe('anchored')
    const again = await (
      await fetch(`${gateway.url}/v1/aci/anchor/${id}`, { method: 'POST' })
    ).json()
    expect(again.digest).toBe(anchor.digest)

    const stored = await (await fetch(`${gateway.url}/v1/aci/receipts/${id}`)).json()
    const ledger = createLedger({ url: gateway.ledger.url })
    const found = await ledger.getTransaction(anchor.digest)
    expect(found.status).toBe('found')
    if (found.status !== 'found') return
    const event = found.transaction.events.find((e) => e.eventType.endsWith('::ReceiptAnchored'))
    expect(event?.json).toMatchObject({
      receipt_id: id,
      wire_hash: stored.relayed.response_hash,
      workload_id: stored.receipt.workload_id,
      served_at_ms: String(Date.parse(stored.receipt.served_at)),
      gateway_receipt_hash: Attestation.gatewayReceiptHash(stored.gateway_receipt),
    })
    expect(
      (await fetch(`${gateway.url}/v1/aci/anchor/rcpt_unknown`, { method: 'POST' })).status,
    ).toBe(404)
  })
})

describe('two workers racing over one store', () => {
  const emulator = useTestLedger({ beforeAll, afterAll })
  it('submit one anchor transaction per receipt', async () => {
    const file = join(folder, 'race.db')
    const a = await openDatabase({ kind: 'sqlite', file })
    const b = await openDatabase({ kind: 'sqlite', file })
    const signer = emulator.createTestWallet({ sui: '1' })
    const submitted = new Set<string>()
    const base = createLedger({ url: emulator.url })
    const ledger: Ledger = {
      ...base,
      async execute(bytes, signatures) {
        const outcome = await base.execute(bytes, signatures)
        if (outcome.status === 'executed') submitted.add(outcome.transaction.digest)
        return outcome
      },
    }
    const ids = ['rcpt_a', 'rcpt_b', 'rcpt_c']
    for (const receiptId of ids) {
      await enqueueAnchor(a.db, {
        receiptId,
        wireHash: `sha256:${'0'.repeat(64)}`,
        workloadId: `sha256:${'1'.repeat(64)}`,
        servedAtMs: 1_767_225_600_000n,
        gatewayReceiptHash: `sha256:${'2'.repeat(64)}`,
      })
    }
    const worker = (db: typeof a.db, holder: string) =>
      createAnchorWorker({ db, ledger, signer, packageId: emulator.modulesPackage, holder })
    const one = worker(a.db, 'one')
    const two = worker(b.db, 'two')
    let anchored = 0
    for (let round = 0; round < 3; round++) {
      const counts = await Promise.all([one.runOnce(), two.runOnce()])
      anchored += counts[0] + counts[1]
    }
    expect(anchored).toBe(ids.length)
    expect(submitted.size).toBe(ids.length)
    for (const receiptId of ids) {
      expect(await readAnchor(a.db, receiptId)).toMatchObject({ state: 'anchored' })
    }
    await Promise.all([a.close(), b.close()])
  })
})
