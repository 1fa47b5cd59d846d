/**
 * Ledger anchors of confidential receipts, through an outbox: storing a receipt also writes its
 * anchor row (`aci_anchors`, same transaction), and a worker anchors pending rows with the
 * `receipt_anchor::anchor_receipt` Move call (event `ReceiptAnchored { receipt_id, wire_hash,
 * workload_id, served_at_ms, gateway_receipt_hash, … }`), signed by the operator key. The anchor
 * commits the gateway's own receipt too (the sha256 of its compact JWS), so a
 * gateway receipt swapped after the fact no longer matches its anchor.
 *
 * Once per receipt, also when several gateway processes race and when one dies midway:
 *
 * 1. a process claims a row with a conditional UPDATE (a lease; only one holder at a time);
 * 2. it builds and signs the call, and records the signed bytes and their digest in the row only if
 *    none are recorded yet — from then on, the row's bytes are the only anchor that can exist;
 * 3. it submits THOSE bytes (re-submitting the same bytes is idempotent on the ledger) and marks the
 *    row `anchored` with the digest once the ledger has it. A failure is retried later with backoff.
 *
 * @module
 */
import type { Signer } from '@mysten/sui/cryptography'
import { TransactionDataBuilder } from '@mysten/sui/transactions'
import { type Kysely, sql } from 'kysely'
import { Attestation, type Ledger } from 'tollgate'
import { toBigint } from '../db/database.js'
import type { GatewaySchema } from '../db/schema.js'

/** What an anchor commits of a receipt. */
export type AnchorFields = {
  receiptId: string
  wireHash: string
  workloadId: string
  servedAtMs: bigint
  /** `sha256:` of the gateway's receipt (compact JWS); `''` when it signed none. */
  gatewayReceiptHash: string
}

/** An anchor as `GET /v1/aci/anchor/{id}` answers it. */
export type AnchorRecord = {
  object: 'aci.anchor'
  receipt_id: string
  /** `pending` (queued), `signed` (submitted or about to be), `anchored`. */
  state: 'pending' | 'signed' | 'anchored'
  /** The transaction digest, once the anchor is signed. */
  digest: string | null
  wire_hash: string
  workload_id: string
  served_at_ms: string
  gateway_receipt_hash: string
  anchored_at: string | null
  attempts: number
}

/** The fields of a receipt to anchor, from its JSON and the gateway's receipt for it. */
export function anchorFieldsOf(
  receiptId: string,
  receiptJson: string,
  gatewayReceipt: string | null | undefined,
): AnchorFields {
  const receipt = JSON.parse(receiptJson) as {
    workload_id?: unknown
    served_at?: unknown
    event_log?: { type?: unknown; wire_hash?: unknown }[]
  }
  const returned = receipt.event_log?.find((e) => e.type === 'response.returned')
  const served = Date.parse(String(receipt.served_at))
  return {
    receiptId,
    wireHash: String(returned?.wire_hash ?? ''),
    workloadId: String(receipt.workload_id ?? ''),
    servedAtMs: BigInt(Number.isFinite(served) ? served : 0),
    gatewayReceiptHash: gatewayReceipt ? Attestation.gatewayReceiptHash(gatewayReceipt) : '',
  }
}

/** Writes the outbox row of a receipt (once); use inside the receipt's own transaction. */
export async function enqueueAnchor(
  db: Kysely<GatewaySchema>,
  fields: AnchorFields,
): Promise<void> {
  await db
    .insertInto('aci_anchors')
    .values({
      receipt_id: fields.receiptId,
      state: 'pending',
      wire_hash: fields.wireHash,
      workload_id: fields.workloadId,
      served_at_ms: fields.servedAtMs,
      gateway_receipt_hash: fields.gatewayReceiptHash,
      tx_bytes: null,
      signature: null,
      digest: null,
      attempts: 0,
      next_attempt_at_ms: 0n,
      lease_holder: null,
      lease_until_ms: 0n,
      anchored_at: null,
    })
    .onConflict((oc) => oc.column('receipt_id').doNothing())
    .execute()
}

/** Reads an anchor. */
export async function readAnchor(
  db: Kysely<GatewaySchema>,
  receiptId: string,
): Promise<AnchorRecord | undefined> {
  const row = await db
    .selectFrom('aci_anchors')
    .selectAll()
    .where('receipt_id', '=', receiptId)
    .executeTakeFirst()
  if (row === undefined) return undefined
  return {
    object: 'aci.anchor',
    receipt_id: row.receipt_id,
    state: row.state,
    digest: row.digest,
    wire_hash: row.wire_hash,
    workload_id: row.workload_id,
    served_at_ms: toBigint(row.served_at_ms).toString(),
    gateway_receipt_hash: row.gateway_receipt_hash,
    anchored_at: row.anchored_at,
    attempts: Number(row.attempts),
  }
}

/** Options of {@link createAnchorWorker}. */
export type AnchorWorkerOptions = {
  db: Kysely<GatewaySchema>
  ledger: Ledger
  /** The operator key that signs (and pays gas for) anchors. */
  signer: Signer
  /** The package of `receipt_anchor`. */
  packageId: string
  /** Names this process in leases. */
  holder: string
  /** How long a claim lasts, ms. Default 30 000. */
  leaseMs?: number | undefined
  onError?: ((receiptId: string, reason: string) => void) | undefined
}

/** The anchor worker of one process. */
export type AnchorWorker = {
  /** Anchors what is due now (at most 20 rows); answers how many it anchored. */
  runOnce(): Promise<number>
  /** Runs `runOnce` every `intervalMs` until `stop()`. */
  start(intervalMs: number): void
  stop(): void
}

/**
 * The outbox worker (see the module documentation).
 *
 * @example
 * ```ts
 * const worker = createAnchorWorker({ db, ledger, signer: operator, packageId, holder })
 * worker.start(5_000)
 * ```
 */
export function createAnchorWorker(options: AnchorWorkerOptions): AnchorWorker {
  const { db, ledger, signer } = options
  const leaseMs = options.leaseMs ?? 30_000
  let timer: ReturnType<typeof setInterval> | undefined
  let running: Promise<number> | undefined

  async function claim(now: number): Promise<string[]> {
    const due = await db
      .selectFrom('aci_anchors')
      .select('receipt_id')
      .where('state', '!=', 'anchored')
      .where('next_attempt_at_ms', '<=', BigInt(now))
      .where('lease_until_ms', '<=', BigInt(now))
      .limit(20)
      .execute()
    const claimed: string[] = []
    for (const { receipt_id: id } of due) {
      const rows = await db
        .updateTable('aci_anchors')
        .set({ lease_holder: options.holder, lease_until_ms: BigInt(now + leaseMs) })
        .where('receipt_id', '=', id)
        .where('state', '!=', 'anchored')
        .where('lease_until_ms', '<=', BigInt(now))
        .returning('receipt_id')
        .execute()
      if (rows.length > 0) claimed.push(id)
    }
    return claimed
  }

  async function anchor(id: string): Promise<boolean> {
    let row = await db
      .selectFrom('aci_anchors')
      .selectAll()
      .where('receipt_id', '=', id)
      .executeTakeFirstOrThrow()
    if (row.tx_bytes === null || row.signature === null) {
      const bytes = await ledger.buildMoveCall({
        sender: signer.toSuiAddress(),
        target: `${options.packageId}::receipt_anchor::anchor_receipt`,
        arguments: [
          { string: row.receipt_id },
          { string: row.wire_hash },
          { string: row.workload_id },
          { u64: toBigint(row.served_at_ms) },
          { string: row.gateway_receipt_hash },
          { clock: true },
        ],
      })
      const { signature } = await signer.signTransaction(bytes)
      // Only the first signed bytes are kept: whatever else was signed is never submitted.
      await db
        .updateTable('aci_anchors')
        .set({
          state: 'signed',
          tx_bytes: Buffer.from(bytes).toString('base64'),
          signature,
          digest: TransactionDataBuilder.getDigestFromBytes(bytes),
        })
        .where('receipt_id', '=', id)
        .where('tx_bytes', 'is', null)
        .where('lease_holder', '=', options.holder)
        .execute()
      row = await db
        .selectFrom('aci_anchors')
        .selectAll()
        .where('receipt_id', '=', id)
        .executeTakeFirstOrThrow()
    }
    if (row.tx_bytes === null || row.signature === null || row.digest === null) return false
    let outcome = await ledger.execute(Buffer.from(row.tx_bytes, 'base64'), [row.signature])
    if (outcome.status === 'unknown') {
      const found = await ledger.waitFor(row.digest)
      outcome =
        found.status === 'found'
          ? { status: 'executed', transaction: found.transaction }
          : { status: 'unknown', reason: 'not found yet', digest: row.digest }
    }
    if (outcome.status === 'rejected') {
      const bytes = Buffer.from(row.tx_bytes, 'base64')
      const can = await ledger.canStillExecute(bytes)
      if (can.status === 'never') {
        // These bytes can never execute (a gas coin moved on): safe to sign anew.
        await db
          .updateTable('aci_anchors')
          .set({ state: 'pending', tx_bytes: null, signature: null, digest: null })
          .where('receipt_id', '=', id)
          .where('digest', '=', row.digest)
          .execute()
      }
    }
    if (outcome.status !== 'executed' || !outcome.transaction.success) {
      throw new Error(
        outcome.status === 'executed'
          ? `the anchor failed on the ledger: ${outcome.transaction.error ?? 'error'}`
          : outcome.reason,
      )
    }
    await db
      .updateTable('aci_anchors')
      .set({ state: 'anchored', anchored_at: new Date().toISOString(), lease_until_ms: 0n })
      .where('receipt_id', '=', id)
      .execute()
    return true
  }

  async function runOnce(): Promise<number> {
    let anchored = 0
    for (const id of await claim(Date.now())) {
      try {
        if (await anchor(id)) anchored++
      } catch (error) {
        options.onError?.(id, error instanceof Error ? error.message : 'anchor failed')
        await db
          .updateTable('aci_anchors')
          .set({
            attempts: sql<number>`attempts + 1`,
            next_attempt_at_ms: BigInt(Date.now() + 5_000),
            lease_until_ms: 0n,
          })
          .where('receipt_id', '=', id)
          .execute()
      }
    }
    return anchored
  }

  return {
    runOnce() {
      running ??= runOnce().finally(() => {
        running = undefined
      })
      return running
    },
    start(intervalMs) {
      timer ??= setInterval(() => void this.runOnce().catch(() => {}), intervalMs)
      timer.unref?.()
    },
    stop() {
      clearInterval(timer)
      timer = undefined
    },
  }
}
