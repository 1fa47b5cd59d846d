// Copyright (c) the Tollgate authors
// SPDX-License-Identifier: Apache-2.0

/// The checks of `agent_registry`, following `src/testing/ledger/modules.int.test.ts`.
#[test_only]
module tollgate::agent_registry_tests;

use std::string;
use sui::clock;
use sui::event;
use sui::test_scenario as ts;
use tollgate::agent_registry::{Self, AgentRecord, AgentRegistered};

const AGENT: address = @0xA6;
const T0: u64 = 1_700_000_000_000;

fun long(): vector<u8> {
    let mut bytes = vector[];
    1025u64.do!(|_| bytes.push_back(120u8));
    bytes
}

#[test]
fun register_gives_the_sender_a_record_and_emits_agent_registered() {
    let mut scenario = ts::begin(AGENT);
    let mut clock = clock::create_for_testing(scenario.ctx());
    clock.set_for_testing(T0);
    agent_registry::register(
        string::utf8(b"scout"),
        string::utf8(b"https://agent.example/card.json"),
        &clock,
        scenario.ctx(),
    );
    assert!(event::events_by_type<AgentRegistered>().length() == 1);
    scenario.next_tx(AGENT);
    let record = scenario.take_from_sender<AgentRecord>();
    let (agent, name, metadata_uri, registered_at_ms) = agent_registry::record_fields(&record);
    assert!(agent == AGENT);
    assert!(name == string::utf8(b"scout"));
    assert!(metadata_uri == string::utf8(b"https://agent.example/card.json"));
    assert!(registered_at_ms == T0);
    scenario.return_to_sender(record);
    clock.destroy_for_testing();
    scenario.end();
}

#[test, expected_failure(abort_code = agent_registry::ETOO_LONG)]
fun register_with_a_name_over_1024_bytes_aborts() {
    let mut scenario = ts::begin(AGENT);
    let clock = clock::create_for_testing(scenario.ctx());
    agent_registry::register(string::utf8(long()), string::utf8(b""), &clock, scenario.ctx());
    clock.destroy_for_testing();
    scenario.end();
}

#[test, expected_failure(abort_code = agent_registry::ETOO_LONG)]
fun register_with_a_metadata_uri_over_1024_bytes_aborts() {
    let mut scenario = ts::begin(AGENT);
    let clock = clock::create_for_testing(scenario.ctx());
    agent_registry::register(string::utf8(b"scout"), string::utf8(long()), &clock, scenario.ctx());
    clock.destroy_for_testing();
    scenario.end();
}
