import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { EscrowAbort } from '../testing/ledger/escrow.js'
import { escrowAborts, explainEscrowAbort } from './aborts.js'

describe('escrow aborts by name', () => {
  it('names an escrow abort in the ledger message', () => {
    expect(
      explainEscrowAbort(
        "MoveAbort in 1st command, abort code: 2, in '0xab::escrow::deliver' (instruction 12)",
      ),
    ).toBe(
      "ENOT_SELLER (abort code 2: deliver by anyone but the seller), in '0xab::escrow::deliver' (instruction 12)",
    )
    expect(explainEscrowAbort("MoveAbort, abort code: 5, in '0xab::escrow::refund'")).toBe(
      "EDEADLINE_NOT_REACHED (abort code 5: the buyer's refund before the delivery deadline), in '0xab::escrow::refund'",
    )
  })

  it('leaves other messages as they are', () => {
    for (const message of [
      "MoveAbort in 1st command, abort code: 2, in '0xab::agent_registry::register'",
      "MoveAbort in 1st command, abort code: 99, in '0xab::escrow::deliver'",
      'InsufficientCoinBalance in command 0',
    ]) {
      expect(explainEscrowAbort(message)).toBe(message)
    }
  })

  it('agrees with the ledger module and with docs/escrow.md', () => {
    const doc = readFileSync(new URL('../../docs/escrow.md', import.meta.url), 'utf8')
    const rows = [...doc.matchAll(/^\| (\d+) \| `(E[A-Z_]+)` \|/gm)].map((m) => [
      Number(m[1]),
      m[2],
    ])
    expect(rows).toEqual(Object.entries(escrowAborts).map(([code, a]) => [Number(code), a.name]))
    expect(Object.values(EscrowAbort).map(Number)).toEqual(Object.keys(escrowAborts).map(Number))
  })
})
