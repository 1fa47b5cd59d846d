/**
 * Metered streams waiting for a voucher, woken when one reaches this process. Each stream sleeps
 * through a sleeper of its own that remembers the last voucher it knew of: a voucher that arrived
 * after the stream last looked (between a refused hold and the sleep that follows it) ends the next
 * sleep at once instead of being missed until the poll comes round.
 *
 * @module
 */

/** The waits of one session method's streams. */
export type VoucherWaits = {
  /** A voucher for the channel was taken: wakes its sleepers, and tells the others it came. */
  wake(channelId: string): void
  /**
   * A sleep for one stream on the channel: `ms`, or less when a voucher arrives; at once when one
   * arrived since the sleeper was made or last slept. `done()` ends the stream's interest.
   */
  sleeper(channelId: string): { sleep(ms: number): Promise<void>; done(): void }
}

/**
 * Creates the waits.
 *
 * @example
 * ```ts
 * const waits = createVoucherWaits()
 * const { sleep, done } = waits.sleeper(channelId) // meterStream's `sleep`
 * waits.wake(channelId) // when a voucher is taken
 * ```
 */
export function createVoucherWaits(): VoucherWaits {
  /** Per channel with a stream: how many vouchers arrived, and the sleepers to wake. */
  const channels = new Map<
    string,
    { streams: number; vouchers: number; waiting: Set<() => void> }
  >()
  return {
    wake(channelId) {
      const channel = channels.get(channelId)
      if (channel === undefined) return
      channel.vouchers++
      const woken = [...channel.waiting]
      channel.waiting.clear()
      for (const resume of woken) resume()
    },
    sleeper(channelId) {
      let channel = channels.get(channelId)
      if (channel === undefined) {
        channel = { streams: 0, vouchers: 0, waiting: new Set() }
        channels.set(channelId, channel)
      }
      const mine = channel
      mine.streams++
      let known = mine.vouchers
      let ended = false
      return {
        sleep(ms) {
          if (mine.vouchers !== known) {
            known = mine.vouchers
            return Promise.resolve()
          }
          return new Promise<void>((resolve) => {
            const resume = () => {
              clearTimeout(timer)
              mine.waiting.delete(resume)
              known = mine.vouchers
              resolve()
            }
            const timer = setTimeout(resume, ms)
            mine.waiting.add(resume)
          })
        },
        done() {
          if (ended) return
          ended = true
          mine.streams--
          if (mine.streams === 0) channels.delete(channelId)
        },
      }
    },
  }
}
