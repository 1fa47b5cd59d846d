import { describe, expect, it } from 'vitest'
import { createVoucherWaits } from './voucherWaits.js'

const elapsed = async (run: () => Promise<void>) => {
  const started = performance.now()
  await run()
  return performance.now() - started
}

describe('createVoucherWaits', () => {
  it('sleeps the whole time when no voucher comes', async () => {
    const { sleep } = createVoucherWaits().sleeper('0x1')
    expect(await elapsed(() => sleep(120))).toBeGreaterThanOrEqual(100)
  })

  it('wakes a sleeping stream when a voucher for its channel arrives, not for another', async () => {
    const waits = createVoucherWaits()
    const mine = waits.sleeper('0x1')
    const other = waits.sleeper('0x2')
    const sleeping = elapsed(() => mine.sleep(5_000))
    const elsewhere = elapsed(() => other.sleep(150))
    waits.wake('0x1')
    expect(await sleeping).toBeLessThan(1_000)
    expect(await elsewhere).toBeGreaterThanOrEqual(130)
  })

  it('does not miss a voucher that arrived before the stream went to sleep', async () => {
    const waits = createVoucherWaits()
    const { sleep } = waits.sleeper('0x1')
    // The voucher lands between the stream's refused hold and its sleep: the sleep ends at once.
    waits.wake('0x1')
    expect(await elapsed(() => sleep(5_000))).toBeLessThan(1_000)
    // Once seen, the next sleep is a whole one again.
    expect(await elapsed(() => sleep(120))).toBeGreaterThanOrEqual(100)
  })

  it('forgets a channel when its last stream is done', async () => {
    const waits = createVoucherWaits()
    const first = waits.sleeper('0x1')
    first.done()
    first.done()
    waits.wake('0x1')
    // A stream that starts later knows nothing of a voucher taken before it.
    const { sleep } = waits.sleeper('0x1')
    expect(await elapsed(() => sleep(120))).toBeGreaterThanOrEqual(100)
  })
})
