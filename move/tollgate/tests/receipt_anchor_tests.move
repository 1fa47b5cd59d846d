// Copyright (c) the Tollgate authors
// SPDX-License-Identifier: Apache-2.0

/// The checks of `receipt_anchor`, following `src/testing/ledger/modules.int.test.ts`.
#[test_only]
module tollgate::receipt_anchor_tests;

use std::string;
use sui::clock;
use sui::event;
use sui::test_scenario as ts;
use tollgate::receipt_anchor::{Self, ReceiptAnchored};

const OPERATOR: address = @0x0E;

fun long(): vector<u8> {
    let mut bytes = vector[];
    1025u64.do!(|_| bytes.push_back(120u8));
    bytes
}

#[test]
fun anchor_receipt_emits_one_receipt_anchored_event() {
    let mut scenario = ts::begin(OPERATOR);
    let clock = clock::create_for_testing(scenario.ctx());
    receipt_anchor::anchor_receipt(
        string::utf8(b"rcpt_123"),
        string::utf8(b"sha256:abcd"),
        string::utf8(b"sha256:wl"),
        1_700_000_000_000,
        string::utf8(b"sha256:gw"),
        &clock,
        scenario.ctx(),
    );
    assert!(event::events_by_type<ReceiptAnchored>().length() == 1);
    clock.destroy_for_testing();
    scenario.end();
}

#[test, expected_failure(abort_code = receipt_anchor::ETOO_LONG)]
fun anchor_receipt_with_a_field_over_1024_bytes_aborts() {
    let mut scenario = ts::begin(OPERATOR);
    let clock = clock::create_for_testing(scenario.ctx());
    receipt_anchor::anchor_receipt(
        string::utf8(b"rcpt_123"),
        string::utf8(long()),
        string::utf8(b""),
        0,
        string::utf8(b""),
        &clock,
        scenario.ctx(),
    );
    clock.destroy_for_testing();
    scenario.end();
}
