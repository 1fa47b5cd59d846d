import type { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519'
import { Transaction } from '@mysten/sui/transactions'
import { describe, expect, it } from 'vitest'
import { structOf } from './signatures.js'
import { coinRefs } from './testHelpers.js'
import { useCheckedLedger } from './testSetup.js'

const ledger = useCheckedLedger()

async function call(signer: Ed25519Keypair, build: (tx: Transaction) => void) {
  const tx = new Transaction()
  tx.setSender(signer.toSuiAddress())
  tx.setGasPrice(1000)
  tx.setGasBudget(10_000_000)
  tx.setGasPayment(await coinRefs(ledger.client, signer.toSuiAddress(), '0x2::sui::SUI'))
  build(tx)
  const bytes = await tx.build()
  return ledger.client.core.executeTransaction({
    transaction: bytes,
    signatures: [(await signer.signTransaction(bytes)).signature],
    include: { events: true, effects: true },
  })
}

describe('agent identity registry', () => {
  it('registers an agent record for the sender, readable by owner and type, and updates it in place', async () => {
    const agent = ledger.createTestWallet()
    const register = (name: string) =>
      call(agent, (tx) =>
        tx.moveCall({
          target: `${ledger.modulesPackage}::agent_registry::register`,
          arguments: [
            tx.pure.string(name),
            tx.pure.string('https://agent.example/card.json'),
            tx.object.clock(),
          ],
        }),
      )
    const first = await register('scout')
    expect(first.$kind).toBe('Transaction')
    expect(first.Transaction?.events[0]).toMatchObject({
      eventType: `${ledger.modulesPackage}::agent_registry::AgentRegistered`,
      json: { agent: agent.toSuiAddress(), name: 'scout' },
    })
    const type = `${ledger.modulesPackage}::agent_registry::AgentRecord`
    const lookUp = async () =>
      (
        await ledger.client.core.listOwnedObjects({
          owner: agent.toSuiAddress(),
          type,
          include: { json: true },
        })
      ).objects
    const [record] = await lookUp()
    // The record has the fields of the Move struct `AgentRecord`.
    expect(Object.keys(record?.json ?? {}).sort()).toEqual(
      structOf('agent_registry', 'AgentRecord')
        .fields.map((f) => f.name)
        .sort(),
    )
    expect(record?.json).toMatchObject({
      agent: agent.toSuiAddress(),
      name: 'scout',
      metadata_uri: 'https://agent.example/card.json',
    })
    await register('scout-2')
    const records = await lookUp()
    expect(records).toHaveLength(1)
    expect(records[0]?.objectId).toBe(record?.objectId)
    expect(records[0]?.json).toMatchObject({ name: 'scout-2' })
  })
})

describe('receipt anchor', () => {
  it('emits ReceiptAnchored with the receipt fields, the anchoring address and the ledger time', async () => {
    const operator = ledger.createTestWallet()
    const before = Date.now()
    const result = await call(operator, (tx) =>
      tx.moveCall({
        target: `${ledger.modulesPackage}::receipt_anchor::anchor_receipt`,
        arguments: [
          tx.pure.string('rcpt_123'),
          tx.pure.string('sha256:abcd'),
          tx.pure.string('sha256:wl'),
          tx.pure.u64(1_700_000_000_000n),
          tx.pure.string('sha256:gw'),
          tx.object.clock(),
        ],
      }),
    )
    expect(result.$kind).toBe('Transaction')
    const [event] = result.Transaction?.events ?? []
    expect(event?.eventType).toBe(`${ledger.modulesPackage}::receipt_anchor::ReceiptAnchored`)
    expect(event?.json).toMatchObject({
      receipt_id: 'rcpt_123',
      wire_hash: 'sha256:abcd',
      workload_id: 'sha256:wl',
      served_at_ms: '1700000000000',
      gateway_receipt_hash: 'sha256:gw',
      anchored_by: operator.toSuiAddress(),
    })
    expect(Number(event?.json?.anchored_at_ms)).toBeGreaterThanOrEqual(before)
    const fetched = await ledger.client.core.getTransaction({
      digest: result.Transaction!.digest,
      include: { events: true },
    })
    expect(fetched.Transaction?.events[0]?.json).toEqual(event?.json)
  })

  it('aborts on malformed arguments', async () => {
    const operator = ledger.createTestWallet()
    const result = await call(operator, (tx) =>
      tx.moveCall({
        target: `${ledger.modulesPackage}::receipt_anchor::anchor_receipt`,
        arguments: [tx.pure.u8(1)],
      }),
    )
    expect(result.$kind).toBe('FailedTransaction')
  })

  it('takes the arguments its declared signature names: the Clock object last, no more, no fewer', async () => {
    const operator = ledger.createTestWallet()
    const strings = (tx: Transaction) => [
      tx.pure.string('rcpt_1'),
      tx.pure.string('sha256:ab'),
      tx.pure.string('sha256:wl'),
      tx.pure.u64(1n),
      tx.pure.string(''),
    ]
    const withoutClock = await call(operator, (tx) =>
      tx.moveCall({
        target: `${ledger.modulesPackage}::receipt_anchor::anchor_receipt`,
        arguments: strings(tx),
      }),
    )
    expect(withoutClock.FailedTransaction?.status.error?.message).toMatch(
      /anchor_receipt takes 6 arguments, got 5/,
    )
    const notTheClock = await call(operator, (tx) =>
      tx.moveCall({
        target: `${ledger.modulesPackage}::receipt_anchor::anchor_receipt`,
        arguments: [...strings(tx), tx.pure.u64(0n)],
      }),
    )
    expect(notTheClock.FailedTransaction?.status.error?.message).toMatch(
      /clock must be the Clock object 0x6/,
    )
  })
})
