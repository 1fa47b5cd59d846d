// Copyright (c) the Tollgate authors
// SPDX-License-Identifier: Apache-2.0

/// Anchoring confidential-inference receipts: an event that commits a receipt's fields and the
/// hash of the gateway's signed receipt, with the time and the address that anchored it. Creates
/// no object. The emulator's handler is `src/testing/ledger/modules.ts`.
module tollgate::receipt_anchor;

use std::string::String;
use sui::clock::Clock;
use sui::event;

/// A string argument is longer than `MAX_FIELD` bytes.
const ETOO_LONG: u64 = 1;

/// Upper bound on each string argument, in bytes.
const MAX_FIELD: u64 = 1024;

/// Emitted by `anchor_receipt`. `gateway_receipt_hash` is the `sha256:` of the gateway's receipt
/// (empty when it signed none).
public struct ReceiptAnchored has copy, drop {
    receipt_id: String,
    wire_hash: String,
    workload_id: String,
    served_at_ms: u64,
    gateway_receipt_hash: String,
    anchored_at_ms: u64,
    anchored_by: address,
}

/// Emits `ReceiptAnchored` for the receipt, at the clock's time, by the sender. Each string is at
/// most 1024 bytes.
public fun anchor_receipt(
    receipt_id: String,
    wire_hash: String,
    workload_id: String,
    served_at_ms: u64,
    gateway_receipt_hash: String,
    clock: &Clock,
    ctx: &TxContext,
) {
    assert!(receipt_id.length() <= MAX_FIELD, ETOO_LONG);
    assert!(wire_hash.length() <= MAX_FIELD, ETOO_LONG);
    assert!(workload_id.length() <= MAX_FIELD, ETOO_LONG);
    assert!(gateway_receipt_hash.length() <= MAX_FIELD, ETOO_LONG);
    event::emit(ReceiptAnchored {
        receipt_id,
        wire_hash,
        workload_id,
        served_at_ms,
        gateway_receipt_hash,
        anchored_at_ms: clock.timestamp_ms(),
        anchored_by: ctx.sender(),
    });
}
