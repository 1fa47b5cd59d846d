/**
 * The durable record of confidential answers, in the gateway's relational store (Kysely, SQLite or
 * PostgreSQL): every receipt the gateway verified, exactly as the enclave sent it, with the hashes of
 * the bytes sent and relayed, and the attested session whose keys verified it (its report, nonce and
 * the policy it was checked against). Both outlive the enclave's own retention and a gateway
 * restart, and are what `GET /v1/aci/receipts/{id}` and `/v1/aci/sessions/{id}` answer. Writes are
 * idempotent: a session is written once by id, a receipt once by id, also when processes race.
 *
 * @module
 */

import type { Kysely } from 'kysely'
import type { Attestation } from 'tollgate'
import { toBigint } from '../db/database.js'
import type { GatewaySchema } from '../db/schema.js'
import { type AnchorRecord, anchorFieldsOf, enqueueAnchor, readAnchor } from './anchors.js'
import type { AttestationPolicy, VerifiedReceipt } from './confidential.js'

/** A stored receipt, as `GET /v1/aci/receipts/{id}` answers it. */
export type StoredReceipt = {
  object: 'aci.receipt'
  id: string
  model: string
  session_id: string
  key_id: string
  /** `sha256:` of the bytes the gateway sent to the enclave and relayed to the caller. */
  relayed: { request_hash: string; response_hash: string }
  stored_at: string
  /** The enclave's signed receipt. */
  receipt: unknown
  /** The gateway's own receipt (compact JWS, keys at `/.well-known/tollgate-receipt-keys.json`). */
  gateway_receipt: string | null
}

/** A stored attested session, as `GET /v1/aci/sessions/{id}` answers it. */
export type StoredSession = {
  object: 'aci.session'
  id: string
  model: string
  nonce: string
  workload_id: string
  keyset_digest: string
  measurement: string
  tcb_status: string
  attested_at: string
  stale_at: string
  policy: AttestationPolicy
  /** The attestation report as received. */
  report: unknown
}

/** The store of receipts and sessions. */
export type ReceiptStore = {
  /** Writes a verified receipt, the gateway's receipt for it, and its session (each once). */
  save(receipt: VerifiedReceipt, gatewayReceipt?: string): Promise<void>
  /** Writes an attested session (once). */
  saveSession(
    model: string,
    session: Attestation.AttestedSession,
    policy: AttestationPolicy,
  ): Promise<void>
  receipt(id: string): Promise<StoredReceipt | undefined>
  /** The ledger anchor of a stored receipt (queued with it). */
  anchor(id: string): Promise<AnchorRecord | undefined>
  /** Queues the anchor of a stored receipt if it has none; `false` when there is no such receipt. */
  backfillAnchor(id: string): Promise<boolean>
  session(id: string): Promise<StoredSession | undefined>
}

/**
 * The receipt store over the gateway's relational store.
 *
 * @example
 * ```ts
 * const receipts = createReceiptStore(database.db)
 * const stored = await receipts.receipt('rcpt_…')
 * ```
 */
export function createReceiptStore(db: Kysely<GatewaySchema>): ReceiptStore {
  async function saveSession(
    model: string,
    session: Attestation.AttestedSession,
    policy: AttestationPolicy,
  ): Promise<void> {
    await db
      .insertInto('aci_sessions')
      .values({
        id: session.id,
        model,
        nonce: session.nonce,
        workload_id: session.workloadId,
        keyset_digest: session.keysetDigest,
        measurement: session.measurement,
        tcb_status: session.tcbStatus,
        attested_at_ms: BigInt(session.attestedAtMs),
        stale_at_ms: BigInt(session.staleAtMs),
        report: JSON.stringify(session.report),
        policy: JSON.stringify(policy),
      })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute()
  }

  return {
    saveSession,
    async save(record, gatewayReceipt) {
      await saveSession(record.model, record.session, record.policy)
      await db.transaction().execute(async (trx) => {
        await trx
          .insertInto('aci_receipts')
          .values({
            id: record.id,
            model: record.model,
            session_id: record.session.id,
            key_id: record.keyId,
            receipt: record.receiptJson,
            request_hash: record.requestHash,
            response_hash: record.responseHash,
            gateway_receipt: gatewayReceipt ?? null,
            stored_at: new Date().toISOString(),
            call_id: record.payment?.kind === 'credit' ? record.payment.entryId : null,
          })
          .onConflict((oc) => oc.column('id').doNothing())
          .execute()
        // The outbox: the anchor is queued with the receipt, or not at all.
        await enqueueAnchor(trx, anchorFieldsOf(record.id, record.receiptJson, gatewayReceipt))
      })
    },
    async anchor(id) {
      return readAnchor(db, id)
    },
    async backfillAnchor(id) {
      const row = await db
        .selectFrom('aci_receipts')
        .select(['receipt', 'gateway_receipt'])
        .where('id', '=', id)
        .executeTakeFirst()
      if (row === undefined) return false
      await enqueueAnchor(db, anchorFieldsOf(id, row.receipt, row.gateway_receipt))
      return true
    },
    async receipt(id) {
      const row = await db
        .selectFrom('aci_receipts')
        .selectAll()
        .where('id', '=', id)
        .executeTakeFirst()
      if (row === undefined) return undefined
      return {
        object: 'aci.receipt',
        id: row.id,
        model: row.model,
        session_id: row.session_id,
        key_id: row.key_id,
        relayed: { request_hash: row.request_hash, response_hash: row.response_hash },
        stored_at: row.stored_at,
        receipt: parseJson(row.receipt),
        gateway_receipt: row.gateway_receipt,
      }
    },
    async session(id) {
      const row = await db
        .selectFrom('aci_sessions')
        .selectAll()
        .where('id', '=', id)
        .executeTakeFirst()
      if (row === undefined) return undefined
      return {
        object: 'aci.session',
        id: row.id,
        model: row.model,
        nonce: row.nonce,
        workload_id: row.workload_id,
        keyset_digest: row.keyset_digest,
        measurement: row.measurement,
        tcb_status: row.tcb_status,
        attested_at: new Date(Number(toBigint(row.attested_at_ms))).toISOString(),
        stale_at: new Date(Number(toBigint(row.stale_at_ms))).toISOString(),
        policy: parseJson(row.policy) as AttestationPolicy,
        report: parseJson(row.report),
      }
    },
  }
}

/** Stored JSON text; a row damaged outside the gateway is answered as its text. */
function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}
