/**
 * The `escrow` module of the project's package on the local ledger: escrowed agent-to-agent jobs
 * (fund, deliver, release, reject, refund); the fee configuration is in `escrowAdmin.ts` (see
 * docs/escrow.md for the rules and docs/ledger-modules.md for the call signatures).
 *
 * A job is a shared `EscrowJob` object that holds the buyer's USDC from funding until it is paid
 * out (release) or returned (refund); it stays on the ledger afterwards in a final state, so
 * anyone can check how it ended. The fee rate and the treasury are copied into the job at funding.
 *
 * @module
 */
import { createHash } from 'node:crypto'
import { normalizeStructTag, normalizeSuiAddress, toHex } from '@mysten/sui/utils'
import { declaredNative, eventBcs } from './bind.js'
import { escrowAbortCodes } from './signatures.js'
import {
  abort,
  type CallContext,
  ErrorKind,
  fail,
  type NativeFunction,
  type ObjectValue,
  readAddress,
  readBytes,
  readString,
  readU64,
  type Value,
} from './values.js'

/** The job's states (`EscrowJob.state`). */
export const JOB_STATES = ['funded', 'delivered', 'rejected', 'released', 'refunded'] as const
/** One of {@link JOB_STATES}. */
export type JobState = (typeof JOB_STATES)[number]

/** Longest review window a job may ask for: 30 days. */
export const MAX_REVIEW_MS = 30n * 24n * 3_600_000n
/** Furthest delivery deadline from funding: 365 days. */
export const MAX_DELIVERY_MS = 365n * 24n * 3_600_000n
const MAX_REASON = 1024
/** Basis points in one whole. */
export const BPS = 10_000n

/**
 * The `escrow` module's abort codes (stable; named in `signatures.ts` and docs/escrow.md), e.g. to
 * assert on a failed move's `MoveAbort.abortCode` in a test.
 *
 * @example
 * expect(Number(error.MoveAbort.abortCode)).toBe(Number(EscrowAbort.deadlineNotReached))
 */
export const EscrowAbort = Object.fromEntries(
  Object.entries(escrowAbortCodes).map(([key, abort]) => [key, abort.code]),
) as { readonly [K in keyof typeof escrowAbortCodes]: (typeof escrowAbortCodes)[K]['code'] }

/** A 32-byte object id derived from `text` (as `object::new` derives one from the digest). */
export function hashId(text: string): string {
  return normalizeSuiAddress(toHex(createHash('sha256').update(text).digest()))
}

/** The fee of a release: `floor(amount × bps / 10 000)`; the seller gets the rest. */
export function escrowFee(amount: bigint, feeBps: bigint): bigint {
  return (amount * feeBps) / BPS
}

/** The native functions of the `escrow` module, keyed `escrow::function`. */
export function escrowFunctions(
  pkg: string,
  options: { usdcType: string },
): Record<string, NativeFunction> {
  const usdc = normalizeStructTag(options.usdcType)
  const jobType = `${normalizeSuiAddress(pkg)}::escrow::EscrowJob`
  const configType = `${normalizeSuiAddress(pkg)}::escrow::EscrowConfig`
  const eventType = (name: string) => `${normalizeSuiAddress(pkg)}::escrow::${name}`
  const stop = (fn: string, code: bigint, why: string): never =>
    abort({ package: pkg, module: 'escrow', functionName: fn }, code, `escrow::${fn}: ${why}`)

  const objectArg = (
    value: Value | undefined,
    type: string,
    ctx: CallContext,
    fn: string,
    mutable: boolean,
  ): ObjectValue => {
    if (value?.kind !== 'object' || !value.alive || value.object.type !== type) {
      fail(
        ErrorKind.commandArgumentError,
        `expected a ${type.split('::').pop()} object`,
        ctx.command,
      )
    }
    if (mutable && value.shared && !value.shared.mutable) {
      stop(fn, EscrowAbort.readOnly, 'the object must be passed by mutable reference')
    }
    return value
  }
  const fields = (job: ObjectValue) => job.object.fields as Record<string, string | number>
  const str = (job: ObjectValue, key: string) => String(fields(job)[key])
  const u64 = (job: ObjectValue, key: string) => BigInt(fields(job)[key] ?? 0)
  const write = (ctx: CallContext, job: ObjectValue, next: Record<string, unknown>) => {
    const updated = { ...job.object.fields, ...next }
    ctx.writeRecord({
      objectId: job.object.objectId,
      type: jobType,
      owner: '',
      shared: true,
      fields: updated,
    })
    // Later commands of the same transaction see the new fields.
    job.object = { ...job.object, fields: updated }
  }
  const emitJob = (
    ctx: CallContext,
    name: string,
    json: Record<string, unknown>,
    bytes: Uint8Array,
  ) => ctx.emit({ packageId: pkg, module: 'escrow', eventType: eventType(name), json, bcs: bytes })
  const jobEvent = (ctx: CallContext, name: string, job: ObjectValue) =>
    emitJob(
      ctx,
      name,
      { job_id: job.object.objectId, by: ctx.sender, at_ms: String(ctx.nowMs) },
      eventBcs('escrow', name, {
        job_id: job.object.objectId,
        by: ctx.sender,
        at_ms: BigInt(ctx.nowMs),
      }),
    )
  const pay = (ctx: CallContext, to: string, amount: bigint) => {
    if (amount > 0n) ctx.creditAddressBalance(to, usdc, amount)
  }

  return Object.fromEntries([
    declaredNative('escrow', 'fund', (args, _t, ctx) => {
      const fn = 'fund'
      const config = objectArg(args.config, configType, ctx, fn, false)
      const coin = args.payment
      if (coin?.kind !== 'coin' || !coin.alive) {
        fail(ErrorKind.commandArgumentError, 'expected a Coin<USDC> argument', ctx.command)
      }
      if (coin.coinType !== usdc) {
        fail(
          ErrorKind.typeArgumentError,
          `expected Coin<${usdc}>, got Coin<${coin.coinType}>`,
          ctx.command,
        )
      }
      const seller = readAddress(args.seller, ctx.command)
      const expectedBudget = readU64(args.expected_budget, ctx.command)
      const expectedFeeBps = readU64(args.expected_fee_bps, ctx.command)
      const deliverBy = readU64(args.deliver_by_ms, ctx.command)
      const reviewMs = readU64(args.review_ms, ctx.command)
      const terms = readBytes(args.terms, ctx.command)
      const now = BigInt(ctx.nowMs)
      const amount = coin.balance
      const feeBps = u64(config, 'fee_bps')
      if (amount === 0n) stop(fn, EscrowAbort.zeroAmount, 'nothing to lock')
      if (amount !== expectedBudget) {
        stop(
          fn,
          EscrowAbort.budgetMismatch,
          `the coin holds ${amount}, the budget is ${expectedBudget}`,
        )
      }
      if (feeBps !== expectedFeeBps) {
        stop(fn, EscrowAbort.feeChanged, `the fee is ${feeBps} bps, not ${expectedFeeBps}`)
      }
      if (deliverBy <= now || deliverBy - now > MAX_DELIVERY_MS) {
        stop(fn, EscrowAbort.badDeadline, 'the delivery deadline must be within 365 days ahead')
      }
      if (reviewMs === 0n || reviewMs > MAX_REVIEW_MS) {
        stop(fn, EscrowAbort.badDeadline, 'the review window must be 1 ms to 30 days')
      }
      if (terms.length !== 32) stop(fn, EscrowAbort.badHash, 'terms must be a 32-byte hash')
      coin.alive = false
      const id = hashId(`${ctx.digest}/${ctx.command}/escrow::EscrowJob`)
      const job = {
        id,
        config: config.object.objectId,
        buyer: ctx.sender,
        seller,
        amount: amount.toString(),
        balance: amount.toString(),
        fee_bps: feeBps.toString(),
        treasury: str(config, 'treasury'),
        funded_at_ms: String(ctx.nowMs),
        deliver_by_ms: deliverBy.toString(),
        review_ms: reviewMs.toString(),
        terms: toHex(terms),
        state: 'funded' satisfies JobState,
        delivery_hash: '',
        delivered_at_ms: '0',
        deliveries: '0',
        rejections: '0',
        reject_reason: '',
        paid_to_seller: '0',
        paid_fee: '0',
        refunded: '0',
      }
      ctx.writeRecord({ objectId: id, type: jobType, owner: '', shared: true, fields: job })
      emitJob(
        ctx,
        'JobFunded',
        {
          job_id: id,
          buyer: ctx.sender,
          seller,
          amount: amount.toString(),
          fee_bps: feeBps.toString(),
          deliver_by_ms: deliverBy.toString(),
        },
        eventBcs('escrow', 'JobFunded', {
          job_id: id,
          buyer: ctx.sender,
          seller,
          amount,
          fee_bps: feeBps,
          deliver_by_ms: deliverBy,
        }),
      )
      return []
    }),

    declaredNative('escrow', 'deliver', (args, _t, ctx) => {
      const fn = 'deliver'
      const job = objectArg(args.job, jobType, ctx, fn, true)
      const hash = readBytes(args.delivery_hash, ctx.command)
      if (ctx.sender !== str(job, 'seller'))
        stop(fn, EscrowAbort.notSeller, 'only the seller delivers')
      const state = str(job, 'state')
      if (state !== 'funded' && state !== 'rejected') {
        stop(fn, EscrowAbort.wrongState, `cannot deliver a ${state} job`)
      }
      if (BigInt(ctx.nowMs) >= u64(job, 'deliver_by_ms')) {
        stop(fn, EscrowAbort.deliveryClosed, 'the delivery deadline has passed')
      }
      if (hash.length !== 32) stop(fn, EscrowAbort.badHash, 'the delivery must be a 32-byte hash')
      write(ctx, job, {
        state: 'delivered' satisfies JobState,
        delivery_hash: toHex(hash),
        delivered_at_ms: String(ctx.nowMs),
        deliveries: String(u64(job, 'deliveries') + 1n),
        reject_reason: '',
      })
      jobEvent(ctx, 'JobDelivered', job)
      return []
    }),

    declaredNative('escrow', 'release', (args, _t, ctx) => {
      const fn = 'release'
      const job = objectArg(args.job, jobType, ctx, fn, true)
      const buyer = str(job, 'buyer')
      const seller = str(job, 'seller')
      if (ctx.sender !== buyer && ctx.sender !== seller) {
        stop(
          fn,
          EscrowAbort.notParty,
          'only the buyer (or the seller after the review window) releases',
        )
      }
      const state = str(job, 'state')
      if (state !== 'delivered') stop(fn, EscrowAbort.wrongState, `cannot release a ${state} job`)
      const reviewEnds = u64(job, 'delivered_at_ms') + u64(job, 'review_ms')
      if (ctx.sender !== buyer && BigInt(ctx.nowMs) < reviewEnds) {
        stop(fn, EscrowAbort.reviewOpen, 'the seller may release only after the review window')
      }
      const balance = u64(job, 'balance')
      const fee = escrowFee(balance, u64(job, 'fee_bps'))
      pay(ctx, seller, balance - fee)
      pay(ctx, str(job, 'treasury'), fee)
      write(ctx, job, {
        state: 'released' satisfies JobState,
        balance: '0',
        paid_to_seller: (balance - fee).toString(),
        paid_fee: fee.toString(),
      })
      emitJob(
        ctx,
        'JobReleased',
        {
          job_id: job.object.objectId,
          to: seller,
          amount: (balance - fee).toString(),
          fee: fee.toString(),
        },
        eventBcs('escrow', 'JobReleased', {
          job_id: job.object.objectId,
          to: seller,
          amount: balance - fee,
          fee,
        }),
      )
      return []
    }),

    declaredNative('escrow', 'reject', (args, _t, ctx) => {
      const fn = 'reject'
      const job = objectArg(args.job, jobType, ctx, fn, true)
      const reason = readString(args.reason, ctx.command)
      if (ctx.sender !== str(job, 'buyer')) stop(fn, EscrowAbort.notBuyer, 'only the buyer rejects')
      const state = str(job, 'state')
      if (state !== 'delivered') stop(fn, EscrowAbort.wrongState, `cannot reject a ${state} job`)
      if (BigInt(ctx.nowMs) >= u64(job, 'delivered_at_ms') + u64(job, 'review_ms')) {
        stop(fn, EscrowAbort.reviewClosed, 'the review window has closed')
      }
      if (new TextEncoder().encode(reason).length > MAX_REASON) {
        stop(fn, EscrowAbort.tooLong, `the reason is longer than ${MAX_REASON} bytes`)
      }
      write(ctx, job, {
        state: 'rejected' satisfies JobState,
        rejections: String(u64(job, 'rejections') + 1n),
        reject_reason: reason,
      })
      jobEvent(ctx, 'JobRejected', job)
      return []
    }),

    declaredNative('escrow', 'refund', (args, _t, ctx) => {
      const fn = 'refund'
      const job = objectArg(args.job, jobType, ctx, fn, true)
      const buyer = str(job, 'buyer')
      const seller = str(job, 'seller')
      const state = str(job, 'state')
      if (ctx.sender === seller) {
        if (state !== 'funded' && state !== 'delivered' && state !== 'rejected') {
          stop(fn, EscrowAbort.wrongState, `cannot refund a ${state} job`)
        }
      } else if (ctx.sender === buyer) {
        if (state !== 'funded' && state !== 'rejected') {
          stop(fn, EscrowAbort.wrongState, `the buyer cannot refund a ${state} job`)
        }
        if (BigInt(ctx.nowMs) < u64(job, 'deliver_by_ms')) {
          stop(fn, EscrowAbort.deadlineNotReached, 'the delivery deadline has not passed')
        }
      } else {
        stop(fn, EscrowAbort.notParty, 'only the buyer or the seller refunds')
      }
      const balance = u64(job, 'balance')
      pay(ctx, buyer, balance)
      write(ctx, job, {
        state: 'refunded' satisfies JobState,
        balance: '0',
        refunded: balance.toString(),
      })
      emitJob(
        ctx,
        'JobRefunded',
        { job_id: job.object.objectId, to: buyer, amount: balance.toString(), fee: '0' },
        eventBcs('escrow', 'JobRefunded', {
          job_id: job.object.objectId,
          to: buyer,
          amount: balance,
          fee: 0n,
        }),
      )
      return []
    }),
  ])
}
