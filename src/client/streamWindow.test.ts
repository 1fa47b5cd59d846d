import { describe, expect, it } from 'vitest'
import { createStreamWindow, type RaiseVoucher } from './streamWindow.js'

/** A raise the test answers by hand: each call waits until `land()` signs what it wished. */
function handRaise() {
  const calls: {
    need: bigint
    wish: bigint
    land: (signed?: bigint) => void
    refuse: (e: unknown) => void
  }[] = []
  const raise: RaiseVoucher = (need, wish) =>
    new Promise((resolve, reject) => {
      calls.push({ need, wish, land: (signed = wish) => resolve(signed), refuse: reject })
    })
  return { calls, raise }
}

/** Lets the window's promises run. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 0))

describe('the signing-ahead window of a channel', () => {
  it('keeps one raise in flight for all its answers and folds later needs into the next', async () => {
    const { calls, raise } = handRaise()
    const window = createStreamWindow({ ahead: 8n, consumed: 0n })
    // Three answers at 10 a unit, their calls' vouchers up to 30: one unit each paid. The window
    // is 8 units per answer streaming: 24, raised when fewer than 6 are left.
    const answers = [10n, 20n, 30n].map((amount) => window.open({ amount, price: 10n, raise }))
    for (const answer of answers) answer.unit()
    // At the first unit fewer than 6 were left: one raise, to 24 units beyond the 1 received,
    // with nothing owed yet.
    expect(calls).toEqual([expect.objectContaining({ need: 0n, wish: 250n })])
    // More units and a seller's ask while it is in flight: no second raise yet.
    for (const answer of answers) answer.unit()
    const asked = answers[0]?.needed(280n)
    const coveredByFirst = answers[1]?.needed(200n)
    await settle()
    expect(calls).toHaveLength(1)
    calls[0]?.land()
    expect(await coveredByFirst).toBe(250n)
    await settle()
    // The next raise takes both: the ask (280) and the window's 24 units beyond the 6 received.
    expect(calls).toHaveLength(2)
    expect(calls[1]).toMatchObject({ need: 280n, wish: 300n })
    calls[1]?.land()
    expect(await asked).toBe(300n)
    await settle()
    expect(calls).toHaveLength(2)
  })

  it('counts the units of every answer on the channel in one window', () => {
    const { calls, raise } = handRaise()
    const window = createStreamWindow({ ahead: 8n, consumed: 0n })
    const a = window.open({ amount: 60n, price: 10n, raise })
    const b = window.open({ amount: 70n, price: 10n, raise })
    // 70 signed, a window of 16 units (two answers): 3 units on `a` leave 4, a quarter of it;
    // 1 more on `b` leaves 3.
    for (let i = 0; i < 3; i++) a.unit()
    expect(calls).toHaveLength(0)
    b.unit()
    expect(calls).toEqual([expect.objectContaining({ need: 0n, wish: 200n })])
  })

  it('stops keeping ahead when the deposit has no room, until a seller asks for what is owed', async () => {
    const { calls, raise } = handRaise()
    const window = createStreamWindow({ ahead: 8n, consumed: 0n })
    const answer = window.open({ amount: 10n, price: 10n, raise })
    answer.unit()
    expect(calls).toEqual([expect.objectContaining({ need: 0n, wish: 90n })])
    // The deposit holds 50: the raise signs that. Three units on, the window is low again; the
    // next raise finds no room and signs nothing.
    calls[0]?.land(50n)
    await settle()
    for (let i = 0; i < 3; i++) answer.unit()
    expect(calls[1]).toMatchObject({ need: 0n, wish: 120n })
    calls[1]?.land(0n)
    await settle()
    answer.unit()
    await settle()
    expect(calls).toHaveLength(2)
    // The seller asks for 60: owed, so raised (the raise tops up), and the window resumes.
    const asked = answer.needed(60n)
    expect(calls[2]).toMatchObject({ need: 60n, wish: 130n })
    calls[2]?.land()
    expect(await asked).toBe(130n)
    answer.unit()
    expect(calls).toHaveLength(3)
  })

  it('tells a failed raise once, refuses the needs it was for, and raises again on the next unit', async () => {
    const { calls, raise } = handRaise()
    const errors: unknown[] = []
    const window = createStreamWindow({ ahead: 4n, consumed: 0n, onError: (e) => errors.push(e) })
    const answer = window.open({ amount: 10n, price: 10n, raise })
    answer.unit()
    const asked = answer.needed(20n)
    expect(calls).toHaveLength(1)
    calls[0]?.refuse(new TypeError('offline'))
    await expect(asked).rejects.toThrow('offline')
    expect(errors).toHaveLength(1)
    answer.unit()
    expect(calls).toHaveLength(2)
  })

  it('lowers what it counts as consumed to a receipt when no other answer is streaming', () => {
    const { calls, raise } = handRaise()
    // After a restart everything signed (1 000) counts as spent; the receipt says 200.
    const window = createStreamWindow({ ahead: 8n, consumed: 1_000n })
    const first = window.open({ amount: 1_010n, price: 10n, raise })
    first.spent(200n)
    first.close()
    const second = window.open({ amount: 1_020n, price: 10n, raise })
    for (let i = 0; i < 60; i++) second.unit()
    // 800 consumed: still above the 2 units' low water of the 1 020 signed.
    expect(calls).toHaveLength(0)
  })

  it('counts a call served on the channel: what it consumed, and what its voucher signed', () => {
    const { calls, raise } = handRaise()
    const window = createStreamWindow({ ahead: 8n, consumed: 0n })
    const answer = window.open({ amount: 10n, price: 10n, raise })
    // A call at 1 000 served meanwhile, its voucher signed 2 000 (above the window's raises).
    window.served({ amount: 2_000n, price: 1_000n })
    answer.unit()
    // 1 010 consumed, 2 000 signed: the window has room.
    expect(calls).toHaveLength(0)
    for (let i = 0; i < 98; i++) answer.unit()
    expect(calls).toEqual([expect.objectContaining({ need: 0n, wish: 2_070n })])
  })
})
