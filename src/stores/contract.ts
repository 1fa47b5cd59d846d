/**
 * The one contract every {@link PaymentStore} implementation must pass. Register it from an
 * integration test file with a harness that opens stores on fresh backing storage.
 *
 * Not part of the published package (it imports vitest).
 *
 * @module
 */
import { randomBytes } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, test } from 'vitest'
import type {
  PaymentRecord,
  PaymentSettlement,
  PaymentState,
  PaymentStore,
  ReleaseResult,
  StoreOptions,
  TransitionResult,
} from './types.js'

/** Fresh backing storage for one test. */
export type StoreHarness = {
  /** Opens a store on this harness's storage; a second call simulates a restarted process. */
  open(options: StoreOptions): PaymentStore | Promise<PaymentStore>
  /** Deletes the storage (tables, keys, files). */
  cleanup(): Promise<void>
}

/**
 * Returns the URL in `variable`, or undefined. When it is missing and `CI_REQUIRE_SERVICES=1`,
 * registers a failing test so that CI cannot pass by skipping.
 */
export function serviceUrl(variable: 'REDIS_URL' | 'DATABASE_URL'): string | undefined {
  const url = process.env[variable]
  if ((url === undefined || url === '') && process.env.CI_REQUIRE_SERVICES === '1') {
    test(`${variable} is set (required because CI_REQUIRE_SERVICES=1)`, () => {
      throw new Error(`${variable} is not set, and CI_REQUIRE_SERVICES=1 forbids skipping.`)
    })
  }
  return url === '' ? undefined : url
}

/** A name no other test run uses: letters, digits and `_`. */
export function uniqueName(prefix: string): string {
  return `${prefix}_${process.pid}_${randomBytes(5).toString('hex')}`
}

/** A random digest. */
export function randomDigest(): string {
  return randomBytes(16).toString('hex')
}

const meta = { resource: 'https://api.example/v1/search', dialect: 'x402' } as const

function settlementFor(amount = 20_000n): PaymentSettlement {
  return {
    payer: `0x${'ab'.repeat(32)}`,
    amount,
    resource: meta.resource,
    dialect: 'x402',
    network: 'sui:mainnet',
    asset: '0xdba34672e30cb065b1f93e3ab55318768fd6fef66c15942c9f7cb846e2f900e7::usdc::USDC',
    settledAt: new Date(1_700_000_000_000),
  }
}

type Operation =
  | 'release'
  | 'markPending'
  | 'settled'
  | 'served'
  | 'rejected'
  | 'oweRefund'
  | 'recordRefundTransaction'
  | 'refunded'

const operations: readonly Operation[] = [
  'release',
  'markPending',
  'settled',
  'served',
  'rejected',
  'oweRefund',
  'recordRefundTransaction',
  'refunded',
]

/** The allowed transitions: from each state, the operations and the state they lead to. */
const legal: { readonly [S in PaymentState]: Partial<Record<Operation, PaymentState | 'gone'>> } = {
  claimed: { release: 'gone', markPending: 'pending', settled: 'settled', rejected: 'rejected' },
  pending: { settled: 'settled', rejected: 'rejected' },
  settled: { served: 'served', oweRefund: 'refund_due' },
  served: {},
  refund_due: { recordRefundTransaction: 'refund_due', refunded: 'refunded' },
  refunded: {},
  rejected: {},
}

const refundDigest = 'RefundDigest1111111111111111111111111111111'

function run(
  store: PaymentStore,
  op: Operation,
  digest: string,
): Promise<TransitionResult | ReleaseResult> {
  switch (op) {
    case 'release':
      return store.release(digest)
    case 'markPending':
      return store.markPending(digest)
    case 'settled':
      return store.settled(digest, settlementFor())
    case 'served':
      return store.served(digest)
    case 'rejected':
      return store.rejected(digest, 'insufficient_amount')
    case 'oweRefund':
      return store.oweRefund(digest, 'upstream answered 502')
    case 'recordRefundTransaction':
      return store.recordRefundTransaction(digest, { txBytes: 'AAEC', refundDigest })
    case 'refunded':
      return store.refunded(digest, refundDigest)
  }
}

/** Brings a fresh digest to `state` through legal transitions. */
async function reach(store: PaymentStore, state: PaymentState): Promise<string> {
  const digest = randomDigest()
  expect(await store.claim(digest, meta)).toEqual({ status: 'claimed' })
  const path: Record<PaymentState, Operation[]> = {
    claimed: [],
    pending: ['markPending'],
    settled: ['settled'],
    served: ['settled', 'served'],
    refund_due: ['settled', 'oweRefund'],
    refunded: ['settled', 'oweRefund', 'refunded'],
    rejected: ['rejected'],
  }
  for (const op of path[state]) expect((await run(store, op, digest)).status).not.toBe('conflict')
  expect((await store.get(digest))?.state).toBe(state)
  return digest
}

/** The record of an applied transition (fails the test on a conflict). */
async function applied(promise: Promise<TransitionResult>): Promise<PaymentRecord> {
  const result = await promise
  if (result.status !== 'applied') {
    throw new Error(`expected the transition to apply, got a conflict in '${result.state}'`)
  }
  return result.record
}

/** Asserts a conflict result (not an exception) naming the record's current state. */
async function expectConflict(
  promise: Promise<TransitionResult | ReleaseResult>,
  state: PaymentState | undefined,
  label = 'the operation',
  reason: 'state' | 'refund_transaction' | 'lease' = 'state',
) {
  const result = await promise.then(
    (value) => value,
    (error: unknown) => ({ status: 'threw', error: String(error) }),
  )
  expect(result, label).toEqual({ status: 'conflict', state, reason })
}

/**
 * Registers the payment store contract tests for one implementation.
 *
 * @param name - the implementation's name, shown in test titles.
 * @param createHarness - makes fresh backing storage for each test.
 */
export function describePaymentStoreContract(
  name: string,
  createHarness: () => StoreHarness | Promise<StoreHarness>,
): void {
  describe(`PaymentStore contract: ${name}`, () => {
    let harness: StoreHarness
    let opened: PaymentStore[] = []
    let time = 1_700_000_000_000
    const claimLeaseMs = 1_000
    const serveLeaseMs = 5_000

    async function open(options: StoreOptions = {}): Promise<PaymentStore> {
      const store = await harness.open({ now: () => time, claimLeaseMs, serveLeaseMs, ...options })
      opened.push(store)
      return store
    }

    beforeEach(async () => {
      time = 1_700_000_000_000
      harness = await createHarness()
    })

    afterEach(async () => {
      for (const store of opened) await store.close()
      opened = []
      await harness.cleanup()
    })

    test('a first claim wins, a second is taken, and get shows the claim', async () => {
      const store = await open()
      const digest = randomDigest()
      expect(await store.get(digest)).toBeUndefined()
      expect(await store.claim(digest, meta)).toEqual({ status: 'claimed' })
      const second = await store.claim(digest, { resource: 'https://other/', dialect: 'mpp' })
      expect(second.status).toBe('taken')
      const record = await store.get(digest)
      expect(record).toMatchObject({
        digest,
        state: 'claimed',
        resource: meta.resource,
        dialect: 'x402',
        claimedAt: new Date(time),
        updatedAt: new Date(time),
      })
      expect(record?.settlement).toBeUndefined()
      if (second.status === 'taken') expect(second.record).toEqual(record)
    })

    test('claim → settled → served keeps the settlement exactly (bigint above 2^53)', async () => {
      const store = await open()
      const digest = randomDigest()
      await store.claim(digest, meta)
      const amount = 12_345_678_901_234_567_890n
      time += 10
      const settled = await applied(store.settled(digest, settlementFor(amount)))
      expect(settled.state).toBe('settled')
      expect(settled.settlement).toEqual(settlementFor(amount))
      time += 10
      const served = await applied(store.served(digest))
      expect(served).toMatchObject({ state: 'served', servedAt: new Date(time) })
      const record = await store.get(digest)
      expect(record?.settlement?.amount).toBe(amount)
      expect(typeof record?.settlement?.amount).toBe('bigint')
      const again = await store.claim(digest, meta)
      expect(again.status).toBe('taken')
      if (again.status === 'taken') expect(again.record.state).toBe('served')
    })

    test('release forgets an abandoned claim so the payment can be tried again', async () => {
      const store = await open()
      const digest = randomDigest()
      await store.claim(digest, meta)
      expect(await store.release(digest)).toEqual({ status: 'released' })
      expect(await store.get(digest)).toBeUndefined()
      expect(await store.claim(digest, meta)).toEqual({ status: 'claimed' })
    })

    test('a pending payment is listed, then resolved by settled or rejected', async () => {
      const store = await open()
      const [a, b, c] = [randomDigest(), randomDigest(), randomDigest()]
      for (const digest of [a, b, c]) {
        await store.claim(digest, meta)
        time += 1
        await store.markPending(digest)
      }
      expect((await store.listPending()).map((r) => r.digest)).toEqual([a, b, c])
      expect((await store.listPending({ limit: 2 })).map((r) => r.digest)).toEqual([a, b])
      const taken = await store.claim(a, meta)
      expect(taken.status === 'taken' && taken.record.state).toBe('pending')
      await store.settled(a, settlementFor())
      await store.rejected(b, 'transaction_failed')
      expect((await store.listPending()).map((r) => r.digest)).toEqual([c])
      expect((await store.get(b))?.rejection).toEqual({ code: 'transaction_failed' })
    })

    test('a refund is owed, its transaction recorded before submission, then refunded', async () => {
      const store = await open()
      const digest = randomDigest()
      await store.claim(digest, meta)
      await store.settled(digest, settlementFor(30_000n))
      time += 5
      const owed = await applied(store.oweRefund(digest, 'handler threw'))
      expect(owed.refund).toEqual({ reason: 'handler threw', owedAt: new Date(time) })
      expect((await store.listRefundsDue()).map((r) => r.digest)).toEqual([digest])
      const recorded = await applied(
        store.recordRefundTransaction(digest, {
          txBytes: 'AAECAwQ=',
          signature: 'c2ln',
          refundDigest,
        }),
      )
      expect(recorded.state).toBe('refund_due')
      expect(recorded.refund?.transaction).toEqual({
        txBytes: 'AAECAwQ=',
        signature: 'c2ln',
        refundDigest,
      })
      // The same transaction again (a retry after a crash) is accepted; a different one is not.
      await store.recordRefundTransaction(digest, { txBytes: 'AAECAwQ=', refundDigest })
      const other = 'OtherRefund222222222222222222222222222222222'
      const before = await store.get(digest)
      await expectConflict(
        store.recordRefundTransaction(digest, { txBytes: 'BBBB', refundDigest: other }),
        'refund_due',
        'another refund transaction',
        'refund_transaction',
      )
      await expectConflict(
        store.refunded(digest, other),
        'refund_due',
        'refunded by another transaction',
        'refund_transaction',
      )
      expect(await store.get(digest)).toEqual(before)
      time += 5
      const refunded = await applied(store.refunded(digest, refundDigest))
      expect(refunded.state).toBe('refunded')
      expect(refunded.refund).toMatchObject({ refundDigest, refundedAt: new Date(time) })
      expect(refunded.settlement?.amount).toBe(30_000n)
      expect(await store.listRefundsDue()).toEqual([])
    })

    test('a refund transaction that never executed can be replaced by naming it', async () => {
      const store = await open()
      const digest = await reach(store, 'refund_due')
      await store.recordRefundTransaction(digest, { txBytes: 'AAAA', refundDigest })
      const next = 'NextRefund3333333333333333333333333333333333'
      const record = await applied(
        store.recordRefundTransaction(digest, {
          txBytes: 'BBBB',
          refundDigest: next,
          replaces: refundDigest,
        }),
      )
      expect(record.refund?.transaction).toEqual({ txBytes: 'BBBB', refundDigest: next })
      await expectConflict(
        store.refunded(digest, refundDigest),
        'refund_due',
        'the replaced refund',
        'refund_transaction',
      )
      expect((await applied(store.refunded(digest, next))).state).toBe('refunded')
    })

    const states: PaymentState[] = [
      'claimed',
      'pending',
      'settled',
      'served',
      'refund_due',
      'refunded',
      'rejected',
    ]
    for (const state of states) {
      const allowed = Object.keys(legal[state]).join(', ') || 'nothing'
      test(`from '${state}': ${allowed} succeed; every other transition is a conflict`, async () => {
        const store = await open()
        for (const op of operations) {
          const digest = await reach(store, state)
          const before = await store.get(digest)
          const to = legal[state][op]
          if (to === undefined) {
            time += 1
            await expectConflict(run(store, op, digest), state, op)
            expect(await store.get(digest), `${op} must change nothing`).toEqual(before)
          } else {
            time += 1
            const result = await run(store, op, digest)
            expect(result.status, op).toBe(to === 'gone' ? 'released' : 'applied')
            if (result.status === 'applied') expect(result.record).toEqual(await store.get(digest))
            const after = await store.get(digest)
            if (to === 'gone') expect(after).toBeUndefined()
            else expect(after?.state, op).toBe(to)
          }
        }
      })
    }

    test('every transition of an unknown digest is a conflict with no state', async () => {
      const store = await open()
      for (const op of operations) {
        await expectConflict(run(store, op, randomDigest()), undefined, op)
      }
    })

    test('bad input is refused with store_error before touching the storage', async () => {
      const store = await open()
      await expect(store.claim('not a digest!', meta)).rejects.toMatchObject({
        code: 'store_error',
      })
      const digest = await reach(store, 'claimed')
      const negative = { ...settlementFor(), amount: -1n }
      await expect(store.settled(digest, negative)).rejects.toMatchObject({ code: 'store_error' })
      await expect(store.rejected(digest, 'no_such_code' as 'replay')).rejects.toMatchObject({
        code: 'store_error',
        status: 500,
      })
      await expect(store.served('not a digest!')).rejects.toMatchObject({ code: 'store_error' })
      await expect(store.release('')).rejects.toMatchObject({ code: 'store_error' })
      await expect(
        store.recordRefundTransaction(digest, { txBytes: '', refundDigest }),
      ).rejects.toMatchObject({ code: 'store_error' })
      expect((await store.get(digest))?.state).toBe('claimed')
    })

    test('200 concurrent claims of one digest: exactly one is claimed', async () => {
      const store = await open()
      const digest = randomDigest()
      const results = await Promise.all(
        Array.from({ length: 200 }, () => store.claim(digest, meta)),
      )
      expect(results.filter((r) => r.status === 'claimed')).toHaveLength(1)
      expect(results.filter((r) => r.status === 'taken')).toHaveLength(199)
    })

    test('settled but never served: re-presented after the serve lease, served exactly once', async () => {
      const store = await open()
      const digest = randomDigest()
      await store.claim(digest, meta)
      await store.settled(digest, settlementFor())
      // While the first server still holds the serve lease, a re-presentation is a replay.
      time += serveLeaseMs - 1
      expect((await store.claim(digest, meta)).status).toBe('taken')
      // The first server died: after the lease, one of many concurrent presenters gets it — but
      // never for another resource (and such a presentation does not take the lease).
      time += 2
      const elsewhere = await store.claim(digest, {
        resource: 'https://api.example/other',
        dialect: 'x402',
      })
      expect(elsewhere.status).toBe('taken')
      const results = await Promise.all(Array.from({ length: 50 }, () => store.claim(digest, meta)))
      const winners = results.filter((r) => r.status === 'settled_unserved')
      expect(winners).toHaveLength(1)
      expect(results.filter((r) => r.status === 'taken')).toHaveLength(49)
      if (winners[0]?.status === 'settled_unserved') {
        expect(winners[0].record.settlement).toEqual(settlementFor())
      }
      await store.served(digest)
      time += serveLeaseMs * 10
      expect((await store.claim(digest, meta)).status).toBe('taken')
    })

    test('a serve lease renewed while the call runs is never handed to a re-presenter', async () => {
      const store = await open()
      expect(store.serveLeaseMs).toBe(serveLeaseMs)
      const digest = randomDigest()
      await store.claim(digest, meta)
      const settled = await applied(store.settled(digest, settlementFor()))
      expect(settled.leaseUntil).toEqual(new Date(time + serveLeaseMs))
      let lease = settled.leaseUntil as Date
      // A call that runs three leases long, renewing every half lease: never taken.
      for (let i = 0; i < 6; i++) {
        time += serveLeaseMs / 2
        const renewal = await store.renewServeLease(digest, lease)
        expect(renewal).toEqual({ status: 'renewed', leaseUntil: new Date(time + serveLeaseMs) })
        if (renewal.status === 'renewed') lease = renewal.leaseUntil
        time += 1
        expect((await store.claim(digest, meta)).status).toBe('taken')
      }
      expect((await store.get(digest))?.leaseUntil).toEqual(lease)
      // A lease that ran out but was not taken over is still the holder's to renew.
      time += serveLeaseMs * 2
      const late = await store.renewServeLease(digest, lease)
      expect(late.status).toBe('renewed')
      if (late.status === 'renewed') lease = late.leaseUntil
      expect((await store.claim(digest, meta)).status).toBe('taken')
      // Served: there is nothing left to renew, and the payment is never handed out again.
      await store.served(digest)
      const after = await store.renewServeLease(digest, lease)
      expect(after.status).toBe('lost')
      if (after.status === 'lost') expect(after.record?.state).toBe('served')
      time += serveLeaseMs * 10
      expect((await store.claim(digest, meta)).status).toBe('taken')
    })

    test('a holder that stopped renewing (crashed) loses the payment to one re-presenter', async () => {
      const store = await open()
      const digest = randomDigest()
      await store.claim(digest, meta)
      const first = (await applied(store.settled(digest, settlementFor()))).leaseUntil as Date
      time += serveLeaseMs + 1
      const results = await Promise.all(Array.from({ length: 20 }, () => store.claim(digest, meta)))
      const winners = results.filter((r) => r.status === 'settled_unserved')
      expect(winners).toHaveLength(1)
      const second = winners[0]?.record.leaseUntil as Date
      expect(second).toEqual(new Date(time + serveLeaseMs))
      // The old holder comes back: its renewal is refused and changes nothing.
      const stale = await store.renewServeLease(digest, first)
      expect(stale.status).toBe('lost')
      if (stale.status === 'lost') expect(stale.record?.leaseUntil).toEqual(second)
      // The new holder renews it as usual.
      time += 10
      expect(await store.renewServeLease(digest, second)).toEqual({
        status: 'renewed',
        leaseUntil: new Date(time + serveLeaseMs),
      })
      await expect(store.renewServeLease(digest, new Date(Number.NaN))).rejects.toMatchObject({
        code: 'store_error',
      })
      expect((await store.renewServeLease(randomDigest(), second)).status).toBe('lost')
    })

    test('settled payments whose serve lease lapsed are listed, earliest lease first', async () => {
      const store = await open()
      const early = await reach(store, 'settled')
      time += 100
      const late = await reach(store, 'settled')
      const renewed = await reach(store, 'settled')
      for (const state of ['claimed', 'pending', 'served', 'refund_due', 'rejected'] as const) {
        await reach(store, state)
      }
      expect(await store.listLapsed()).toEqual([])
      time += serveLeaseMs - 50
      const lease = (await store.get(renewed))?.leaseUntil as Date
      expect((await store.renewServeLease(renewed, lease)).status).toBe('renewed')
      expect((await store.listLapsed()).map((r) => r.digest)).toEqual([early])
      time += 50
      const lapsed = await store.listLapsed()
      expect(lapsed.map((r) => r.digest)).toEqual([early, late])
      expect(lapsed[0]?.settlement).toEqual(settlementFor())
      expect(lapsed[0]?.leaseUntil).toEqual(new Date(time - 100))
      expect((await store.listLapsed({ limit: 1 })).map((r) => r.digest)).toEqual([early])
      const endedBy = new Date(time - 1)
      expect((await store.listLapsed({ endedBy })).map((r) => r.digest)).toEqual([early])
      await expect(store.listLapsed({ limit: 0 })).rejects.toMatchObject({ code: 'store_error' })
      // A lapsed lease that is taken over by a re-presentation is no longer lapsed.
      expect((await store.claim(early, meta)).status).toBe('settled_unserved')
      expect((await store.listLapsed()).map((r) => r.digest)).toEqual([late])
    })

    test('a lapsed serve lease becomes a refund, unless renewed or re-presented first', async () => {
      const store = await open()
      const digest = await reach(store, 'settled')
      const lease = (await store.get(digest))?.leaseUntil as Date
      const reason = 'the serving process stopped before the answer'
      // Not lapsed yet: nothing changes.
      const early = await store.oweRefundLapsed(digest, lease, reason)
      expect(early).toEqual({ status: 'conflict', state: 'settled', reason: 'lease' })
      time += serveLeaseMs
      const owed = await applied(store.oweRefundLapsed(digest, lease, reason))
      expect(owed.state).toBe('refund_due')
      expect(owed.leaseUntil).toBeUndefined()
      expect(owed.refund?.reason).toBe(reason)
      expect((await store.listRefundsDue()).map((r) => r.digest)).toEqual([digest])
      expect(await store.listLapsed()).toEqual([])
      // Owed once: again is a conflict, and presenting the payment again is not served.
      await expectConflict(store.oweRefundLapsed(digest, lease, reason), 'refund_due')
      expect((await store.claim(digest, meta)).status).toBe('taken')

      // Renewed by its holder since it was listed: the holder keeps it.
      const running = await reach(store, 'settled')
      const listed = (await store.get(running))?.leaseUntil as Date
      time += serveLeaseMs
      expect((await store.renewServeLease(running, listed)).status).toBe('renewed')
      await expectConflict(
        store.oweRefundLapsed(running, listed, reason),
        'settled',
        'renewed',
        'lease',
      )

      // Re-presented after the lapse, before the sweep: served there, never refunded.
      const back = await reach(store, 'settled')
      const backLease = (await store.get(back))?.leaseUntil as Date
      time += serveLeaseMs
      expect((await store.claim(back, meta)).status).toBe('settled_unserved')
      await expectConflict(
        store.oweRefundLapsed(back, backLease, reason),
        'settled',
        'taken over',
        'lease',
      )
      await expectConflict(store.oweRefundLapsed(randomDigest(), backLease, reason), undefined)
      await expect(store.oweRefundLapsed(back, new Date(Number.NaN), reason)).rejects.toMatchObject(
        {
          code: 'store_error',
        },
      )
    })

    test('a sweep racing re-presentations of a lapsed payment: exactly one of them wins', async () => {
      const store = await open()
      for (let round = 0; round < 5; round++) {
        const digest = await reach(store, 'settled')
        const lease = (await store.get(digest))?.leaseUntil as Date
        time += serveLeaseMs + 1
        const [sweep, ...claims] = await Promise.all([
          store.oweRefundLapsed(digest, lease, 'lapsed'),
          ...Array.from({ length: 10 }, () => store.claim(digest, meta)),
        ])
        const served = claims.filter((c) => c.status === 'settled_unserved').length
        const refunded = sweep?.status === 'applied' ? 1 : 0
        expect(served + refunded, `round ${round}`).toBe(1)
        expect((await store.get(digest))?.state).toBe(refunded ? 'refund_due' : 'settled')
      }
    })

    test('a claim whose claimer died is taken over after the claim lease, by one claimer', async () => {
      const store = await open()
      const digest = randomDigest()
      await store.claim(digest, meta)
      time += claimLeaseMs - 1
      expect((await store.claim(digest, meta)).status).toBe('taken')
      time += 2
      const results = await Promise.all(Array.from({ length: 50 }, () => store.claim(digest, meta)))
      expect(results.filter((r) => r.status === 'claimed')).toHaveLength(1)
      expect((await store.get(digest))?.claimedAt).toEqual(new Date(time))
      // Both the dead claimer and the new one may try to settle: only the first succeeds.
      const settling = await Promise.all([
        store.settled(digest, settlementFor()),
        store.settled(digest, settlementFor()),
      ])
      expect(settling.map((r) => r.status).sort()).toEqual(['applied', 'conflict'])
      expect(settling.find((r) => r.status === 'conflict')).toEqual({
        status: 'conflict',
        state: 'settled',
        reason: 'state',
      })
    })

    test('claims whose claim lease lapsed are listed, earliest lease first', async () => {
      const store = await open()
      const early = await reach(store, 'claimed')
      time += 100
      const late = await reach(store, 'claimed')
      for (const state of ['pending', 'settled', 'served', 'rejected'] as const) {
        await reach(store, state)
      }
      expect(await store.listLapsedClaims()).toEqual([])
      time += claimLeaseMs - 100
      const first = await store.listLapsedClaims()
      expect(first.map((r) => r.digest)).toEqual([early])
      expect(first[0]?.state).toBe('claimed')
      expect(first[0]?.leaseUntil).toEqual(new Date(time))
      time += 100
      expect((await store.listLapsedClaims()).map((r) => r.digest)).toEqual([early, late])
      expect((await store.listLapsedClaims({ limit: 1 })).map((r) => r.digest)).toEqual([early])
      const endedBy = new Date(time - 1)
      expect((await store.listLapsedClaims({ endedBy })).map((r) => r.digest)).toEqual([early])
      await expect(store.listLapsedClaims({ limit: 0 })).rejects.toMatchObject({
        code: 'store_error',
      })
      await expect(store.listLapsedClaims({ endedBy: new Date(Number.NaN) })).rejects.toMatchObject(
        { code: 'store_error' },
      )
      // A lapsed claim taken over by a new presenter holds a new lease: no longer lapsed.
      expect((await store.claim(early, meta)).status).toBe('claimed')
      expect((await store.listLapsedClaims()).map((r) => r.digest)).toEqual([late])
      // Moved on from `claimed`: no longer listed.
      expect((await store.markPending(late)).status).toBe('applied')
      expect(await store.listLapsedClaims()).toEqual([])
      expect(await store.listLapsed()).toEqual([])
    })

    test('a lapsed claim is released only while it holds the lease it was listed with', async () => {
      const store = await open()
      const digest = await reach(store, 'claimed')
      time += claimLeaseMs
      const [listed] = await store.listLapsedClaims()
      const lease = listed?.leaseUntil as Date
      // Taken over by a new presenter since it was listed: the new claim is left alone.
      expect((await store.claim(digest, meta)).status).toBe('claimed')
      await expectConflict(store.release(digest, { lease }), 'claimed', 'taken over', 'lease')
      expect((await store.get(digest))?.state).toBe('claimed')
      time += claimLeaseMs
      const relisted = (await store.listLapsedClaims())[0]?.leaseUntil as Date
      expect(relisted.getTime()).toBeGreaterThan(lease.getTime())
      expect(await store.release(digest, { lease: relisted })).toEqual({ status: 'released' })
      expect(await store.get(digest)).toBeUndefined()
      expect(await store.listLapsedClaims()).toEqual([])
      // Released: the payment may be presented again.
      expect((await store.claim(digest, meta)).status).toBe('claimed')
      await expectConflict(store.release(randomDigest(), { lease }), undefined)
      await expect(store.release(digest, { lease: new Date(Number.NaN) })).rejects.toMatchObject({
        code: 'store_error',
      })
    })

    test('refund and pending records survive a restart on the same storage', async () => {
      const first = await open()
      const owed = await reach(first, 'refund_due')
      await first.recordRefundTransaction(owed, { txBytes: 'AAECAw==', refundDigest })
      const pending = await reach(first, 'pending')
      const settled = await reach(first, 'settled')
      await first.close()
      opened = opened.filter((s) => s !== first)

      const second = await open()
      const due = await second.listRefundsDue()
      expect(due.map((r) => r.digest)).toEqual([owed])
      expect(due[0]?.refund?.transaction).toEqual({ txBytes: 'AAECAw==', refundDigest })
      expect(due[0]?.settlement?.amount).toBe(20_000n)
      expect((await second.listPending()).map((r) => r.digest)).toEqual([pending])
      expect((await second.claim(settled, meta)).status).toBe('taken')
      time += serveLeaseMs
      expect((await second.claim(settled, meta)).status).toBe('settled_unserved')
      expect((await applied(second.refunded(owed, refundDigest))).state).toBe('refunded')
    })

    test('refunds due are listed oldest first, up to the limit', async () => {
      const store = await open()
      const digests: string[] = []
      for (let i = 0; i < 3; i++) {
        time += 100
        digests.push(await reach(store, 'refund_due'))
      }
      expect((await store.listRefundsDue()).map((r) => r.digest)).toEqual(digests)
      expect((await store.listRefundsDue({ limit: 2 })).map((r) => r.digest)).toEqual(
        digests.slice(0, 2),
      )
      await expect(store.listRefundsDue({ limit: 0 })).rejects.toMatchObject({
        code: 'store_error',
      })
    })

    test('counts give the number of records in each state', async () => {
      const store = await open()
      for (const state of ['claimed', 'settled', 'settled', 'served', 'refund_due'] as const) {
        await reach(store, state)
      }
      expect(await store.counts()).toEqual({
        claimed: 1,
        pending: 0,
        settled: 2,
        served: 1,
        refund_due: 1,
        refunded: 0,
        rejected: 0,
      })
    })

    test('prune deletes only finished records older than the cutoff', async () => {
      const store = await open()
      const old: Record<string, string> = {}
      for (const state of states) old[state] = await reach(store, state)
      time += 10_000
      const recent = await reach(store, 'served')
      expect(await store.prune()).toBe(0) // no retention configured: keep forever
      const deleted = await store.prune({ olderThan: new Date(time - 5_000) })
      expect(deleted).toBe(3)
      for (const state of states) {
        const record = await store.get(old[state]!)
        if (state === 'served' || state === 'refunded' || state === 'rejected') {
          expect(record, state).toBeUndefined()
        } else {
          expect(record?.state, state).toBe(state)
        }
      }
      expect((await store.get(recent))?.state).toBe('served')
      expect((await store.counts()).served).toBe(1)
    })

    test('with retentionMs, prune() without arguments uses it', async () => {
      const store = await open({ retentionMs: 60_000 })
      const a = await reach(store, 'rejected')
      time += 30_000
      const b = await reach(store, 'refunded')
      time += 40_000
      expect(await store.prune()).toBe(1)
      expect(await store.get(a)).toBeUndefined()
      expect((await store.get(b))?.state).toBe('refunded')
    })
  })
}
