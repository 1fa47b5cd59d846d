// Copyright (c) the Tollgate authors
// SPDX-License-Identifier: Apache-2.0

/// The checks of `escrow`, one test each, following the emulator's tests
/// (`src/escrow/escrow.int.test.ts`).
#[test_only]
module tollgate::escrow_tests;

use std::string::{Self, String};
use sui::clock::{Self, Clock};
use sui::coin;
use sui::test_scenario::{Self as ts, Scenario};
use tollgate::escrow::{Self, AdminCap, EscrowConfig, EscrowJob};
use usdc::usdc::USDC;

const ADMIN: address = @0xAD;
const BUYER: address = @0xB0;
const SELLER: address = @0x5E;
const STRANGER: address = @0x57;

const T0: u64 = 1_700_000_000_000;
const HOUR: u64 = 3_600_000;
const DAY: u64 = 86_400_000;
/// An odd amount: at 500 bps the fee rounds down (50 000) and the seller gets 950 001.
const AMOUNT: u64 = 1_000_001;
const FEE_BPS: u64 = 500;
const HASH: vector<u8> = x"0707070707070707070707070707070707070707070707070707070707070707";

// === Helpers ===

fun begin(): (Scenario, Clock) {
    let mut scenario = ts::begin(ADMIN);
    escrow::init_for_testing(scenario.ctx());
    let mut clock = clock::create_for_testing(scenario.ctx());
    clock.set_for_testing(T0);
    (scenario, clock)
}

fun finish(scenario: Scenario, clock: Clock) {
    clock.destroy_for_testing();
    scenario.end();
}

fun fund_with(
    scenario: &mut Scenario,
    clock: &Clock,
    coin_value: u64,
    budget: u64,
    fee_bps: u64,
    deliver_by_ms: u64,
    review_ms: u64,
    terms: vector<u8>,
) {
    scenario.next_tx(BUYER);
    let config = scenario.take_shared<EscrowConfig>();
    let payment = coin::mint_for_testing<USDC>(coin_value, scenario.ctx());
    escrow::fund(
        &config,
        payment,
        SELLER,
        budget,
        fee_bps,
        deliver_by_ms,
        review_ms,
        terms,
        clock,
        scenario.ctx(),
    );
    ts::return_shared(config);
}

/// A job of `AMOUNT` at 500 bps, due in a day, with an hour of review.
fun fund(scenario: &mut Scenario, clock: &Clock) {
    fund_with(scenario, clock, AMOUNT, AMOUNT, FEE_BPS, T0 + DAY, HOUR, HASH);
}

fun deliver(scenario: &mut Scenario, clock: &Clock, who: address) {
    scenario.next_tx(who);
    let mut job = scenario.take_shared<EscrowJob>();
    escrow::deliver(&mut job, HASH, clock, scenario.ctx());
    ts::return_shared(job);
}

fun release(scenario: &mut Scenario, clock: &Clock, who: address) {
    scenario.next_tx(who);
    let mut job = scenario.take_shared<EscrowJob>();
    escrow::release(&mut job, clock, scenario.ctx());
    ts::return_shared(job);
}

fun reject(scenario: &mut Scenario, clock: &Clock, who: address, reason: String) {
    scenario.next_tx(who);
    let mut job = scenario.take_shared<EscrowJob>();
    escrow::reject(&mut job, reason, clock, scenario.ctx());
    ts::return_shared(job);
}

fun refund(scenario: &mut Scenario, clock: &Clock, who: address) {
    scenario.next_tx(who);
    let mut job = scenario.take_shared<EscrowJob>();
    escrow::refund(&mut job, clock, scenario.ctx());
    ts::return_shared(job);
}

/// Asserts the job's state, what it holds and what it paid out.
fun assert_outcome(
    scenario: &mut Scenario,
    state: vector<u8>,
    held: u64,
    to_seller: u64,
    fee: u64,
    refunded: u64,
) {
    scenario.next_tx(ADMIN);
    let job = scenario.take_shared<EscrowJob>();
    let (s, b, p, f, r) = escrow::job_outcome(&job);
    assert!(s == string::utf8(state));
    assert!(b == held);
    assert!(p == to_seller);
    assert!(f == fee);
    assert!(r == refunded);
    ts::return_shared(job);
}

fun assert_counts(scenario: &mut Scenario, fee_bps: u64, deliveries: u64, rejections: u64) {
    scenario.next_tx(ADMIN);
    let job = scenario.take_shared<EscrowJob>();
    let (f, d, r) = escrow::job_counts(&job);
    assert!(f == fee_bps);
    assert!(d == deliveries);
    assert!(r == rejections);
    ts::return_shared(job);
}

fun set_fee(scenario: &mut Scenario, fee_bps: u64) {
    scenario.next_tx(ADMIN);
    let cap = scenario.take_from_sender<AdminCap>();
    let mut config = scenario.take_shared<EscrowConfig>();
    escrow::set_fee(&cap, &mut config, fee_bps);
    ts::return_shared(config);
    scenario.return_to_sender(cap);
}

// === fund ===

#[test]
fun fund_locks_exactly_the_budget_with_the_current_fee_rate_copied_in() {
    let (mut scenario, clock) = begin();
    fund(&mut scenario, &clock);
    assert_outcome(&mut scenario, b"funded", AMOUNT, 0, 0, 0);
    assert_counts(&mut scenario, FEE_BPS, 0, 0);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = escrow::EFEE_CHANGED)]
fun fund_aborts_when_the_fee_rate_is_not_the_agreed_one() {
    let (mut scenario, clock) = begin();
    fund_with(&mut scenario, &clock, AMOUNT, AMOUNT, 250, T0 + DAY, HOUR, HASH);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = escrow::EBAD_DEADLINE)]
fun fund_aborts_on_a_deadline_that_is_not_ahead() {
    let (mut scenario, clock) = begin();
    fund_with(&mut scenario, &clock, AMOUNT, AMOUNT, FEE_BPS, T0, HOUR, HASH);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = escrow::EBAD_DEADLINE)]
fun fund_aborts_on_a_deadline_over_365_days_ahead() {
    let (mut scenario, clock) = begin();
    fund_with(&mut scenario, &clock, AMOUNT, AMOUNT, FEE_BPS, T0 + 365 * DAY + 1, HOUR, HASH);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = escrow::EBAD_DEADLINE)]
fun fund_aborts_on_a_zero_review_window() {
    let (mut scenario, clock) = begin();
    fund_with(&mut scenario, &clock, AMOUNT, AMOUNT, FEE_BPS, T0 + DAY, 0, HASH);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = escrow::EBAD_DEADLINE)]
fun fund_aborts_on_a_review_window_over_30_days() {
    let (mut scenario, clock) = begin();
    fund_with(&mut scenario, &clock, AMOUNT, AMOUNT, FEE_BPS, T0 + DAY, 30 * DAY + 1, HASH);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = escrow::EBUDGET_MISMATCH)]
fun fund_aborts_on_a_coin_that_is_not_the_budget() {
    let (mut scenario, clock) = begin();
    fund_with(&mut scenario, &clock, 1_000, 999, FEE_BPS, T0 + DAY, HOUR, HASH);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = escrow::EZERO_AMOUNT)]
fun fund_aborts_on_an_empty_coin() {
    let (mut scenario, clock) = begin();
    fund_with(&mut scenario, &clock, 0, 0, FEE_BPS, T0 + DAY, HOUR, HASH);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = escrow::EBAD_HASH)]
fun fund_aborts_on_terms_that_are_not_32_bytes() {
    let (mut scenario, clock) = begin();
    fund_with(&mut scenario, &clock, AMOUNT, AMOUNT, FEE_BPS, T0 + DAY, HOUR, x"0707");
    finish(scenario, clock);
}

// === deliver ===

#[test, expected_failure(abort_code = escrow::ENOT_SELLER)]
fun deliver_by_the_buyer_aborts() {
    let (mut scenario, clock) = begin();
    fund(&mut scenario, &clock);
    deliver(&mut scenario, &clock, BUYER);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = escrow::ENOT_SELLER)]
fun deliver_by_a_stranger_aborts() {
    let (mut scenario, clock) = begin();
    fund(&mut scenario, &clock);
    deliver(&mut scenario, &clock, STRANGER);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = escrow::EWRONG_STATE)]
fun deliver_twice_without_a_rejection_aborts() {
    let (mut scenario, clock) = begin();
    fund(&mut scenario, &clock);
    deliver(&mut scenario, &clock, SELLER);
    deliver(&mut scenario, &clock, SELLER);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = escrow::EDELIVERY_CLOSED)]
fun deliver_at_the_deadline_aborts() {
    let (mut scenario, mut clock) = begin();
    fund(&mut scenario, &clock);
    clock.set_for_testing(T0 + DAY);
    deliver(&mut scenario, &clock, SELLER);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = escrow::EBAD_HASH)]
fun deliver_with_a_hash_that_is_not_32_bytes_aborts() {
    let (mut scenario, clock) = begin();
    fund(&mut scenario, &clock);
    scenario.next_tx(SELLER);
    let mut job = scenario.take_shared<EscrowJob>();
    escrow::deliver(&mut job, x"07", &clock, scenario.ctx());
    ts::return_shared(job);
    finish(scenario, clock);
}

// === release ===

#[test]
fun release_pays_the_seller_95_percent_and_the_treasury_the_rounded_down_fee() {
    let (mut scenario, clock) = begin();
    fund(&mut scenario, &clock);
    deliver(&mut scenario, &clock, SELLER);
    release(&mut scenario, &clock, BUYER);
    assert_outcome(&mut scenario, b"released", 0, 950_001, 50_000, 0);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = escrow::EWRONG_STATE)]
fun release_before_a_delivery_aborts() {
    let (mut scenario, clock) = begin();
    fund(&mut scenario, &clock);
    release(&mut scenario, &clock, BUYER);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = escrow::ENOT_PARTY)]
fun release_by_a_stranger_aborts() {
    let (mut scenario, clock) = begin();
    fund(&mut scenario, &clock);
    deliver(&mut scenario, &clock, SELLER);
    release(&mut scenario, &clock, STRANGER);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = escrow::EREVIEW_OPEN)]
fun release_by_the_seller_during_the_review_window_aborts() {
    let (mut scenario, clock) = begin();
    fund(&mut scenario, &clock);
    deliver(&mut scenario, &clock, SELLER);
    release(&mut scenario, &clock, SELLER);
    finish(scenario, clock);
}

#[test]
fun release_by_the_seller_once_the_review_window_passed_in_silence() {
    let (mut scenario, mut clock) = begin();
    fund(&mut scenario, &clock);
    deliver(&mut scenario, &clock, SELLER);
    clock.set_for_testing(T0 + HOUR);
    release(&mut scenario, &clock, SELLER);
    assert_outcome(&mut scenario, b"released", 0, 950_001, 50_000, 0);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = escrow::EWRONG_STATE)]
fun release_of_a_released_job_aborts() {
    let (mut scenario, clock) = begin();
    fund(&mut scenario, &clock);
    deliver(&mut scenario, &clock, SELLER);
    release(&mut scenario, &clock, BUYER);
    release(&mut scenario, &clock, BUYER);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = escrow::EWRONG_STATE)]
fun refund_by_the_seller_of_a_released_job_aborts() {
    let (mut scenario, clock) = begin();
    fund(&mut scenario, &clock);
    deliver(&mut scenario, &clock, SELLER);
    release(&mut scenario, &clock, BUYER);
    refund(&mut scenario, &clock, SELLER);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = escrow::EWRONG_STATE)]
fun refund_by_the_buyer_of_a_released_job_aborts() {
    let (mut scenario, mut clock) = begin();
    fund(&mut scenario, &clock);
    deliver(&mut scenario, &clock, SELLER);
    release(&mut scenario, &clock, BUYER);
    clock.set_for_testing(T0 + DAY);
    refund(&mut scenario, &clock, BUYER);
    finish(scenario, clock);
}

// === reject ===

#[test]
fun reject_within_the_review_window_lets_the_seller_deliver_again() {
    let (mut scenario, clock) = begin();
    fund(&mut scenario, &clock);
    deliver(&mut scenario, &clock, SELLER);
    reject(&mut scenario, &clock, BUYER, string::utf8(b"not what was asked"));
    assert_outcome(&mut scenario, b"rejected", AMOUNT, 0, 0, 0);
    deliver(&mut scenario, &clock, SELLER);
    assert_counts(&mut scenario, FEE_BPS, 2, 1);
    release(&mut scenario, &clock, BUYER);
    assert_outcome(&mut scenario, b"released", 0, 950_001, 50_000, 0);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = escrow::EWRONG_STATE)]
fun reject_before_a_delivery_aborts() {
    let (mut scenario, clock) = begin();
    fund(&mut scenario, &clock);
    reject(&mut scenario, &clock, BUYER, string::utf8(b""));
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = escrow::ENOT_BUYER)]
fun reject_by_the_seller_aborts() {
    let (mut scenario, clock) = begin();
    fund(&mut scenario, &clock);
    deliver(&mut scenario, &clock, SELLER);
    reject(&mut scenario, &clock, SELLER, string::utf8(b""));
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = escrow::ENOT_BUYER)]
fun reject_by_a_stranger_aborts() {
    let (mut scenario, clock) = begin();
    fund(&mut scenario, &clock);
    deliver(&mut scenario, &clock, SELLER);
    reject(&mut scenario, &clock, STRANGER, string::utf8(b""));
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = escrow::EREVIEW_CLOSED)]
fun reject_after_the_review_window_aborts() {
    let (mut scenario, mut clock) = begin();
    fund(&mut scenario, &clock);
    deliver(&mut scenario, &clock, SELLER);
    clock.set_for_testing(T0 + HOUR);
    reject(&mut scenario, &clock, BUYER, string::utf8(b""));
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = escrow::ETOO_LONG)]
fun reject_with_a_reason_over_1024_bytes_aborts() {
    let (mut scenario, clock) = begin();
    fund(&mut scenario, &clock);
    deliver(&mut scenario, &clock, SELLER);
    let mut reason = vector[];
    1025u64.do!(|_| reason.push_back(120u8));
    reject(&mut scenario, &clock, BUYER, string::utf8(reason));
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = escrow::EDELIVERY_CLOSED)]
fun a_rejected_job_cannot_be_delivered_after_the_deadline() {
    let (mut scenario, mut clock) = begin();
    fund(&mut scenario, &clock);
    deliver(&mut scenario, &clock, SELLER);
    reject(&mut scenario, &clock, BUYER, string::utf8(b""));
    clock.set_for_testing(T0 + DAY);
    deliver(&mut scenario, &clock, SELLER);
    finish(scenario, clock);
}

#[test]
fun a_rejected_job_goes_back_to_the_buyer_after_the_deadline() {
    let (mut scenario, mut clock) = begin();
    fund(&mut scenario, &clock);
    deliver(&mut scenario, &clock, SELLER);
    reject(&mut scenario, &clock, BUYER, string::utf8(b""));
    clock.set_for_testing(T0 + DAY);
    refund(&mut scenario, &clock, BUYER);
    assert_outcome(&mut scenario, b"refunded", 0, 0, 0, AMOUNT);
    finish(scenario, clock);
}

// === refund ===

#[test]
fun refund_by_the_buyer_returns_everything_once_the_deadline_passed() {
    let (mut scenario, mut clock) = begin();
    fund(&mut scenario, &clock);
    clock.set_for_testing(T0 + DAY);
    refund(&mut scenario, &clock, BUYER);
    assert_outcome(&mut scenario, b"refunded", 0, 0, 0, AMOUNT);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = escrow::EDEADLINE_NOT_REACHED)]
fun refund_by_the_buyer_before_the_deadline_aborts() {
    let (mut scenario, clock) = begin();
    fund(&mut scenario, &clock);
    refund(&mut scenario, &clock, BUYER);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = escrow::EDEADLINE_NOT_REACHED)]
fun refund_by_the_buyer_of_a_rejected_job_before_the_deadline_aborts() {
    let (mut scenario, clock) = begin();
    fund(&mut scenario, &clock);
    deliver(&mut scenario, &clock, SELLER);
    reject(&mut scenario, &clock, BUYER, string::utf8(b""));
    refund(&mut scenario, &clock, BUYER);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = escrow::ENOT_PARTY)]
fun refund_by_a_stranger_aborts() {
    let (mut scenario, mut clock) = begin();
    fund(&mut scenario, &clock);
    clock.set_for_testing(T0 + DAY);
    refund(&mut scenario, &clock, STRANGER);
    finish(scenario, clock);
}

#[test]
fun refund_by_the_seller_at_any_time_even_with_a_delivery_pending() {
    let (mut scenario, clock) = begin();
    fund(&mut scenario, &clock);
    deliver(&mut scenario, &clock, SELLER);
    refund(&mut scenario, &clock, SELLER);
    assert_outcome(&mut scenario, b"refunded", 0, 0, 0, AMOUNT);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = escrow::EWRONG_STATE)]
fun deliver_after_a_refund_aborts() {
    let (mut scenario, clock) = begin();
    fund(&mut scenario, &clock);
    refund(&mut scenario, &clock, SELLER);
    deliver(&mut scenario, &clock, SELLER);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = escrow::EWRONG_STATE)]
fun refund_by_the_buyer_with_a_delivery_pending_aborts() {
    let (mut scenario, mut clock) = begin();
    fund(&mut scenario, &clock);
    deliver(&mut scenario, &clock, SELLER);
    clock.set_for_testing(T0 + DAY);
    refund(&mut scenario, &clock, BUYER);
    finish(scenario, clock);
}

// === set_fee ===

#[test]
fun a_job_keeps_its_fee_rate_when_the_admin_changes_it() {
    let (mut scenario, clock) = begin();
    set_fee(&mut scenario, 250);
    fund_with(&mut scenario, &clock, AMOUNT, AMOUNT, 250, T0 + DAY, HOUR, HASH);
    set_fee(&mut scenario, 500);
    assert_counts(&mut scenario, 250, 0, 0);
    scenario.next_tx(ADMIN);
    let config = scenario.take_shared<EscrowConfig>();
    assert!(escrow::config_fee_bps(&config) == 500);
    ts::return_shared(config);
    fund(&mut scenario, &clock);
    assert_counts(&mut scenario, 500, 0, 0);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = escrow::EBAD_FEE)]
fun set_fee_over_10_000_bps_aborts() {
    let (mut scenario, clock) = begin();
    set_fee(&mut scenario, 10_001);
    finish(scenario, clock);
}

#[test, expected_failure(abort_code = escrow::ENOT_ADMIN)]
fun set_fee_with_the_cap_of_another_configuration_aborts() {
    let (mut scenario, clock) = begin();
    scenario.next_tx(STRANGER);
    escrow::init_for_testing(scenario.ctx());
    scenario.next_tx(ADMIN);
    // The newest configuration is the stranger's; the admin's cap is for the first one.
    let cap = scenario.take_from_sender<AdminCap>();
    let mut config = scenario.take_shared<EscrowConfig>();
    escrow::set_fee(&cap, &mut config, 100);
    ts::return_shared(config);
    scenario.return_to_sender(cap);
    finish(scenario, clock);
}
