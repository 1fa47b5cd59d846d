// Copyright (c) the Tollgate authors
// SPDX-License-Identifier: Apache-2.0

/// Escrowed agent-to-agent jobs: the buyer locks USDC in a shared `EscrowJob` (fund), the seller
/// commits to a delivery by its hash (deliver), the buyer accepts (release) or rejects it within
/// the review window, and either side may end the job with everything back to the buyer (refund:
/// the seller at any time before the job is final, the buyer once the delivery deadline has passed
/// with nothing accepted). A job stays on the ledger in its final state for anyone to check.
///
/// The rules are docs/escrow.md; the emulator's handlers are `src/testing/ledger/escrow.ts` and
/// `escrowAdmin.ts`; the abort codes are named in `src/testing/ledger/signatures.ts` (checked by
/// `scripts/moveParity.test.ts`).
module tollgate::escrow;

use std::string::{Self, String};
use sui::balance::{Self, Balance};
use sui::clock::Clock;
use sui::coin::Coin;
use sui::event;
use usdc::usdc::USDC;

// === Abort codes (stable) ===

/// `reject` by anyone but the buyer.
const ENOT_BUYER: u64 = 1;
/// `deliver` by anyone but the seller.
const ENOT_SELLER: u64 = 2;
/// The move is not allowed in the job's state.
const EWRONG_STATE: u64 = 3;
/// `deliver` at or after the delivery deadline.
const EDELIVERY_CLOSED: u64 = 4;
/// The buyer's `refund` before the delivery deadline.
const EDEADLINE_NOT_REACHED: u64 = 5;
/// `reject` after the review window.
const EREVIEW_CLOSED: u64 = 6;
/// The seller's `release` while the review window is open.
const EREVIEW_OPEN: u64 = 7;
/// `fund` with a coin that is not the expected budget.
const EBUDGET_MISMATCH: u64 = 8;
/// `fund` when the fee rate is no longer the expected one.
const EFEE_CHANGED: u64 = 9;
/// `fund` with an empty coin.
const EZERO_AMOUNT: u64 = 10;
/// `fund` with a deadline or review window out of range.
const EBAD_DEADLINE: u64 = 11;
/// Terms or a delivery hash that is not 32 bytes.
const EBAD_HASH: u64 = 12;
/// A rejection reason over 1024 bytes.
const ETOO_LONG: u64 = 13;
/// `set_fee` over 10 000 bps.
const EBAD_FEE: u64 = 14;
/// `set_fee` with an `AdminCap` of another configuration.
const ENOT_ADMIN: u64 = 15;
/// `release` or `refund` by someone who is neither buyer nor seller.
const ENOT_PARTY: u64 = 16;
#[allow(unused_const)]
/// Reserved: the emulator's answer to a job passed by immutable reference to a move that changes
/// it. On Sui the runtime refuses such a transaction before the module runs, so this module never
/// aborts with it; the code stays taken so that it keeps its meaning.
const EREAD_ONLY: u64 = 17;

// === Limits ===

/// Longest review window a job may ask for: 30 days.
const MAX_REVIEW_MS: u64 = 2_592_000_000;
/// Furthest delivery deadline from funding: 365 days.
const MAX_DELIVERY_MS: u64 = 31_536_000_000;
/// Longest rejection reason, in bytes.
const MAX_REASON: u64 = 1024;
/// Basis points in one whole.
const BPS: u64 = 10_000;
/// The fee rate of a freshly published package (5 %).
const INITIAL_FEE_BPS: u64 = 500;

// === States (`EscrowJob.state`) ===

const FUNDED: vector<u8> = b"funded";
const DELIVERED: vector<u8> = b"delivered";
const REJECTED: vector<u8> = b"rejected";
const RELEASED: vector<u8> = b"released";
const REFUNDED: vector<u8> = b"refunded";

// === Objects ===

/// The fee rate and the treasury of jobs funded from now on. Shared; one per package, created at
/// publish.
public struct EscrowConfig has key {
    id: UID,
    fee_bps: u64,
    treasury: address,
}

/// The right to change the fee rate of `config`. Owned by the publisher.
public struct AdminCap has key {
    id: UID,
    config: ID,
}

/// One job. Shared; created by `fund`, never deleted.
public struct EscrowJob has key {
    id: UID,
    config: ID,
    buyer: address,
    seller: address,
    amount: u64,
    balance: Balance<USDC>,
    fee_bps: u64,
    treasury: address,
    funded_at_ms: u64,
    deliver_by_ms: u64,
    review_ms: u64,
    terms: vector<u8>,
    state: String,
    delivery_hash: vector<u8>,
    delivered_at_ms: u64,
    deliveries: u64,
    rejections: u64,
    reject_reason: String,
    paid_to_seller: u64,
    paid_fee: u64,
    refunded: u64,
}

// === Events ===

/// Emitted by `fund`.
public struct JobFunded has copy, drop {
    job_id: ID,
    buyer: address,
    seller: address,
    amount: u64,
    fee_bps: u64,
    deliver_by_ms: u64,
}

/// Emitted by `deliver`.
public struct JobDelivered has copy, drop {
    job_id: ID,
    by: address,
    at_ms: u64,
}

/// Emitted by `reject`.
public struct JobRejected has copy, drop {
    job_id: ID,
    by: address,
    at_ms: u64,
}

/// Emitted by `release`: `amount` to the seller, `fee` to the treasury.
public struct JobReleased has copy, drop {
    job_id: ID,
    to: address,
    amount: u64,
    fee: u64,
}

/// Emitted by `refund`: `amount` back to the buyer, no fee.
public struct JobRefunded has copy, drop {
    job_id: ID,
    to: address,
    amount: u64,
    fee: u64,
}

/// Emitted by `set_fee`.
public struct FeeChanged has copy, drop {
    old_bps: u64,
    new_bps: u64,
}

/// At publish: the shared configuration (5 %, fees to the publisher) and the publisher's
/// `AdminCap`.
fun init(ctx: &mut TxContext) {
    let config = EscrowConfig {
        id: object::new(ctx),
        fee_bps: INITIAL_FEE_BPS,
        treasury: ctx.sender(),
    };
    let cap = AdminCap { id: object::new(ctx), config: object::id(&config) };
    transfer::share_object(config);
    transfer::transfer(cap, ctx.sender());
}

// === Moves ===

/// The buyer locks the whole `payment` in a new shared job. Its value must be `expected_budget`
/// and the configuration's fee rate `expected_fee_bps` (the buyer's guard against a price or fee
/// that changed since the offer); `deliver_by_ms` is within 365 days ahead, `review_ms` 1 ms to
/// 30 days, `terms` the 32-byte SHA-256 of the offer. The fee rate and treasury are copied in.
public fun fund(
    config: &EscrowConfig,
    payment: Coin<USDC>,
    seller: address,
    expected_budget: u64,
    expected_fee_bps: u64,
    deliver_by_ms: u64,
    review_ms: u64,
    terms: vector<u8>,
    clock: &Clock,
    ctx: &mut TxContext,
) {
    let now = clock.timestamp_ms();
    let amount = payment.value();
    assert!(amount != 0, EZERO_AMOUNT);
    assert!(amount == expected_budget, EBUDGET_MISMATCH);
    assert!(config.fee_bps == expected_fee_bps, EFEE_CHANGED);
    assert!(deliver_by_ms > now && deliver_by_ms - now <= MAX_DELIVERY_MS, EBAD_DEADLINE);
    assert!(review_ms != 0 && review_ms <= MAX_REVIEW_MS, EBAD_DEADLINE);
    assert!(terms.length() == 32, EBAD_HASH);
    let buyer = ctx.sender();
    let job = EscrowJob {
        id: object::new(ctx),
        config: object::id(config),
        buyer,
        seller,
        amount,
        balance: payment.into_balance(),
        fee_bps: config.fee_bps,
        treasury: config.treasury,
        funded_at_ms: now,
        deliver_by_ms,
        review_ms,
        terms,
        state: string::utf8(FUNDED),
        delivery_hash: vector[],
        delivered_at_ms: 0,
        deliveries: 0,
        rejections: 0,
        reject_reason: string::utf8(b""),
        paid_to_seller: 0,
        paid_fee: 0,
        refunded: 0,
    };
    event::emit(JobFunded {
        job_id: object::id(&job),
        buyer,
        seller,
        amount,
        fee_bps: config.fee_bps,
        deliver_by_ms,
    });
    transfer::share_object(job);
}

/// The seller commits to a delivery by its 32-byte hash, before the deadline, on a funded job or
/// after a rejection.
public fun deliver(job: &mut EscrowJob, delivery_hash: vector<u8>, clock: &Clock, ctx: &TxContext) {
    assert!(ctx.sender() == job.seller, ENOT_SELLER);
    assert!(job.in_state(FUNDED) || job.in_state(REJECTED), EWRONG_STATE);
    let now = clock.timestamp_ms();
    assert!(now < job.deliver_by_ms, EDELIVERY_CLOSED);
    assert!(delivery_hash.length() == 32, EBAD_HASH);
    job.state = string::utf8(DELIVERED);
    job.delivery_hash = delivery_hash;
    job.delivered_at_ms = now;
    job.deliveries = job.deliveries + 1;
    job.reject_reason = string::utf8(b"");
    event::emit(JobDelivered { job_id: object::id(job), by: ctx.sender(), at_ms: now });
}

/// The buyer accepts the delivery (the seller may once the review window has passed): the seller
/// gets `amount - fee`, the treasury `fee = floor(amount * fee_bps / 10 000)`.
public fun release(job: &mut EscrowJob, clock: &Clock, ctx: &TxContext) {
    let sender = ctx.sender();
    assert!(sender == job.buyer || sender == job.seller, ENOT_PARTY);
    assert!(job.in_state(DELIVERED), EWRONG_STATE);
    let review_ends = job.delivered_at_ms + job.review_ms;
    assert!(sender == job.buyer || clock.timestamp_ms() >= review_ends, EREVIEW_OPEN);
    let total = job.balance.value();
    let fee = fee_of(total, job.fee_bps);
    let to_treasury = job.balance.split(fee);
    let to_seller = job.balance.withdraw_all();
    pay(to_seller, job.seller);
    pay(to_treasury, job.treasury);
    job.state = string::utf8(RELEASED);
    job.paid_to_seller = total - fee;
    job.paid_fee = fee;
    event::emit(JobReleased { job_id: object::id(job), to: job.seller, amount: total - fee, fee });
}

/// The buyer rejects the delivery within the review window, with a reason of at most 1024 bytes;
/// the seller may deliver again before the deadline.
public fun reject(job: &mut EscrowJob, reason: String, clock: &Clock, ctx: &TxContext) {
    assert!(ctx.sender() == job.buyer, ENOT_BUYER);
    assert!(job.in_state(DELIVERED), EWRONG_STATE);
    let now = clock.timestamp_ms();
    assert!(now < job.delivered_at_ms + job.review_ms, EREVIEW_CLOSED);
    assert!(reason.length() <= MAX_REASON, ETOO_LONG);
    job.state = string::utf8(REJECTED);
    job.rejections = job.rejections + 1;
    job.reject_reason = reason;
    event::emit(JobRejected { job_id: object::id(job), by: ctx.sender(), at_ms: now });
}

/// Everything back to the buyer, no fee: by the seller in any state that is not final, by the
/// buyer on a funded or rejected job once the delivery deadline has passed.
public fun refund(job: &mut EscrowJob, clock: &Clock, ctx: &TxContext) {
    let sender = ctx.sender();
    if (sender == job.seller) {
        assert!(
            job.in_state(FUNDED) || job.in_state(DELIVERED) || job.in_state(REJECTED),
            EWRONG_STATE,
        );
    } else if (sender == job.buyer) {
        assert!(job.in_state(FUNDED) || job.in_state(REJECTED), EWRONG_STATE);
        assert!(clock.timestamp_ms() >= job.deliver_by_ms, EDEADLINE_NOT_REACHED);
    } else {
        abort ENOT_PARTY
    };
    let amount = job.balance.value();
    let to_buyer = job.balance.withdraw_all();
    pay(to_buyer, job.buyer);
    job.state = string::utf8(REFUNDED);
    job.refunded = amount;
    event::emit(JobRefunded { job_id: object::id(job), to: job.buyer, amount, fee: 0 });
}

/// The admin sets the fee rate (at most 10 000 bps) of jobs funded from now on; jobs already
/// funded keep theirs.
public fun set_fee(cap: &AdminCap, config: &mut EscrowConfig, fee_bps: u64) {
    assert!(cap.config == object::id(config), ENOT_ADMIN);
    assert!(fee_bps <= BPS, EBAD_FEE);
    let old_bps = config.fee_bps;
    config.fee_bps = fee_bps;
    event::emit(FeeChanged { old_bps, new_bps: fee_bps });
}

// === Internal ===

/// Whether the job is in `state`.
fun in_state(job: &EscrowJob, state: vector<u8>): bool {
    job.state.as_bytes() == &state
}

/// `floor(amount * fee_bps / 10 000)`, without overflow.
fun fee_of(amount: u64, fee_bps: u64): u64 {
    ((amount as u128) * (fee_bps as u128) / (BPS as u128)) as u64
}

/// Sends `funds` to the address balance of `to` (nothing to send: nothing happens).
fun pay(funds: Balance<USDC>, to: address) {
    if (funds.value() == 0) funds.destroy_zero() else balance::send_funds(funds, to)
}

// === Test access ===

#[test_only]
/// Runs `init` in a test.
public fun init_for_testing(ctx: &mut TxContext) {
    init(ctx)
}

#[test_only]
/// The job's state, the USDC it still holds, and what it paid out: to the seller, as fee, back
/// to the buyer.
public fun job_outcome(job: &EscrowJob): (String, u64, u64, u64, u64) {
    (job.state, job.balance.value(), job.paid_to_seller, job.paid_fee, job.refunded)
}

#[test_only]
/// The job's fee rate, deliveries and rejections.
public fun job_counts(job: &EscrowJob): (u64, u64, u64) {
    (job.fee_bps, job.deliveries, job.rejections)
}

#[test_only]
/// The configuration's fee rate.
public fun config_fee_bps(config: &EscrowConfig): u64 {
    config.fee_bps
}
