// Copyright (c) the Tollgate authors
// SPDX-License-Identifier: Apache-2.0

/// Agent identity: a record owned by the agent, naming it and pointing at its metadata (an agent
/// card), with the time it was registered. The emulator's handler is
/// `src/testing/ledger/modules.ts`; the declared signatures are in
/// `src/testing/ledger/signatures.ts` (checked by `scripts/moveParity.test.ts`).
module tollgate::agent_registry;

use std::string::String;
use sui::clock::Clock;
use sui::event;

/// A string argument is longer than `MAX_FIELD` bytes.
const ETOO_LONG: u64 = 1;

/// Upper bound on each string argument, in bytes.
const MAX_FIELD: u64 = 1024;

/// An agent's identity record, owned by the agent.
public struct AgentRecord has key {
    id: UID,
    agent: address,
    name: String,
    metadata_uri: String,
    registered_at_ms: u64,
}

/// Emitted by `register`.
public struct AgentRegistered has copy, drop {
    agent: address,
    name: String,
    metadata_uri: String,
    registered_at_ms: u64,
}

#[allow(lint(self_transfer))]
/// Registers the sender: creates an `AgentRecord` owned by the sender and emits `AgentRegistered`.
/// Each string is at most 1024 bytes.
public fun register(name: String, metadata_uri: String, clock: &Clock, ctx: &mut TxContext) {
    assert!(name.length() <= MAX_FIELD, ETOO_LONG);
    assert!(metadata_uri.length() <= MAX_FIELD, ETOO_LONG);
    let agent = ctx.sender();
    let registered_at_ms = clock.timestamp_ms();
    let record = AgentRecord { id: object::new(ctx), agent, name, metadata_uri, registered_at_ms };
    transfer::transfer(record, agent);
    event::emit(AgentRegistered { agent, name, metadata_uri, registered_at_ms });
}

#[test_only]
/// The record's agent, name, metadata URI and registration time.
public fun record_fields(record: &AgentRecord): (address, String, String, u64) {
    (record.agent, record.name, record.metadata_uri, record.registered_at_ms)
}
