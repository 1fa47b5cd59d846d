/**
 * The session buyer against a real seller on the local ledger: many calls over one channel with one
 * ledger transaction (the open), the deposit counted against the wallet's limits when made and
 * what comes back at close restored, a top-up when the deposit runs out, the book surviving a
 * restart, and an offer on an unpinned package refused before anything is signed.
 */
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { readChannel } from '../session/channelTx.js'
import { pinnedBuyer, useSessionSeller } from '../session/testing/sessionSeller.js'
import { useCheckedLedger } from '../testing/ledger/testSetup.js'
import { createChannelBook } from './channelBook.js'
import { createWalletLimits } from './limits.js'
import { createSessionFetch, type SessionFetchOptions } from './sessions.js'

const chain = useCheckedLedger()
const seller = useSessionSeller(chain)
let folder: string
beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'tollgate-sessions-'))
})

function buyer(name: string, extra: Partial<SessionFetchOptions> = {}) {
  const { wallet, options: pinned } = pinnedBuyer(chain)
  const book = createChannelBook(join(folder, `${name}.json`))
  const limits = createWalletLimits({ file: join(folder, `${name}-spending.json`) })
  const options: SessionFetchOptions = {
    ...pinned,
    maxDeposit: 1_000_000n,
    limits,
    book,
    ...extra,
  }
  return { wallet, book, limits, options, sessions: createSessionFetch(options) }
}

describe('createSessionFetch', () => {
  it('asks again to close while a call is still running on the channel', async () => {
    const b = buyer('closing')
    expect((await b.sessions.fetch(`${seller.base}/call`)).status).toBe(200)
    const [channel] = await b.sessions.list()
    // A call in flight holds its price: the seller refuses the close (settlement_pending) until
    // the call is done, and the buyer asks again.
    const running = b.sessions.fetch(`${seller.base}/slow`)
    await new Promise((resolve) => setTimeout(resolve, 100))
    const closed = await b.sessions.close(channel?.channelId ?? '')
    expect((await running).status).toBe(200)
    expect(closed).toMatchObject({ spent: 20_000n })
  })

  it('pays many calls over one channel: one ledger transaction, the deposit counted, the rest restored at close', async () => {
    const b = buyer('many')
    const servedBefore = seller.served
    for (let i = 0; i < 10; i++) {
      const response = await b.sessions.fetch(`${seller.base}/call`)
      expect(response.status).toBe(200)
    }
    expect(seller.served - servedBefore).toBe(10)
    const [channel] = await b.sessions.list()
    // The book's mark is written 32 calls ahead: at or above every amount signed.
    expect(channel).toMatchObject({ state: 'open', signed: String(10_000 + 31 * 10_000) })
    // The default deposit is 100 calls: counted against the wallet's limits when made.
    expect(await b.limits.spentToday()).toBe(1_000_000n)
    expect(await chain.usdcBalance(b.wallet.toSuiAddress())).toBe(5_000_000n - 1_000_000n)

    const closed = await b.sessions.close(channel?.channelId ?? '')
    expect(closed).toMatchObject({ spent: 100_000n, refunded: 900_000n })
    expect(await chain.usdcBalance(b.wallet.toSuiAddress())).toBe(5_000_000n - 100_000n)
    expect(await b.limits.spentToday()).toBe(100_000n)
    expect((await b.sessions.list())[0]).toMatchObject({ state: 'closed', spent: '100000' })
  })

  it('concurrent first calls to a seller open one channel between them', async () => {
    const b = buyer('concurrent')
    const responses = await Promise.all(
      [1, 2, 3].map(() => b.sessions.fetch(`${seller.base}/call`)),
    )
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200])
    expect(await b.sessions.list()).toHaveLength(1)
    expect(await chain.usdcBalance(b.wallet.toSuiAddress())).toBe(5_000_000n - 1_000_000n)
  })

  it('tops the channel up when its deposit runs out, within maxDeposit', async () => {
    const b = buyer('topup', { deposit: (price) => price * 2n, maxDeposit: 40_000n })
    for (let i = 0; i < 4; i++) {
      expect((await b.sessions.fetch(`${seller.base}/call`)).status).toBe(200)
    }
    const [channel] = await b.sessions.list()
    expect(channel).toMatchObject({ deposit: '40000', signed: '40000' })
    expect((await readChannel(chain.client, channel?.channelId ?? '')).deposited).toBe(40_000n)
    // Beyond maxDeposit: refused by the buyer, nothing signed.
    await expect(b.sessions.fetch(`${seller.base}/call`)).rejects.toMatchObject({
      code: 'LIMIT_PER_SESSION',
    })
    expect((await b.sessions.list())[0]?.signed).toBe('50000')
  })

  it('tops up one at a time when concurrent calls all find the deposit short, and serves them all', async () => {
    const b = buyer('topup-concurrent', { deposit: (price) => price * 2n })
    expect((await b.sessions.fetch(`${seller.base}/call`)).status).toBe(200)
    // Eight calls at once on a deposit of two: most are refused above it, and each tops up. Two
    // top-ups built at once would take the same coins, and the ledger would refuse one.
    const responses = await Promise.all(
      Array.from({ length: 8 }, () => b.sessions.fetch(`${seller.base}/call`)),
    )
    expect(responses.map((r) => r.status)).toEqual(Array(8).fill(200))
    const [channel] = await b.sessions.list()
    const onLedger = await readChannel(chain.client, channel?.channelId ?? '')
    expect(onLedger.deposited).toBe(BigInt(channel?.deposit ?? 0))
    expect(onLedger.deposited).toBeGreaterThanOrEqual(90_000n)
    const topUps = channel?.topUps ?? []
    // Each top-up at least doubles the deposit or reaches what was asked: a few, not one per call.
    expect(topUps.length).toBeGreaterThan(0)
    expect(topUps.length).toBeLessThan(8)
    expect(await b.limits.spentToday()).toBe(onLedger.deposited)
  })

  it('restores what a close gives back across the open and its top-ups', async () => {
    const b = buyer('topup-close', { deposit: (price) => price * 2n, maxDeposit: 60_000n })
    for (let i = 0; i < 3; i++) {
      expect((await b.sessions.fetch(`${seller.base}/call`)).status).toBe(200)
    }
    const [channel] = await b.sessions.list()
    // Opened with 20 000, topped up by 20 000 for the third call: both counted when made.
    expect(channel).toMatchObject({ deposit: '40000' })
    expect(await b.limits.spentToday()).toBe(40_000n)
    const closed = await b.sessions.close(channel?.channelId ?? '')
    expect(closed).toMatchObject({ spent: 30_000n, refunded: 10_000n })
    expect(await b.limits.spentToday()).toBe(30_000n)
  })

  it('continues a channel after a restart from the book alone, and closes it', async () => {
    const b = buyer('restart')
    expect((await b.sessions.fetch(`${seller.base}/call`)).status).toBe(200)
    const again = createSessionFetch({ ...b.options, book: createChannelBook(b.book.file) })
    expect((await again.fetch(`${seller.base}/call`)).status).toBe(200)
    const [channel] = await again.list()
    expect(await again.list()).toHaveLength(1)
    // After the restart, amounts resume above the mark (320 000), never below it.
    expect(channel).toMatchObject({ signed: String(330_000 + 31 * 10_000) })
    expect(await again.close(channel?.channelId ?? '')).toMatchObject({ spent: 20_000n })
  })

  it('refuses an offer on a package it has not pinned before signing anything', async () => {
    const b = buyer('unpinned', {
      pinned: [
        { network: 'mainnet', package: `0x${'5'.repeat(64)}`, registry: `0x${'6'.repeat(64)}` },
      ],
    })
    await expect(b.sessions.fetch(`${seller.base}/call`)).rejects.toMatchObject({
      code: 'terms_mismatch',
    })
    expect(await b.sessions.list()).toEqual([])
    expect(await chain.usdcBalance(b.wallet.toSuiAddress())).toBe(5_000_000n)
  })

  it('withdraws on its own when the seller does not close: asks, waits the grace period, takes what is left', async () => {
    const b = buyer('withdraw')
    expect((await b.sessions.fetch(`${seller.base}/call`)).status).toBe(200)
    const [channel] = await b.sessions.list()
    const channelId = channel?.channelId ?? ''
    const asked = await b.sessions.withdraw(channelId)
    expect(asked.status).toBe('requested')
    expect((await b.sessions.withdraw(channelId)).status).toBe('waiting')
    chain.advanceClock(15 * 60_000 + 1)
    const done = await b.sessions.withdraw(channelId)
    // No settler ran: the seller took nothing, the whole deposit comes back.
    expect(done).toMatchObject({ status: 'withdrawn', refunded: 1_000_000n })
    expect((await b.sessions.list())[0]?.state).toBe('closed')
    expect(await b.limits.spentToday()).toBe(0n)
  })
})
