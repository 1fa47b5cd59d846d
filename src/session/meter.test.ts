import { describe, expect, it, vi } from 'vitest'
import { type ChannelStore, createMemoryChannelStore } from './channelStore.js'
import { type MeteredEvent, type MeterStop, meterBatches, meterStream } from './meter.js'

const channelId = `0x${'c'.repeat(64)}`

async function channel(voucher: bigint, deposit = 1_000n): Promise<ChannelStore> {
  const store = createMemoryChannelStore()
  await store.track({
    channelId,
    payer: `0x${'a'.repeat(64)}`,
    payee: `0x${'b'.repeat(64)}`,
    coinType: '0x2::sui::SUI',
    signer: 'cd'.repeat(32),
    deposit,
    settled: 0n,
  })
  if (voucher > 0n) await store.acceptVoucher(channelId, voucher, 'v')
  return store
}

async function* tokens(list: string[], pulled: string[] = []) {
  for (const token of list) {
    pulled.push(token)
    yield token
  }
}

async function collect<T>(stream: AsyncIterable<MeteredEvent<T>>) {
  const out: MeteredEvent<T>[] = []
  for await (const event of stream) out.push(event)
  return out
}

describe('meterStream', () => {
  it('charges each unit before handing it on, passes free events, and ends with the receipt', async () => {
    const store = await channel(100n)
    const events = await collect(
      meterStream(tokens(['a', 'b', 'c', '[DONE]']), {
        store,
        channelId,
        price: 10n,
        isUnit: (t) => t !== '[DONE]',
      }),
    )
    expect(events.map((e) => e.type)).toEqual([
      'message',
      'message',
      'message',
      'message',
      'payment-receipt',
    ])
    expect(events.at(-1)?.data).toEqual({
      channelId,
      acceptedCumulative: '100',
      spent: '30',
      units: '3',
    })
    expect(await store.get(channelId)).toMatchObject({ spent: 30n, held: 0n })
  })

  it('asks once for a voucher when the headroom runs out, and goes on when one arrives', async () => {
    const store = await channel(20n)
    let polls = 0
    const stream = meterStream(tokens(['a', 'b', 'c', 'd']), {
      store,
      channelId,
      price: 10n,
      pollMs: 1,
      sleep: async () => {
        polls++
        // The buyer's higher voucher arrives (at any process) after a few polls.
        if (polls === 3) await store.acceptVoucher(channelId, 40n, 'w')
      },
    })
    const events = await collect(stream)
    expect(events.map((e) => e.type)).toEqual([
      'message',
      'message',
      'payment-need-voucher',
      'message',
      'message',
      'payment-receipt',
    ])
    expect(events[2]?.data).toEqual({
      channelId,
      requiredCumulative: '30',
      acceptedCumulative: '20',
      deposit: '1000',
    })
    expect(await store.get(channelId)).toMatchObject({ spent: 40n, units: 4n, held: 0n })
  })

  it('does not ask the store again at once for a spend it just refused, when it turns to wait for a voucher', async () => {
    const inner = await channel(10n)
    let spends = 0
    const store: ChannelStore = {
      ...inner,
      spend: (...args) => {
        spends++
        return inner.spend(...args)
      },
    }
    const stops: MeterStop[] = []
    await collect(
      meterStream(tokens(['a', 'b']), { store, channelId, price: 10n, waitMs: 0 }, (stop) =>
        stops.push(stop),
      ),
    )
    // One spend for `a`, one refused for `b`: the wait (none here) starts from that refusal.
    expect(stops).toEqual([{ reason: 'no_voucher', required: 20n }])
    expect(spends).toBe(2)
  })

  it('stops after a bounded wait without a voucher: the unpaid event never leaves, spent never grows for it', async () => {
    const store = await channel(10n)
    let clock = 0
    const pulled: string[] = []
    const stops: MeterStop[] = []
    const events = await collect(
      meterStream(
        tokens(['a', 'b', 'c'], pulled),
        {
          store,
          channelId,
          price: 10n,
          waitMs: 1_000,
          now: () => clock,
          sleep: async (ms) => {
            clock += ms
          },
        },
        (stop) => stops.push(stop),
      ),
    )
    expect(events.filter((e) => e.type === 'message').map((e) => e.data)).toEqual(['a'])
    expect(events.at(-1)).toMatchObject({ type: 'payment-receipt', data: { spent: '10' } })
    expect(stops).toEqual([{ reason: 'no_voucher', required: 20n }])
    // The source was asked for one event beyond what was paid, and no more.
    expect(pulled).toEqual(['a', 'b'])
    expect(await store.get(channelId)).toMatchObject({ spent: 10n, held: 0n })
  })

  it('stops when the channel is no longer open, and when the buyer leaves', async () => {
    const store = await channel(10n)
    await store.observe(channelId, { state: 'closing' })
    const stops: MeterStop[] = []
    await collect(
      meterStream(tokens(['a']), { store, channelId, price: 1n }, (stop) => stops.push(stop)),
    )
    const open = await channel(10n)
    const controller = new AbortController()
    controller.abort()
    await collect(
      meterStream(
        tokens(['a']),
        { store: open, channelId, price: 100n, signal: controller.signal },
        (stop) => stops.push(stop),
      ),
    )
    expect(stops).toEqual([{ reason: 'not_open' }, { reason: 'aborted' }])
    expect(await open.get(channelId)).toMatchObject({ spent: 0n, held: 0n })
  })

  it('releases nothing it did not hold when the source fails, and tells the source when the reader leaves', async () => {
    const store = await channel(100n)
    async function* failing() {
      yield 'a'
      throw new Error('upstream failed')
    }
    await expect(collect(meterStream(failing(), { store, channelId, price: 10n }))).rejects.toThrow(
      'upstream failed',
    )
    expect(await store.get(channelId)).toMatchObject({ spent: 10n, held: 0n })
    let returned = false
    const source = {
      [Symbol.asyncIterator]() {
        return {
          next: async () => ({ done: false, value: 'x' }),
          return: async () => {
            returned = true
            return { done: true as const, value: undefined }
          },
        }
      },
    }
    for await (const event of meterStream(source, { store, channelId, price: 1n })) {
      if (event.type === 'message') break
    }
    expect(returned).toBe(true)
  })

  it('ends with the channel as its last unit left it, read from the store only when it spent none', async () => {
    const store = await channel(100n)
    let reads = 0
    const get = store.get.bind(store)
    const counted: ChannelStore = {
      ...store,
      get: (id) => {
        reads++
        return get(id)
      },
    }
    const paid = await collect(
      meterStream(tokens(['a', 'b']), { store: counted, channelId, price: 10n }),
    )
    expect(paid.at(-1)?.data).toMatchObject({ spent: '20', units: '2' })
    expect(reads).toBe(0)
    const free = await collect(
      meterStream(tokens(['[DONE]']), {
        store: counted,
        channelId,
        price: 10n,
        isUnit: (t) => t !== '[DONE]',
      }),
    )
    expect(free.at(-1)?.data).toMatchObject({ acceptedCumulative: '100', spent: '20' })
    expect(reads).toBe(1)
  })

  it("spends the first unit only after the call's voucher step, and fails unspent if that step fails", async () => {
    const store = await channel(100n)
    let done: () => void = () => {}
    const voucher = new Promise<void>((resolve) => {
      done = resolve
    })
    const pulled: string[] = []
    const stream = meterStream(tokens(['a', 'b'], pulled), {
      store,
      channelId,
      price: 10n,
      after: voucher,
    })
    const first = stream.next()
    await new Promise((resolve) => setTimeout(resolve, 20))
    // The source started; its first unit waits, unspent and unsent.
    expect(pulled).toEqual(['a'])
    expect(await store.get(channelId)).toMatchObject({ spent: 0n })
    done()
    expect(await first).toMatchObject({ value: { type: 'message', data: 'a' } })
    expect(await store.get(channelId)).toMatchObject({ spent: 10n })

    const broken = meterStream(tokens(['a']), {
      store,
      channelId,
      price: 10n,
      after: Promise.reject(new Error('the store is down')),
    })
    await expect(collect(broken)).rejects.toThrow('the store is down')
    expect(await store.get(channelId)).toMatchObject({ spent: 10n })
  })

  it("sends nothing, not even a free event, before the call's voucher step is done", async () => {
    const store = await channel(100n)
    let done: () => void = () => {}
    const voucher = new Promise<void>((resolve) => {
      done = resolve
    })
    const pulled: string[] = []
    const stream = meterStream(tokens(['role', 'a'], pulled), {
      store,
      channelId,
      price: 10n,
      isUnit: (t) => t !== 'role',
      after: voucher,
    })
    let sent = false
    const first = stream.next().then((result) => {
      sent = true
      return result
    })
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(pulled).toEqual(['role'])
    expect(sent).toBe(false)
    done()
    expect(await first).toMatchObject({ value: { type: 'message', data: 'role' } })
    const rest = await collect(stream)
    expect(rest.map((e) => e.data)).toMatchObject(['a', { spent: '10' }])

    // A voucher step that fails fails the answer before its free first event leaves.
    const broken = meterStream(tokens(['role', 'a']), {
      store,
      channelId,
      price: 10n,
      isUnit: (t) => t !== 'role',
      after: Promise.reject(new Error('the store is down')),
    })
    await expect(broken.next()).rejects.toThrow('the store is down')
    expect(await store.get(channelId)).toMatchObject({ spent: 10n })
  })

  describe('the first unit paid from the hold taken with the voucher (unitHeld)', () => {
    /** A channel whose voucher of `voucher` also held one unit of `price`; commits wait at a gate. */
    async function held(voucher: bigint, price: bigint) {
      const store = await channel(0n)
      const accepted = await store.acceptVoucher(channelId, voucher, 'v', {
        amount: price,
        holdId: 'unit',
        leaseUntil: Number.MAX_SAFE_INTEGER,
      })
      if (accepted.status !== 'accepted' || accepted.hold?.status !== 'held') {
        throw new Error('no hold')
      }
      const unit = { holdId: 'unit', channel: accepted.hold.channel }
      const steps: string[] = []
      let open: () => void = () => {}
      const gate = new Promise<void>((resolve) => {
        open = resolve
      })
      const gated: ChannelStore = {
        ...store,
        async settleHold(holdId, part) {
          steps.push(`commit ${holdId} ${part.units}`)
          await gate
          return store.settleHold(holdId, part)
        },
        async release(holdId) {
          steps.push(`release ${holdId}`)
          return store.release(holdId)
        },
        async spend(id, amount) {
          steps.push('spend')
          return store.spend(id, amount)
        },
      }
      return { store, gated, unit, steps, open }
    }

    it('hands the first unit on while its commit is under way; the next unit waits for that commit', async () => {
      const { store, gated, unit, steps, open } = await held(100n, 10n)
      const stream = meterStream(tokens(['role', 'a', 'b']), {
        store: gated,
        channelId,
        price: 10n,
        isUnit: (t) => t !== 'role',
        unitHeld: Promise.resolve(unit),
      })
      expect(await stream.next()).toMatchObject({ value: { data: 'role' } })
      // The first unit leaves with its hold's commit started, not done.
      expect(await stream.next()).toMatchObject({ value: { data: 'a' } })
      expect(steps).toEqual(['commit unit 1'])
      expect(await store.get(channelId)).toMatchObject({ spent: 0n, held: 10n })
      // The second waits for it: nothing else is spent before the commit is done.
      const second = stream.next()
      await new Promise((resolve) => setTimeout(resolve, 20))
      expect(steps).toEqual(['commit unit 1'])
      open()
      expect(await second).toMatchObject({ value: { data: 'b' } })
      expect(steps).toEqual(['commit unit 1', 'spend'])
      const rest = await collect(stream)
      expect(rest.map((e) => e.data)).toEqual([
        { channelId, acceptedCumulative: '100', spent: '20', units: '2' },
      ])
      expect(await store.get(channelId)).toMatchObject({ spent: 20n, held: 0n, units: 2n })
    })

    it('ends with the receipt after the commit, when the first unit was the last', async () => {
      const { store, gated, unit, open } = await held(100n, 10n)
      const ending = collect(
        meterStream(tokens(['a']), {
          store: gated,
          channelId,
          price: 10n,
          unitHeld: Promise.resolve(unit),
        }),
      )
      let ended = false
      void ending.then(() => {
        ended = true
      })
      await new Promise((resolve) => setTimeout(resolve, 20))
      expect(ended).toBe(false)
      open()
      expect((await ending).at(-1)?.data).toEqual({
        channelId,
        acceptedCumulative: '100',
        spent: '10',
        units: '1',
      })
      expect(await store.get(channelId)).toMatchObject({ spent: 10n, held: 0n, units: 1n })
    })

    it('gives the hold back when no unit leaves: the source ends or fails first, the buyer leaves', async () => {
      for (const source of [
        tokens(['[DONE]']),
        (async function* () {
          yield 'role'
          throw new Error('upstream failed')
        })(),
      ]) {
        const { store, gated, unit, steps } = await held(100n, 10n)
        const run = collect(
          meterStream(source, {
            store: gated,
            channelId,
            price: 10n,
            isUnit: (t) => t !== '[DONE]' && t !== 'role',
            unitHeld: Promise.resolve(unit),
          }),
        )
        await run.catch(() => {})
        expect(steps).toEqual(['release unit'])
        expect(await store.get(channelId)).toMatchObject({ spent: 0n, held: 0n, units: 0n })
      }
      // The buyer leaves after the free first event, before any unit.
      const { store, gated, unit, steps } = await held(100n, 10n)
      const controller = new AbortController()
      const stream = meterStream(tokens(['role', 'a']), {
        store: gated,
        channelId,
        price: 10n,
        isUnit: (t) => t !== 'role',
        unitHeld: Promise.resolve(unit),
        signal: controller.signal,
      })
      expect(await stream.next()).toMatchObject({ value: { data: 'role' } })
      controller.abort()
      await collect(stream)
      expect(steps).toEqual(['release unit'])
      expect(await store.get(channelId)).toMatchObject({ spent: 0n, held: 0n })
      // And when the reader stops pulling before the first unit.
      const left = await held(100n, 10n)
      const early = meterStream(tokens(['role', 'a']), {
        store: left.gated,
        channelId,
        price: 10n,
        isUnit: (t) => t !== 'role',
        unitHeld: Promise.resolve(left.unit),
      })
      await early.next()
      await early.return(undefined)
      expect(left.steps).toEqual(['release unit'])
    })

    it('spends the first unit as before when the voucher took no hold', async () => {
      const store = await channel(100n)
      const events = await collect(
        meterStream(tokens(['a']), {
          store,
          channelId,
          price: 10n,
          unitHeld: Promise.resolve(undefined),
        }),
      )
      expect(events.at(-1)?.data).toMatchObject({ spent: '10', units: '1' })
    })
  })

  describe('units paid from a window of held units (window)', () => {
    /**
     * A channel with a voucher of `voucher` that held `units` units of 10 (hold `w0`); its steps
     * recorded, each hold's commit waiting at `gate` once it is shut.
     */
    async function windowed(voucher: bigint, units: number) {
      const store = await channel(0n)
      const accepted = await store.acceptVoucher(channelId, voucher, 'v', {
        amount: 10n * BigInt(units),
        holdId: 'w0',
        leaseUntil: Number.MAX_SAFE_INTEGER,
      })
      if (accepted.status !== 'accepted' || accepted.hold?.status !== 'held') {
        throw new Error('no hold')
      }
      const first = { holdId: 'w0', channel: accepted.hold.channel, units }
      const steps: string[] = []
      const gate = { open: Promise.resolve(), release: () => {} }
      const shut = () => {
        gate.open = new Promise((resolve) => {
          gate.release = resolve
        })
      }
      /** Each hold's name in `steps`: `w0` the voucher's, then `w1`, `w2`… */
      const names = new Map([['w0', 'w0']])
      const recorded: ChannelStore = {
        ...store,
        async hold(id, amount, holdId, leaseUntil) {
          names.set(holdId, `w${names.size}`)
          steps.push(`hold ${amount / 10n} (${names.get(holdId)})`)
          return store.hold(id, amount, holdId, leaseUntil)
        },
        async settleHold(holdId, part) {
          steps.push(`commit ${part.units} of ${names.get(holdId)}`)
          await gate.open
          return store.settleHold(holdId, part)
        },
        async release(holdId) {
          steps.push(`release ${names.get(holdId)}`)
          return store.release(holdId)
        },
        async spend(id, amount) {
          steps.push('spend')
          return store.spend(id, amount)
        },
      }
      return { store, recorded, first, steps, shut, gate }
    }
    const options = (store: ChannelStore, first?: object) => ({
      store,
      channelId,
      price: 10n,
      window: 4,
      isUnit: (t: string) => t !== '[DONE]',
      unitHeld: Promise.resolve(first as never),
    })

    it('hands units on from the window with no write of their own; settles what it used at the end, giving the rest back', async () => {
      const { store, recorded, first, steps } = await windowed(100n, 4)
      const stream = meterStream(tokens(['a', 'b', '[DONE]']), options(recorded, first))
      expect(await stream.next()).toMatchObject({ value: { data: 'a' } })
      expect(await stream.next()).toMatchObject({ value: { data: 'b' } })
      expect(steps).toEqual([])
      // Held, not yet spent: the hold is durable before the units leave.
      expect(await store.get(channelId)).toMatchObject({ spent: 0n, held: 40n })
      const rest = await collect(stream)
      expect(steps).toEqual(['commit 2 of w0'])
      expect(rest.at(-1)?.data).toEqual({
        channelId,
        acceptedCumulative: '100',
        spent: '20',
        units: '2',
      })
      expect(await store.get(channelId)).toMatchObject({ spent: 20n, held: 0n, units: 2n })
    })

    it('ends with the channel as its window was settled, with what other answers spent meanwhile', async () => {
      const { store, recorded, first } = await windowed(100n, 4)
      const stream = meterStream(tokens(['a', 'b']), options(recorded, first))
      expect(await stream.next()).toMatchObject({ value: { data: 'a' } })
      // Another answer on the channel spends a unit while this one streams.
      expect((await store.spend(channelId, 10n)).status).toBe('spent')
      const rest = await collect(stream)
      // The buyer keeps its vouchers ahead from the receipt: a receipt behind the channel would
      // have it sign too little.
      expect(rest.at(-1)?.data).toEqual({
        channelId,
        acceptedCumulative: '100',
        spent: '30',
        units: '3',
      })
    })

    it('settles a used-up window as its last unit leaves, and holds the next as a unit needs it, as far as the headroom goes', async () => {
      // 100 of voucher: a window of 4 (40), then one of 4 (40), then 2 left: one of 2.
      const { store, recorded, first, steps } = await windowed(100n, 4)
      const list = Array.from({ length: 10 }, (_, i) => `t${i}`)
      const events = await collect(meterStream(tokens(list), options(recorded, first)))
      expect(events.filter((e) => e.type === 'message')).toHaveLength(10)
      expect(steps).toEqual([
        'commit 4 of w0',
        'hold 4 (w1)',
        'commit 4 of w1',
        'hold 2 (w2)',
        'commit 2 of w2',
      ])
      expect(events.at(-1)?.data).toMatchObject({ spent: '100', units: '10' })
      expect(await store.get(channelId)).toMatchObject({ spent: 100n, held: 0n, units: 10n })
    })

    it('spends a unit alone when the headroom covers fewer than two, asking for a voucher as before', async () => {
      const { store, recorded, first, steps } = await windowed(50n, 4)
      const events = await collect(
        meterStream(tokens(['a', 'b', 'c', 'd', 'e', 'f']), {
          ...options(recorded, first),
          waitMs: 0,
          sleep: async () => {},
        }),
      )
      // 4 from the window, 1 spent alone (10 left), then no voucher for the sixth.
      expect(steps).toEqual(['commit 4 of w0', 'spend', 'spend'])
      expect(events.map((e) => e.type)).toEqual([
        'message',
        'message',
        'message',
        'message',
        'message',
        'payment-need-voucher',
        'payment-receipt',
      ])
      expect(await store.get(channelId)).toMatchObject({ spent: 50n, held: 0n, units: 5n })
    })

    it("waits for a window's settling before the receipt, and before a unit spent alone", async () => {
      const { store, recorded, first, steps, shut, gate } = await windowed(50n, 4)
      shut()
      const stream = meterStream(tokens(['a', 'b', 'c', 'd', 'e']), options(recorded, first))
      for (const token of ['a', 'b', 'c', 'd']) {
        expect(await stream.next()).toMatchObject({ value: { data: token } })
      }
      expect(steps).toEqual(['commit 4 of w0'])
      const fifth = stream.next()
      await new Promise((resolve) => setTimeout(resolve, 20))
      expect(steps).toEqual(['commit 4 of w0'])
      gate.release()
      expect(await fifth).toMatchObject({ value: { data: 'e' } })
      expect(steps).toEqual(['commit 4 of w0', 'spend'])
      expect((await collect(stream)).at(-1)?.data).toMatchObject({ spent: '50', units: '5' })
      // The receipt waits for the last settling too.
      const other = await windowed(100n, 4)
      other.shut()
      let ended = false
      const ending = collect(meterStream(tokens(['a']), options(other.recorded, other.first)))
      void ending.then(() => {
        ended = true
      })
      await new Promise((resolve) => setTimeout(resolve, 20))
      expect(other.steps).toEqual(['commit 1 of w0'])
      expect(ended).toBe(false)
      other.gate.release()
      expect((await ending).at(-1)?.data).toMatchObject({ spent: '10', units: '1' })
      expect(await store.get(channelId)).toMatchObject({ held: 0n })
    })

    it('gives the whole window back when no unit leaves, and settles one half its lease old', async () => {
      const unused = await windowed(100n, 4)
      await collect(meterStream(tokens(['[DONE]']), options(unused.recorded, unused.first)))
      expect(unused.steps).toEqual(['release w0'])
      expect(await unused.store.get(channelId)).toMatchObject({ spent: 0n, held: 0n })

      let clock = 0
      const aged = await windowed(100n, 4)
      const stream = meterStream(tokens(['a', 'b', 'c']), {
        ...options(aged.recorded, aged.first),
        leaseMs: 1_000,
        now: () => clock,
      })
      expect(await stream.next()).toMatchObject({ value: { data: 'a' } })
      clock = 500
      expect(await stream.next()).toMatchObject({ value: { data: 'b' } })
      expect(aged.steps).toEqual(['commit 1 of w0', 'hold 4 (w1)'])
      await collect(stream)
      expect(aged.steps).toEqual(['commit 1 of w0', 'hold 4 (w1)', 'commit 2 of w1'])
      expect(await aged.store.get(channelId)).toMatchObject({ spent: 30n, held: 0n, units: 3n })
    })
  })

  describe('in batches (readAhead)', () => {
    /** A store that counts the spends it is asked for at once. */
    function counting(inner: ChannelStore) {
      const counts = { inFlight: 0, most: 0, spends: 0 }
      const store: ChannelStore = {
        ...inner,
        async spend(...args) {
          counts.spends++
          counts.inFlight++
          counts.most = Math.max(counts.most, counts.inFlight)
          try {
            return await inner.spend(...args)
          } finally {
            counts.inFlight--
          }
        },
      }
      return { store, counts }
    }

    it('spends the units the source has ready together, and hands them on as one batch', async () => {
      const { store, counts } = counting(await channel(1_000n))
      const batches: MeteredEvent<string>[][] = []
      for await (const batch of meterBatches(tokens(['a', 'b', 'c', 'd', 'e', '[DONE]']), {
        store,
        channelId,
        price: 10n,
        isUnit: (t) => t !== '[DONE]',
        readAhead: 32,
      })) {
        batches.push(batch)
      }
      // The first unit alone (the time to the first token), then the rest at once.
      expect(batches.map((b) => b.map((e) => (e.type === 'message' ? e.data : e.type)))).toEqual([
        ['a'],
        ['b', 'c', 'd', 'e', '[DONE]'],
        ['payment-receipt'],
      ])
      expect(counts.most).toBe(4)
      expect(counts.spends).toBe(5)
      expect(await store.get(channelId)).toMatchObject({ spent: 50n, units: 5n, held: 0n })
    })

    it('hands the free events before the first unit on with it, when it is ready: one round, the unit still first of its kind', async () => {
      const { store, counts } = counting(await channel(1_000n))
      const shape = async (source: AsyncIterable<string>) => {
        const out: string[][] = []
        for await (const batch of meterBatches(source, {
          store,
          channelId,
          price: 10n,
          isUnit: (t) => t !== 'role' && t !== 'usage',
          readAhead: 32,
        })) {
          out.push(batch.map((e) => (e.type === 'message' ? e.data : e.type)))
        }
        return out
      }
      // The role chunk and the first token arrive together: they leave together.
      expect(await shape(tokens(['role', 'usage', 'a', 'b', 'c']))).toEqual([
        ['role', 'usage', 'a'],
        ['b', 'c'],
        ['payment-receipt'],
      ])
      // The first token is late: the role chunk leaves without waiting for it.
      async function* late() {
        yield 'role'
        await new Promise((resolve) => setTimeout(resolve, 20))
        yield 'a'
        yield 'b'
      }
      expect(await shape(late())).toEqual([['role'], ['a'], ['b'], ['payment-receipt']])
      expect(counts.spends).toBe(5)
    })

    it('reads ahead on a runtime without setImmediate (Web-standard)', async () => {
      vi.stubGlobal('setImmediate', undefined)
      vi.resetModules()
      try {
        const fresh = await import('./meter.js')
        const store = await channel(1_000n)
        const batches: number[] = []
        for await (const batch of fresh.meterBatches(tokens(['a', 'b', 'c']), {
          store,
          channelId,
          price: 10n,
          readAhead: 32,
        })) {
          batches.push(batch.length)
        }
        expect(batches).toEqual([1, 2, 1])
        expect(await store.get(channelId)).toMatchObject({ spent: 30n })
      } finally {
        vi.unstubAllGlobals()
        vi.resetModules()
      }
    })

    it('spends only what the headroom covers: the rest waits for a voucher, and is never charged unsent', async () => {
      const store = await channel(30n)
      const stops: MeterStop[] = []
      const sent: string[] = []
      const named: string[] = []
      for await (const batch of meterBatches(
        tokens(['a', 'b', 'c', 'd', 'e']),
        { store, channelId, price: 10n, readAhead: 32, waitMs: 0, sleep: async () => {} },
        (stop) => stops.push(stop),
      )) {
        for (const event of batch) {
          if (event.type === 'message') sent.push(event.data)
          else named.push(event.type)
        }
      }
      expect(sent).toEqual(['a', 'b', 'c'])
      expect(named).toEqual(['payment-need-voucher', 'payment-receipt'])
      expect(stops).toEqual([{ reason: 'no_voucher', required: 40n }])
      expect(await store.get(channelId)).toMatchObject({ spent: 30n, units: 3n })
    })

    it('hands on the units spent before a store failure, then fails', async () => {
      const inner = await channel(1_000n)
      let calls = 0
      const store: ChannelStore = {
        ...inner,
        async spend(...args) {
          calls++
          if (calls === 4) throw new Error('the store is down')
          return inner.spend(...args)
        },
      }
      const sent: string[] = []
      const run = async () => {
        for await (const batch of meterBatches(tokens(['a', 'b', 'c', 'd', 'e']), {
          store,
          channelId,
          price: 10n,
          readAhead: 32,
        })) {
          for (const event of batch) if (event.type === 'message') sent.push(event.data)
        }
      }
      await expect(run()).rejects.toThrow('the store is down')
      // 'a' alone, then four spends at once, of which one failed: three more paid and sent.
      expect(sent).toEqual(['a', 'b', 'c', 'd'])
      expect(await inner.get(channelId)).toMatchObject({ spent: 40n, units: 4n })
    })
  })
})
