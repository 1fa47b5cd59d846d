/**
 * A buyer that closes its channel as soon as its last call's answer has arrived. The seller commits
 * a call's hold into `spent` after the answer is handed over, so a close that arrives first finds
 * the call still held: here the seller's channel store takes 200 ms to commit, as a busy
 * PostgreSQL can, and the close must still succeed (the buyer asks again), not end refused as
 * `settlement_pending`. Found by `npm run bench:session`, whose close right after its last call
 * failed so on the gateway.
 */
import { describe, expect, it } from 'vitest'
import { type ChannelStore, createMemoryChannelStore } from '../session/channelStore.js'
import { sessionBuyer, useSessionSeller } from '../session/testing/sessionSeller.js'
import { useCheckedLedger } from '../testing/ledger/testSetup.js'

/** Channel books in memory whose commits take 200 ms. */
function slowCommits(): ChannelStore {
  const books = createMemoryChannelStore()
  return {
    ...books,
    async commit(holdId) {
      await new Promise((resolve) => setTimeout(resolve, 200))
      return books.commit(holdId)
    },
  }
}

const chain = useCheckedLedger()
const seller = useSessionSeller(chain, '0.01', slowCommits)

describe('a close right after the last call', () => {
  // The seller refuses the first close (`settlement_pending`: the hold is not committed yet); the
  // buyer asks again and the close goes through once the call is committed.
  it('closes the channel once the call is committed', async () => {
    const { sessions } = await sessionBuyer(chain)
    const response = await sessions.fetch(`${seller.base}/call`)
    expect(response.status).toBe(200)
    await response.arrayBuffer()
    const [channel] = await sessions.list()
    await expect(sessions.close(channel?.channelId ?? '')).resolves.toMatchObject({
      spent: 10_000n,
    })
  })
})
