/**
 * Settlement: turn a payment credential into money that has really arrived, exactly once.
 *
 * - x402 ({@link settleX402}): offline pre-check → `store.claim(digest)` → execute the buyer's signed
 *   bytes through the ledger → require success and a USDC balance change to `payTo` of at least the
 *   price → `store.settled`. The digest is computed from the bytes, never taken from the client.
 * - MPP ({@link settleMpp}): the buyer already executed; `store.claim(digest)` → read the transaction
 *   from the ledger (bounded retry: reads lag execution) → the proof must be signed by the
 *   transaction's sender → the same effects checks → `store.settled`.
 *
 * A ledger that does not answer after submission leaves the digest `pending`: it is resolved later by
 * looking the digest up ({@link resolvePending}), never served unverified and never charged twice.
 *
 * @module
 */
import { normalizeSuiAddress } from '@mysten/sui/utils'
import { withRetries } from './backoff.js'
import { PaymentError, type PaymentErrorCode } from './errors.js'
import { normalizeTypeTag } from './internal/typeTag.js'
import type { Ledger, LookupOutcome, Settlement } from './ledger/types.js'
import { type PaymentTarget, type PrecheckOptions, precheckPayment } from './precheck.js'
import { type ProofFields, verifyProof } from './proof.js'
import type { PaymentDialect, PaymentRecord, PaymentStore } from './stores/types.js'

/** An executed transaction as settlement reads it (see `Settlement` in `src/ledger`). */
export type LedgerTransaction = Pick<
  Settlement,
  'digest' | 'success' | 'error' | 'sender' | 'balanceChanges'
>

/** What settlement needs from the ledger (see `src/ledger` for the implementation). */
export type SettlementLedger = Pick<Ledger, 'execute' | 'getTransaction'>

/** Terms a payment is checked against (normalised: see `normalizeTerms`). */
export type SettlementTerms = PaymentTarget & {
  /** The network id, e.g. `sui:mainnet`. */
  network: string
  /** The resource URL the payment is for. */
  resource: string
}

/** A verified settlement. */
export type Settled = {
  status: 'settled'
  digest: string
  payer: string
  /** What arrived at `payTo` in the asset. */
  amount: bigint
  dialect: PaymentDialect
  /** True when this is a settled-but-never-served payment presented again (served once). */
  resumed: boolean
  /**
   * The end of this server's serve lease (keep renewing it with `store.renewServeLease` while the
   * call runs); `undefined` when the store did not say.
   */
  lease?: Date | undefined
  /**
   * The method keeps this payment's books itself (a session: a hold on a channel, committed when
   * served, released when not); absent for a payment recorded by its digest in the payment store.
   */
  books?: PaymentBooks | undefined
  /** The session channel that paid (a session's payment), for a handler that meters its answer. */
  channelId?: string | undefined
}

/**
 * The books of a payment its method keeps itself (see {@link Settled.books}): what the engine calls
 * instead of the payment store's `served` / `oweRefund`, and the paid answer's success headers.
 */
export type PaymentBooks = {
  /** Records the call served; false when the record was gone (it lapsed). */
  served(): Promise<boolean>
  /** Records the call failed (nothing is spent for it); false when the record was gone. */
  failed(reason: string): Promise<boolean>
  /** The paid answer's success headers for `status`, replacing the method's `successHeaders`. */
  headersFor(status: number): Readonly<Record<string, string>>
  /**
   * The payment's last write, when the method let the handler start before it was done (it may only
   * when the engine's caller holds the answer: `MethodSettleInput.holdsAnswer`): resolves to
   * `undefined` once the payment is durable, or to the error that refused it after all. `served`,
   * `failed` and `headersFor` wait for it or follow it.
   */
  readonly durable?: Promise<PaymentError | undefined> | undefined
}

/** The result of settling one credential. */
export type SettlementResult =
  | Settled
  | { status: 'rejected'; error: PaymentError; digest?: string | undefined }
  /**
   * A management action, done: answered with `status` (204) and `headers` (its receipt); the
   * handler does not run and nothing is charged for a call.
   */
  | {
      status: 'answered'
      answer: { readonly status: number; readonly headers: Readonly<Record<string, string>> }
    }
  | {
      status: 'pending'
      digest: string
      error: PaymentError
      /**
       * When to present the same payment again, in seconds (sent as `Retry-After`): while another
       * process may hold the payment's lease, the time until that lease ends (at most
       * {@link maxLeaseRetryAfterSeconds}); absent for an unknown ledger outcome (the engine's own
       * default).
       */
      retryAfterSeconds?: number | undefined
    }

/** The longest `Retry-After` a presenter is told while another process may hold the lease, s. */
export const maxLeaseRetryAfterSeconds = 10

/** Dependencies and options of settlement. */
export type SettleContext = {
  ledger: SettlementLedger
  store: PaymentStore
  /** Offline pre-check options (allowed transaction forms, size). */
  precheck?: PrecheckOptions | undefined
  /** Look-ups of an MPP digest before giving up (reads lag execution). Default 5. */
  lookupAttempts?: number | undefined
  /** First back-off between look-ups in ms, doubled each time. Default 100. */
  lookupBackoffMs?: number | undefined
  /** Called at each step (tests and metrics; e.g. a crash test kills the process here). */
  onStep?: ((step: SettleStep, digest: string) => void | Promise<void>) | undefined
  /** Clock in ms, the store's (for `Retry-After` while a lease is held). Default `Date.now`. */
  now?: (() => number) | undefined
}

/** The steps reported to {@link SettleContext.onStep}. */
export type SettleStep = 'prechecked' | 'claimed' | 'executed' | 'settled'

/** The x402 payload, as decoded from `X-PAYMENT`. */
export type X402Payment = { transaction: string; signature: string }

/**
 * Settles an x402 payment: pre-check, claim, execute, verify effects, record.
 *
 * @example
 * const result = await settleX402(payload, terms, { ledger, store })
 * if (result.status === 'settled') serve()
 */
export async function settleX402(
  payment: X402Payment,
  terms: SettlementTerms,
  context: SettleContext,
): Promise<SettlementResult> {
  const checked = await precheckPayment(
    payment.transaction,
    payment.signature,
    terms,
    context.precheck,
  )
  if (checked.status === 'rejected') return checked
  const { digest } = checked
  await context.onStep?.('prechecked', digest)

  const claim = await claimFor(digest, terms, 'x402', context)
  if (claim.status !== 'claimed') return claim.result
  await context.onStep?.('claimed', digest)

  const outcome = await context.ledger.execute(checked.txBytes, [payment.signature])
  await context.onStep?.('executed', digest)
  switch (outcome.status) {
    case 'rejected':
      await context.store.release(digest)
      return rejected('settlement_failed', 'The ledger refused the transaction.', digest, {
        reason: outcome.reason,
      })
    case 'unknown':
      // Only a `claimed` record moves to `pending`: one already `pending` (presented again) stays,
      // and a conflict means another presenter resolved it meanwhile.
      await context.store.markPending(digest)
      return {
        status: 'pending',
        digest,
        error: new PaymentError(
          'settlement_pending',
          'The ledger did not confirm the payment yet.',
          {
            details: { digest },
          },
        ),
      }
    case 'executed':
      return record(outcome.transaction, digest, terms, 'x402', context)
  }
}

/** The MPP credential's payload with the challenge facts the proof binds. */
export type MppPayment = {
  digest: string
  /** Personal-message signature of the sender over the proof. */
  signature: string
  /** Proof facts (realm and challenge id from the verified challenge). */
  proof: Omit<ProofFields, 'digest'>
}

/**
 * Settles an MPP payment: the buyer executed; the server claims the digest, reads the transaction,
 * checks the sender's proof and the effects.
 */
export async function settleMpp(
  payment: MppPayment,
  terms: SettlementTerms,
  context: SettleContext,
): Promise<SettlementResult> {
  const { digest } = payment
  if (!/^[1-9A-HJ-NP-Za-km-z]{32,44}$/.test(digest)) {
    return rejected('malformed_credential', 'The digest is not a transaction digest.')
  }
  const claim = await claimFor(digest, terms, 'mpp', context)
  if (claim.status !== 'claimed') return claim.result
  await context.onStep?.('claimed', digest)

  const found = await lookUp(digest, context)
  if (found.status !== 'found') {
    await context.store.release(digest)
    return found.status === 'not_found'
      ? rejected('transaction_not_found', 'The transaction is not on the ledger.', digest)
      : rejected('ledger_unavailable', 'The ledger could not be read.', digest)
  }
  const proof = await verifyProof(
    { ...payment.proof, digest },
    payment.signature,
    found.transaction.sender,
  )
  if (proof.status === 'invalid') {
    // Someone who merely saw the digest must not burn it for its owner: forget the claim.
    await context.store.release(digest)
    return rejected('signer_mismatch', 'The proof is not signed by the transaction sender.', digest)
  }
  await context.onStep?.('executed', digest)
  return record(found.transaction, digest, terms, 'mpp', context)
}

/**
 * Resolves a `pending` digest by looking it up: settled when it executed and paid, rejected when it
 * failed or is provably absent, still pending when the ledger cannot be read.
 */
export async function resolvePending(
  pending: PaymentRecord,
  terms: SettlementTerms,
  context: SettleContext,
): Promise<SettlementResult> {
  const found = await context.ledger.getTransaction(pending.digest)
  if (found.status === 'found') {
    return record(found.transaction, pending.digest, terms, pending.dialect, context)
  }
  // Not found (not executed yet, or lost) or unreadable: it stays pending. Presenting the same
  // payment again submits the same bytes (idempotent on the ledger), which settles it once.
  return {
    status: 'pending',
    digest: pending.digest,
    error: new PaymentError('settlement_pending', 'The ledger did not confirm the payment yet.'),
  }
}

type ClaimOutcome = { status: 'claimed' } | { status: 'done'; result: SettlementResult }

async function claimFor(
  digest: string,
  terms: SettlementTerms,
  dialect: PaymentDialect,
  context: SettleContext,
): Promise<ClaimOutcome> {
  const claim = await context.store.claim(digest, { resource: terms.resource, dialect })
  if (claim.status === 'claimed') return { status: 'claimed' }
  if (claim.status === 'taken' && claim.record.state === 'pending' && dialect === 'x402') {
    // The same signed bytes presented again while their outcome is unknown: submit them again (the
    // ledger is idempotent on re-submission). Settling is a compare-and-set on the record, so of
    // several concurrent presenters exactly one gets `settled`.
    return { status: 'claimed' }
  }
  const settlement = claim.record.settlement
  if (claim.status === 'taken' && mayBeHeld(claim.record, terms.resource)) {
    return { status: 'done', result: held(claim.record, context) }
  }
  if (claim.status === 'settled_unserved' && settlement && settlement.resource === terms.resource) {
    return {
      status: 'done',
      result: {
        status: 'settled',
        digest,
        payer: settlement.payer,
        amount: settlement.amount,
        dialect: settlement.dialect,
        resumed: true,
        lease: claim.record.leaseUntil,
      },
    }
  }
  const refund = refundOf(claim.record)
  return {
    status: 'done',
    result: rejected(
      'replay',
      refund === undefined
        ? 'This payment was already used.'
        : refund.status === 'refunded'
          ? 'This payment was already used: the paid call failed and the payment was refunded.'
          : 'This payment was already used: the paid call failed and the payment is being refunded.',
      digest,
      { state: claim.record.state, ...(refund === undefined ? {} : { refund }) },
    ),
  }
}

/**
 * Whether a record that could not be claimed may still be in the hands of a live process: being
 * settled (`claimed`), or settled for this resource and being served under a serve lease. Such a
 * payment is neither used nor lost yet: its presenter is told to retry, never "already used".
 */
function mayBeHeld(record: PaymentRecord, resource: string): boolean {
  return record.state === 'claimed' || (record.state === 'settled' && record.resource === resource)
}

/** `pending`, with `Retry-After` the time until the lease of `record` ends (1 to 10 s). */
function held(record: PaymentRecord, context: SettleContext): SettlementResult {
  const now = (context.now ?? Date.now)()
  const left = record.leaseUntil === undefined ? 0 : record.leaseUntil.getTime() - now
  const retryAfterSeconds = Math.min(maxLeaseRetryAfterSeconds, Math.max(1, Math.ceil(left / 1000)))
  return {
    status: 'pending',
    digest: record.digest,
    retryAfterSeconds,
    error: new PaymentError(
      'settlement_pending',
      'This payment is being processed by another request: present it again after Retry-After.',
      { details: { digest: record.digest, state: record.state } },
    ),
  }
}

async function lookUp(digest: string, context: SettleContext): Promise<LookupOutcome> {
  // Reads lag execution: the same look-up, after a doubling wait (no jitter: it is our own read).
  const { value } = await withRetries<LookupOutcome>(
    async () => {
      const found = await context.ledger.getTransaction(digest)
      return { retry: found.status !== 'found', value: found }
    },
    {
      attempts: context.lookupAttempts ?? 5,
      baseDelayMs: context.lookupBackoffMs ?? 100,
      maxDelayMs: Number.POSITIVE_INFINITY,
      jitter: 'none',
    },
  )
  return value
}

/** Checks effects and records the outcome (shared by both dialects and by pending resolution). */
async function record(
  transaction: LedgerTransaction,
  digest: string,
  terms: SettlementTerms,
  dialect: PaymentDialect,
  context: SettleContext,
): Promise<SettlementResult> {
  const verdict = checkEffects(transaction, terms)
  if (verdict.status === 'rejected') {
    // x402: these bytes executed, the digest is spent. MPP: the buyer executed on its own and only
    // the sender can present the digest, so an unacceptable payment is released, not burnt. A
    // conflict means another presenter of the same payment moved the record on: it owns the record.
    if (dialect === 'mpp') await context.store.release(digest)
    else await context.store.rejected(digest, verdict.code)
    return rejected(verdict.code, verdict.message, digest, verdict.details)
  }
  const payer = normalizeSuiAddress(transaction.sender)
  const settled = await context.store.settled(digest, {
    payer,
    amount: verdict.amount,
    resource: terms.resource,
    dialect,
    network: terms.network,
    asset: terms.asset,
    settledAt: new Date(),
  })
  // Another presenter of the same payment settled (or otherwise moved) it first: that presenter owns
  // the outcome. While it may still be serving it, this one is told to retry (it may crash, and the
  // payment is then served to whoever presents it after the lease); after, this one is a replay. A
  // broken store throws instead (store_error: 503/500).
  if (settled.status === 'conflict') {
    const current = await context.store.get(digest)
    if (current !== undefined && mayBeHeld(current, terms.resource)) return held(current, context)
    return rejected('replay', 'This payment was already used.', digest)
  }
  await context.onStep?.('settled', digest)
  return {
    status: 'settled',
    digest,
    payer,
    amount: verdict.amount,
    dialect,
    resumed: false,
    lease: settled.record.leaseUntil,
  }
}

/** What {@link checkEffects} found: the transaction paid the terms, or why not. */
export type EffectsVerdict =
  | { status: 'paid'; amount: bigint }
  | {
      status: 'rejected'
      code: PaymentErrorCode
      message: string
      details?: Record<string, unknown> | undefined
    }

/**
 * The authority: did the executed transaction succeed, and did at least the price of the asset
 * arrive at `payTo`? Balance changes include address-balance moves; coin types and addresses are
 * normalised before comparison.
 */
export function checkEffects(transaction: LedgerTransaction, terms: PaymentTarget): EffectsVerdict {
  if (!transaction.success) {
    return {
      status: 'rejected',
      code: 'transaction_failed',
      message: 'The payment transaction failed on the ledger.',
      details: { error: transaction.error?.slice(0, 200) },
    }
  }
  let toRecipient = 0n
  let otherAssetToRecipient = false
  for (const change of transaction.balanceChanges) {
    if (normalizeSuiAddress(change.address) !== terms.payTo || change.amount <= 0n) continue
    if ((normalizeTypeTag(change.coinType) ?? change.coinType) === terms.asset)
      toRecipient += change.amount
    else otherAssetToRecipient = true
  }
  if (toRecipient === 0n) {
    return otherAssetToRecipient
      ? {
          status: 'rejected',
          code: 'wrong_asset',
          message: 'The payment was made in another asset.',
        }
      : {
          status: 'rejected',
          code: 'wrong_recipient',
          message: 'Nothing arrived at the recipient.',
        }
  }
  if (toRecipient < terms.amount) {
    return {
      status: 'rejected',
      code: 'insufficient_amount',
      message: 'Less than the price arrived at the recipient.',
      details: { required: terms.amount.toString(), received: toRecipient.toString() },
    }
  }
  return { status: 'paid', amount: toRecipient }
}

/**
 * The refund of a payment whose paid call failed, as told to whoever presents that payment again
 * (only its payer holds it): `owed`, or `refunded` with the refund transaction's digest.
 */
export type RefundNotice =
  | { status: 'owed' }
  | { status: 'refunded'; refundDigest: string | undefined }

function refundOf(record: PaymentRecord): RefundNotice | undefined {
  if (record.state === 'refunded') {
    return { status: 'refunded', refundDigest: record.refund?.refundDigest }
  }
  if (record.state === 'refund_due') return { status: 'owed' }
  return undefined
}

function rejected(
  code: PaymentErrorCode,
  message: string,
  digest?: string,
  details?: Record<string, unknown>,
): SettlementResult {
  return { status: 'rejected', error: new PaymentError(code, message, { details }), digest }
}
