// Copyright (c) the Tollgate authors
// SPDX-License-Identifier: Apache-2.0

/// The checks of `channel`, one test each, following the emulator's tests
/// (`src/session/channel.int.test.ts`). A Move test cannot sign, so a settlement's signature is
/// checked here against a fixed vector (made with the library's `signVoucher`); the payouts of a
/// signed settle are covered by the emulator's tests.
#[test_only]
module tollgate::channel_tests;

use sui::balance;
use sui::clock::{Self, Clock};
use sui::sui::SUI;
use sui::test_scenario::{Self as ts, Scenario};
use tollgate::channel::{Self, Channel, Registry};

const ADMIN: address = @0xAD;
const PAYER: address = @0xB0;
const PAYEE: address = @0x5E;
const OPERATOR: address = @0x0E;
const STRANGER: address = @0x57;

const T0: u64 = 1_700_000_000_000;
const GRACE: u64 = 900_000;
const DEPOSIT: u64 = 1_000_000;
const SALT: vector<u8> = x"0909090909090909090909090909090909090909090909090909090909090909";
const OTHER_SALT: vector<u8> = x"0303030303030303030303030303030303030303030303030303030303030303";
/// The public key of the secret key 0x11 × 32 (the vector below).
const SIGNER: vector<u8> = x"d04ab232742bb4ab3a1368bd4615e4e6d0224ab71a016baf8520a332c9778737";
/// Its voucher for the channel 0xc4 × 32 and 250 000 base units.
const SIGNATURE: vector<u8> =
    x"3e1f37e10d40f1db6715347d3fc5504a1da194d1b762c3904937a1f28bd6ced692db207defad60fe73b94a13ef1a4b7be1db0306b77be540062985242e685a04";
const VECTOR_CHANNEL: address = @0xc4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4;
/// `uleb128(26) ‖ domain ‖ channel id ‖ 250 000 as u64 LE`.
const MESSAGE: vector<u8> =
    x"1a4d50502d5355492d53455353494f4e2d564f55434845522d5631c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c4c490d0030000000000";

// === Helpers ===

fun begin(): (Scenario, Clock) {
    let mut scenario = ts::begin(ADMIN);
    channel::init_for_testing(scenario.ctx());
    let mut clock = clock::create_for_testing(scenario.ctx());
    clock.set_for_testing(T0);
    (scenario, clock)
}

fun finish(scenario: Scenario, clock: Clock) {
    clock.destroy_for_testing();
    scenario.end();
}

fun open_with(
    scenario: &mut Scenario,
    payee: address,
    operator: address,
    salt: vector<u8>,
    signer: vector<u8>,
    grace_ms: u64,
    deposit: u64,
) {
    scenario.next_tx(PAYER);
    let mut registry = scenario.take_shared<Registry>();
    let funds = balance::create_for_testing<SUI>(deposit);
    channel::open(&mut registry, payee, operator, salt, signer, grace_ms, funds, scenario.ctx());
    ts::return_shared(registry);
}

/// A channel of `DEPOSIT` from `PAYER` to `PAYEE`, no operator.
fun open(scenario: &mut Scenario) {
    open_with(scenario, PAYEE, @0x0, SALT, SIGNER, GRACE, DEPOSIT);
}

fun top_up(scenario: &mut Scenario, who: address, amount: u64) {
    scenario.next_tx(who);
    let mut ch = scenario.take_shared<Channel<SUI>>();
    channel::top_up(&mut ch, balance::create_for_testing<SUI>(amount), scenario.ctx());
    ts::return_shared(ch);
}

fun settle(scenario: &mut Scenario, who: address, cumulative: u64, capture: u64, sig: vector<u8>) {
    scenario.next_tx(who);
    let mut ch = scenario.take_shared<Channel<SUI>>();
    channel::settle(&mut ch, cumulative, capture, sig, scenario.ctx());
    ts::return_shared(ch);
}

fun close(scenario: &mut Scenario, who: address, cumulative: u64, capture: u64, sig: vector<u8>) {
    scenario.next_tx(who);
    let mut ch = scenario.take_shared<Channel<SUI>>();
    channel::close(&mut ch, cumulative, capture, sig, scenario.ctx());
    ts::return_shared(ch);
}

fun request_close(scenario: &mut Scenario, clock: &Clock, who: address) {
    scenario.next_tx(who);
    let mut ch = scenario.take_shared<Channel<SUI>>();
    channel::request_close(&mut ch, clock, scenario.ctx());
    ts::return_shared(ch);
}

fun withdraw(scenario: &mut Scenario, clock: &Clock, who: address) {
    scenario.next_tx(who);
    let mut ch = scenario.take_shared<Channel<SUI>>();
    channel::withdraw(&mut ch, clock, scenario.ctx());
    ts::return_shared(ch);
}

/// Asserts what the channel holds, deposited, settled, when a close was asked, whether closed.
fun assert_state(
    scenario: &mut Scenario,
    escrow: u64,
    deposited: u64,
    settled: u64,
    requested_ms: u64,
    closed: bool,
) {
    scenario.next_tx(STRANGER);
    let ch = scenario.take_shared<Channel<SUI>>();
    let (e, d, s, r, c) = channel::channel_state(&ch);
    assert!(e == escrow && d == deposited && s == settled && r == requested_ms && c == closed);
    ts::return_shared(ch);
}

// === open ===

#[test]
fun open_holds_the_deposit() {
    let (mut scenario, clock) = begin();
    open(&mut scenario);
    assert_state(&mut scenario, DEPOSIT, DEPOSIT, 0, 0, false);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = channel::EALREADY_OPENED)]
fun open_twice_with_the_same_key_aborts() {
    let (mut scenario, clock) = begin();
    open(&mut scenario);
    open(&mut scenario);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = channel::EALREADY_OPENED)]
fun open_with_the_key_of_a_closed_channel_aborts() {
    let (mut scenario, clock) = begin();
    open(&mut scenario);
    close(&mut scenario, PAYEE, 0, 0, vector[]);
    open(&mut scenario);
    finish(scenario, clock);
}

#[test]
fun open_with_another_salt_is_another_channel() {
    let (mut scenario, clock) = begin();
    open(&mut scenario);
    open_with(&mut scenario, PAYEE, @0x0, OTHER_SALT, SIGNER, GRACE, DEPOSIT);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = channel::EBAD_PAYEE)]
fun open_to_the_zero_address_aborts() {
    let (mut scenario, clock) = begin();
    open_with(&mut scenario, @0x0, @0x0, SALT, SIGNER, GRACE, DEPOSIT);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = channel::EBAD_SALT)]
fun open_with_a_salt_that_is_not_32_bytes_aborts() {
    let (mut scenario, clock) = begin();
    open_with(&mut scenario, PAYEE, @0x0, x"09", SIGNER, GRACE, DEPOSIT);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = channel::EBAD_SIGNER)]
fun open_with_a_signer_that_is_not_32_bytes_aborts() {
    let (mut scenario, clock) = begin();
    open_with(&mut scenario, PAYEE, @0x0, SALT, x"d04a", GRACE, DEPOSIT);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = channel::EGRACE_TOO_SHORT)]
fun open_with_a_grace_period_under_15_minutes_aborts() {
    let (mut scenario, clock) = begin();
    open_with(&mut scenario, PAYEE, @0x0, SALT, SIGNER, GRACE - 1, DEPOSIT);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = channel::EZERO_AMOUNT)]
fun open_with_no_funds_aborts() {
    let (mut scenario, clock) = begin();
    open_with(&mut scenario, PAYEE, @0x0, SALT, SIGNER, GRACE, 0);
    finish(scenario, clock);
}

// === top_up ===

#[test]
fun top_up_adds_to_the_deposit_and_cancels_a_close_request() {
    let (mut scenario, clock) = begin();
    open(&mut scenario);
    request_close(&mut scenario, &clock, PAYER);
    assert_state(&mut scenario, DEPOSIT, DEPOSIT, 0, T0, false);
    top_up(&mut scenario, PAYER, 500_000);
    assert_state(&mut scenario, DEPOSIT + 500_000, DEPOSIT + 500_000, 0, 0, false);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = channel::ENO_CLOSE_REQUEST)]
fun withdraw_after_a_top_up_cancelled_the_request_aborts() {
    let (mut scenario, mut clock) = begin();
    open(&mut scenario);
    request_close(&mut scenario, &clock, PAYER);
    top_up(&mut scenario, PAYER, 1);
    clock.increment_for_testing(GRACE);
    withdraw(&mut scenario, &clock, PAYER);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = channel::ENOT_PAYER)]
fun top_up_by_the_payee_aborts() {
    let (mut scenario, clock) = begin();
    open(&mut scenario);
    top_up(&mut scenario, PAYEE, 1);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = channel::EZERO_AMOUNT)]
fun top_up_with_no_funds_aborts() {
    let (mut scenario, clock) = begin();
    open(&mut scenario);
    top_up(&mut scenario, PAYER, 0);
    finish(scenario, clock);
}

// === settle ===

#[test, expected_failure(abort_code = channel::ENOT_PAYEE)]
fun settle_by_the_payer_aborts() {
    let (mut scenario, clock) = begin();
    open(&mut scenario);
    settle(&mut scenario, PAYER, 250_000, 250_000, SIGNATURE);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = channel::ENOT_PAYEE)]
fun settle_by_a_stranger_aborts() {
    let (mut scenario, clock) = begin();
    open(&mut scenario);
    settle(&mut scenario, STRANGER, 250_000, 250_000, SIGNATURE);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = channel::EBAD_AMOUNT)]
fun settle_above_the_voucher_aborts() {
    let (mut scenario, clock) = begin();
    open(&mut scenario);
    settle(&mut scenario, PAYEE, 250_000, 250_001, SIGNATURE);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = channel::EBAD_AMOUNT)]
fun settle_above_the_deposit_aborts() {
    let (mut scenario, clock) = begin();
    open(&mut scenario);
    settle(&mut scenario, PAYEE, DEPOSIT + 1, DEPOSIT + 1, SIGNATURE);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = channel::EBAD_AMOUNT)]
fun settle_of_nothing_aborts() {
    let (mut scenario, clock) = begin();
    open(&mut scenario);
    settle(&mut scenario, PAYEE, 250_000, 0, SIGNATURE);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = channel::EBAD_SIGNATURE)]
fun settle_with_a_voucher_for_another_channel_aborts() {
    let (mut scenario, clock) = begin();
    open(&mut scenario);
    // SIGNATURE is the signer's, but for the channel 0xc4…c4.
    settle(&mut scenario, PAYEE, 250_000, 250_000, SIGNATURE);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = channel::EBAD_SIGNATURE)]
fun settle_with_a_signature_that_is_not_64_bytes_aborts() {
    let (mut scenario, clock) = begin();
    open(&mut scenario);
    settle(&mut scenario, PAYEE, 250_000, 250_000, x"3e1f");
    finish(scenario, clock);
}

// === close ===

#[test]
fun close_with_nothing_spent_needs_no_voucher_and_refunds_the_deposit() {
    let (mut scenario, clock) = begin();
    open(&mut scenario);
    close(&mut scenario, PAYEE, 0, 0, vector[]);
    assert_state(&mut scenario, 0, DEPOSIT, 0, 0, true);
    finish(scenario, clock);
}

#[test]
fun close_by_the_operator() {
    let (mut scenario, clock) = begin();
    open_with(&mut scenario, PAYEE, OPERATOR, SALT, SIGNER, GRACE, DEPOSIT);
    close(&mut scenario, OPERATOR, 0, 0, vector[]);
    assert_state(&mut scenario, 0, DEPOSIT, 0, 0, true);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = channel::ENOT_PAYEE)]
fun close_by_the_payer_aborts() {
    let (mut scenario, clock) = begin();
    open(&mut scenario);
    close(&mut scenario, PAYER, 0, 0, vector[]);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = channel::EBAD_AMOUNT)]
fun close_above_the_voucher_aborts() {
    let (mut scenario, clock) = begin();
    open(&mut scenario);
    close(&mut scenario, PAYEE, 250_000, 250_001, SIGNATURE);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = channel::EBAD_AMOUNT)]
fun close_above_the_deposit_aborts() {
    let (mut scenario, clock) = begin();
    open(&mut scenario);
    close(&mut scenario, PAYEE, DEPOSIT + 1, DEPOSIT + 1, SIGNATURE);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = channel::EBAD_SIGNATURE)]
fun close_above_what_is_settled_without_a_valid_voucher_aborts() {
    let (mut scenario, clock) = begin();
    open(&mut scenario);
    close(&mut scenario, PAYEE, 250_000, 250_000, SIGNATURE);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = channel::ECLOSED)]
fun settle_after_close_aborts() {
    let (mut scenario, clock) = begin();
    open(&mut scenario);
    close(&mut scenario, PAYEE, 0, 0, vector[]);
    settle(&mut scenario, PAYEE, 250_000, 250_000, SIGNATURE);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = channel::ECLOSED)]
fun top_up_after_close_aborts() {
    let (mut scenario, clock) = begin();
    open(&mut scenario);
    close(&mut scenario, PAYEE, 0, 0, vector[]);
    top_up(&mut scenario, PAYER, 1);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = channel::ECLOSED)]
fun close_twice_aborts() {
    let (mut scenario, clock) = begin();
    open(&mut scenario);
    close(&mut scenario, PAYEE, 0, 0, vector[]);
    close(&mut scenario, PAYEE, 0, 0, vector[]);
    finish(scenario, clock);
}

// === request_close and withdraw ===

#[test]
fun withdraw_after_the_grace_period_refunds_everything() {
    let (mut scenario, mut clock) = begin();
    open(&mut scenario);
    request_close(&mut scenario, &clock, PAYER);
    clock.increment_for_testing(60_000);
    // Asking again does not move the grace period.
    request_close(&mut scenario, &clock, PAYER);
    assert_state(&mut scenario, DEPOSIT, DEPOSIT, 0, T0, false);
    clock.increment_for_testing(GRACE - 60_000);
    withdraw(&mut scenario, &clock, PAYER);
    assert_state(&mut scenario, 0, DEPOSIT, 0, T0, true);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = channel::EGRACE_NOT_OVER)]
fun withdraw_before_the_grace_period_ends_aborts() {
    let (mut scenario, mut clock) = begin();
    open(&mut scenario);
    request_close(&mut scenario, &clock, PAYER);
    clock.increment_for_testing(GRACE - 1);
    withdraw(&mut scenario, &clock, PAYER);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = channel::ENO_CLOSE_REQUEST)]
fun withdraw_without_a_close_request_aborts() {
    let (mut scenario, clock) = begin();
    open(&mut scenario);
    withdraw(&mut scenario, &clock, PAYER);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = channel::ENOT_PAYER)]
fun withdraw_by_the_payee_aborts() {
    let (mut scenario, mut clock) = begin();
    open(&mut scenario);
    request_close(&mut scenario, &clock, PAYER);
    clock.increment_for_testing(GRACE);
    withdraw(&mut scenario, &clock, PAYEE);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = channel::ENOT_PAYER)]
fun request_close_by_the_payee_aborts() {
    let (mut scenario, clock) = begin();
    open(&mut scenario);
    request_close(&mut scenario, &clock, PAYEE);
    finish(scenario, clock);
}

#[test]
fun close_during_the_grace_period_is_allowed() {
    let (mut scenario, mut clock) = begin();
    open(&mut scenario);
    request_close(&mut scenario, &clock, PAYER);
    clock.increment_for_testing(GRACE - 1);
    close(&mut scenario, PAYEE, 0, 0, vector[]);
    assert_state(&mut scenario, 0, DEPOSIT, 0, T0, true);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = channel::ECLOSED)]
fun withdraw_after_close_aborts() {
    let (mut scenario, mut clock) = begin();
    open(&mut scenario);
    request_close(&mut scenario, &clock, PAYER);
    close(&mut scenario, PAYEE, 0, 0, vector[]);
    clock.increment_for_testing(GRACE);
    withdraw(&mut scenario, &clock, PAYER);
    finish(scenario, clock);
}

// === vouchers ===

#[test]
fun the_voucher_message_is_the_bcs_of_voucher_msg() {
    let id = object::id_from_address(VECTOR_CHANNEL);
    assert!(channel::voucher_message_for_testing(id, 250_000) == MESSAGE);
}

#[test]
fun a_voucher_verifies_only_for_its_channel_amount_and_key() {
    let id = object::id_from_address(VECTOR_CHANNEL);
    assert!(channel::valid_voucher_for_testing(SIGNER, id, 250_000, SIGNATURE));
    assert!(!channel::valid_voucher_for_testing(SIGNER, id, 250_001, SIGNATURE));
    let other = object::id_from_address(@0xc5);
    assert!(!channel::valid_voucher_for_testing(SIGNER, other, 250_000, SIGNATURE));
    let other_key = x"d14ab232742bb4ab3a1368bd4615e4e6d0224ab71a016baf8520a332c9778737";
    assert!(!channel::valid_voucher_for_testing(other_key, id, 250_000, SIGNATURE));
}
