// Copyright (c) the Tollgate authors
// SPDX-License-Identifier: Apache-2.0

/// The payment channel of an MPP `session`: the payer deposits once (open, top_up), then pays each
/// call or each token with an off-chain voucher, a raw Ed25519 signature by the channel's signer
/// key over `VoucherMsg { domain, channel_id, cumulative_amount }`. The payee takes what was
/// spent (settle, close), never more than a voucher authorises nor more than the deposit; the payer
/// gets the rest back at close, or by itself after asking to close and waiting out the grace
/// period (request_close, withdraw), during which the payee may still settle.
///
/// A channel's id is derived from the shared `Registry` and `ChannelKey<T> { payer, payee, salt }`
/// (`derived_object`), so the payer knows it before opening and signs its first voucher with the
/// open. A closed channel stays as a tombstone: its key can never open a channel again, so an old
/// voucher can never be replayed against a new one.
///
/// The rules are docs/protocol.md ("Sessions"); the emulator's handlers are
/// `src/testing/ledger/channel.ts`; the abort codes are named in `src/testing/ledger/signatures.ts`
/// (checked by `scripts/moveParity.test.ts`).
module tollgate::channel;

use std::ascii::String;
use std::bcs;
use std::type_name;
use sui::balance::{Self, Balance};
use sui::clock::Clock;
use sui::derived_object;
use sui::ed25519;
use sui::event;

// === Abort codes (stable) ===

/// `top_up`, `request_close` or `withdraw` by anyone but the payer.
const ENOT_PAYER: u64 = 1;
/// `settle` or `close` by anyone but the payee (or its operator).
const ENOT_PAYEE: u64 = 2;
/// Any move on a closed channel.
const ECLOSED: u64 = 3;
/// `open` with the payee @0x0.
const EBAD_PAYEE: u64 = 4;
/// `open` with a salt that is not 32 bytes.
const EBAD_SALT: u64 = 5;
/// `open` with a signer key that is not 32 bytes.
const EBAD_SIGNER: u64 = 6;
/// `open` with a grace period under 15 minutes.
const EGRACE_TOO_SHORT: u64 = 7;
/// `open` or `top_up` with no funds.
const EZERO_AMOUNT: u64 = 8;
/// `settle` or `close` with a capture out of range (above the voucher or the deposit, or below
/// what is settled).
const EBAD_AMOUNT: u64 = 9;
/// A voucher signature that is not the channel signer's over this channel and amount.
const EBAD_SIGNATURE: u64 = 10;
/// `withdraw` without a pending close request.
const ENO_CLOSE_REQUEST: u64 = 11;
/// `withdraw` before the grace period has passed.
const EGRACE_NOT_OVER: u64 = 12;
/// `open` with the key of a channel that exists (open or closed).
const EALREADY_OPENED: u64 = 13;
#[allow(unused_const)]
/// Reserved: the emulator's answer to a channel or the registry passed by immutable reference. On
/// Sui the runtime refuses such a transaction before the module runs, so this module never aborts
/// with it; the code stays taken so that it keeps its meaning.
const EREAD_ONLY: u64 = 14;

// === Limits ===

/// Shortest grace period a channel may ask for: 15 minutes.
const MIN_GRACE_MS: u64 = 900_000;
/// Largest u64: a grace period's end saturates here.
const U64_MAX: u64 = 18_446_744_073_709_551_615;
/// The domain of every voucher message.
const VOUCHER_DOMAIN: vector<u8> = b"MPP-SUI-SESSION-VOUCHER-V1";
/// Length of an Ed25519 signature.
const SIGNATURE_LENGTH: u64 = 64;

// === Objects ===

/// The parent every channel id is derived under. Shared; one per package, created at publish.
public struct Registry has key {
    id: UID,
}

/// What a channel's id is derived from.
public struct ChannelKey<phantom T> has copy, drop, store {
    payer: address,
    payee: address,
    salt: vector<u8>,
}

/// One channel. Shared; created by `open`, never deleted (`closed` marks the end).
public struct Channel<phantom T> has key {
    id: UID,
    payer: address,
    payee: address,
    /// Who may settle and close besides the payee; @0x0 for none.
    operator: address,
    /// The 32-byte Ed25519 key that signs vouchers.
    signer: vector<u8>,
    /// `deposited - settled` while open; empty once closed.
    escrow: Balance<T>,
    deposited: u64,
    settled: u64,
    /// When the payer asked to close; 0 when not asked (or a top-up cancelled it).
    close_requested_ms: u64,
    grace_ms: u64,
    closed: bool,
}

/// What a voucher's signature covers (67 bytes of BCS).
public struct VoucherMsg has copy, drop {
    domain: vector<u8>,
    channel_id: ID,
    cumulative_amount: u64,
}

// === Events ===

/// Emitted by `open`.
public struct ChannelOpened has copy, drop {
    channel_id: ID,
    payer: address,
    payee: address,
    operator: address,
    coin_type: String,
    deposit: u64,
    grace_ms: u64,
}

/// Emitted by `top_up`: `amount` added, `deposited` in all.
public struct ToppedUp has copy, drop {
    channel_id: ID,
    amount: u64,
    deposited: u64,
}

/// Emitted by `settle`: `amount` paid now, `settled` in all, with a voucher of `cumulative_amount`.
public struct Settled has copy, drop {
    channel_id: ID,
    cumulative_amount: u64,
    amount: u64,
    settled: u64,
}

/// Emitted by `request_close`; the payee should settle before `grace_end_ms`.
public struct CloseRequested has copy, drop {
    channel_id: ID,
    requested_at_ms: u64,
    grace_end_ms: u64,
}

/// Emitted by a `top_up` that cancels a close request.
public struct CloseRequestCancelled has copy, drop {
    channel_id: ID,
}

/// Emitted by `close`: `paid` to the payee now (`settled` in all), `refunded` to the payer.
public struct ChannelClosed has copy, drop {
    channel_id: ID,
    settled: u64,
    paid: u64,
    refunded: u64,
}

/// Emitted by `withdraw`: `refunded` to the payer.
public struct Withdrawn has copy, drop {
    channel_id: ID,
    refunded: u64,
}

/// At publish: the shared registry.
fun init(ctx: &mut TxContext) {
    transfer::share_object(Registry { id: object::new(ctx) });
}

// === Moves ===

/// The sender (the payer) opens a channel to `payee` holding all of `funds`. `salt` is 32 bytes
/// (a new channel between the same two needs a new one), `signer` the 32-byte Ed25519 key of the
/// vouchers, `grace_ms` at least 15 minutes. The id is derived from the registry and the key.
public fun open<T>(
    registry: &mut Registry,
    payee: address,
    operator: address,
    salt: vector<u8>,
    signer: vector<u8>,
    grace_ms: u64,
    funds: Balance<T>,
    ctx: &mut TxContext,
) {
    assert!(payee != @0x0, EBAD_PAYEE);
    assert!(salt.length() == 32, EBAD_SALT);
    assert!(signer.length() == 32, EBAD_SIGNER);
    assert!(grace_ms >= MIN_GRACE_MS, EGRACE_TOO_SHORT);
    let deposit = funds.value();
    assert!(deposit > 0, EZERO_AMOUNT);
    let payer = ctx.sender();
    let key = ChannelKey<T> { payer, payee, salt };
    assert!(!derived_object::exists(&registry.id, key), EALREADY_OPENED);
    let channel = Channel<T> {
        id: derived_object::claim(&mut registry.id, key),
        payer,
        payee,
        operator,
        signer,
        escrow: funds,
        deposited: deposit,
        settled: 0,
        close_requested_ms: 0,
        grace_ms,
        closed: false,
    };
    event::emit(ChannelOpened {
        channel_id: object::id(&channel),
        payer,
        payee,
        operator,
        coin_type: type_name::with_defining_ids<T>().into_string(),
        deposit,
        grace_ms,
    });
    transfer::share_object(channel);
}

/// The payer adds all of `funds` to the deposit; a pending close request is cancelled.
public fun top_up<T>(channel: &mut Channel<T>, funds: Balance<T>, ctx: &TxContext) {
    assert!(!channel.closed, ECLOSED);
    assert!(ctx.sender() == channel.payer, ENOT_PAYER);
    let amount = funds.value();
    assert!(amount > 0, EZERO_AMOUNT);
    channel.escrow.join(funds);
    channel.deposited = channel.deposited + amount;
    let channel_id = object::id(channel);
    event::emit(ToppedUp { channel_id, amount, deposited: channel.deposited });
    if (channel.close_requested_ms != 0) {
        channel.close_requested_ms = 0;
        event::emit(CloseRequestCancelled { channel_id });
    }
}

/// The payee (or its operator) takes `capture - settled` now, with a voucher of
/// `cumulative_amount` signed by the channel's signer: `settled < capture <= cumulative_amount`
/// and `capture <= deposited`. Allowed during a close's grace period.
public fun settle<T>(
    channel: &mut Channel<T>,
    cumulative_amount: u64,
    capture: u64,
    signature: vector<u8>,
    ctx: &TxContext,
) {
    assert!(!channel.closed, ECLOSED);
    assert!(is_payee(channel, ctx.sender()), ENOT_PAYEE);
    assert!(
        channel.settled < capture && capture <= cumulative_amount && capture <= channel.deposited,
        EBAD_AMOUNT,
    );
    let channel_id = object::id(channel);
    assert!(
        valid_voucher(&channel.signer, channel_id, cumulative_amount, &signature),
        EBAD_SIGNATURE,
    );
    let amount = capture - channel.settled;
    channel.settled = capture;
    pay(channel.escrow.split(amount), channel.payee);
    event::emit(Settled { channel_id, cumulative_amount, amount, settled: capture });
}

/// The payee (or its operator) closes: `capture - settled` to the payee, the rest to the payer.
/// `settled <= capture <= cumulative_amount` and `capture <= deposited`; the voucher's signature
/// is checked when `capture > settled`.
public fun close<T>(
    channel: &mut Channel<T>,
    cumulative_amount: u64,
    capture: u64,
    signature: vector<u8>,
    ctx: &TxContext,
) {
    assert!(!channel.closed, ECLOSED);
    assert!(is_payee(channel, ctx.sender()), ENOT_PAYEE);
    assert!(
        channel.settled <= capture && capture <= cumulative_amount && capture <= channel.deposited,
        EBAD_AMOUNT,
    );
    let channel_id = object::id(channel);
    if (capture > channel.settled) {
        assert!(
            valid_voucher(&channel.signer, channel_id, cumulative_amount, &signature),
            EBAD_SIGNATURE,
        );
    };
    let paid = capture - channel.settled;
    let refunded = channel.escrow.value() - paid;
    channel.settled = capture;
    channel.closed = true;
    pay(channel.escrow.split(paid), channel.payee);
    pay(channel.escrow.withdraw_all(), channel.payer);
    event::emit(ChannelClosed {
        channel_id: object::id(channel),
        settled: capture,
        paid,
        refunded,
    });
}

/// The payer asks to close. The time is set once: asking again changes nothing.
public fun request_close<T>(channel: &mut Channel<T>, clock: &Clock, ctx: &TxContext) {
    assert!(!channel.closed, ECLOSED);
    assert!(ctx.sender() == channel.payer, ENOT_PAYER);
    if (channel.close_requested_ms != 0) return;
    let now = clock.timestamp_ms();
    channel.close_requested_ms = now;
    event::emit(CloseRequested {
        channel_id: object::id(channel),
        requested_at_ms: now,
        grace_end_ms: grace_end(now, channel.grace_ms),
    });
}

/// The payer takes everything left once the grace period of its close request has passed.
public fun withdraw<T>(channel: &mut Channel<T>, clock: &Clock, ctx: &TxContext) {
    assert!(!channel.closed, ECLOSED);
    assert!(ctx.sender() == channel.payer, ENOT_PAYER);
    assert!(channel.close_requested_ms != 0, ENO_CLOSE_REQUEST);
    assert!(
        clock.timestamp_ms() >= grace_end(channel.close_requested_ms, channel.grace_ms),
        EGRACE_NOT_OVER,
    );
    let refunded = channel.escrow.value();
    channel.closed = true;
    pay(channel.escrow.withdraw_all(), channel.payer);
    event::emit(Withdrawn { channel_id: object::id(channel), refunded });
}

// === Internal ===

/// Whether `sender` is the payee, or the operator when there is one.
fun is_payee<T>(channel: &Channel<T>, sender: address): bool {
    sender == channel.payee || (channel.operator != @0x0 && sender == channel.operator)
}

/// The bytes a voucher's signature covers.
fun voucher_message(channel_id: ID, cumulative_amount: u64): vector<u8> {
    bcs::to_bytes(&VoucherMsg { domain: VOUCHER_DOMAIN, channel_id, cumulative_amount })
}

/// Whether `signature` (exactly 64 bytes) is `signer`'s over the voucher message.
fun valid_voucher(
    signer: &vector<u8>,
    channel_id: ID,
    cumulative_amount: u64,
    signature: &vector<u8>,
): bool {
    signature.length() == SIGNATURE_LENGTH &&
        ed25519::ed25519_verify(signature, signer, &voucher_message(channel_id, cumulative_amount))
}

/// `start + grace_ms`, saturating at the largest u64.
fun grace_end(start: u64, grace_ms: u64): u64 {
    if (grace_ms > U64_MAX - start) U64_MAX else start + grace_ms
}

/// Sends `funds` to the address balance of `to` (nothing to send: nothing happens).
fun pay<T>(funds: Balance<T>, to: address) {
    if (funds.value() == 0) funds.destroy_zero() else balance::send_funds(funds, to)
}

// === Test access ===

#[test_only]
/// Runs `init` in a test.
public fun init_for_testing(ctx: &mut TxContext) {
    init(ctx)
}

#[test_only]
/// What the channel holds, what was deposited and settled, when a close was asked, whether closed.
public fun channel_state<T>(channel: &Channel<T>): (u64, u64, u64, u64, bool) {
    (
        channel.escrow.value(),
        channel.deposited,
        channel.settled,
        channel.close_requested_ms,
        channel.closed,
    )
}

#[test_only]
/// The voucher message of `channel_id` and `cumulative_amount`.
public fun voucher_message_for_testing(channel_id: ID, cumulative_amount: u64): vector<u8> {
    voucher_message(channel_id, cumulative_amount)
}

#[test_only]
/// Whether `signature` is `signer`'s voucher for `channel_id` and `cumulative_amount`.
public fun valid_voucher_for_testing(
    signer: vector<u8>,
    channel_id: ID,
    cumulative_amount: u64,
    signature: vector<u8>,
): bool {
    valid_voucher(&signer, channel_id, cumulative_amount, &signature)
}
