import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ed25519 } from '@noble/curves/ed25519.js'
import { describe, expect, it } from 'vitest'
import { verifyVoucher } from '../session/voucher.js'
import { type ChannelEntry, createChannelBook } from './channelBook.js'
import { createChannelVouchers } from './channelVouchers.js'

const turn = () => new Promise((resolve) => setImmediate(resolve))
const address = (digit: string) => `0x${digit.repeat(64)}`

async function setUp() {
  const book = createChannelBook(join(mkdtempSync(join(tmpdir(), 'vouchers-')), 'sessions.json'))
  const sessionKey = '7'.repeat(64)
  const entry: ChannelEntry = {
    channelId: address('c'),
    url: 'http://127.0.0.1/route',
    payer: address('1'),
    payee: address('2'),
    coinType: `${address('3')}::usdc::USDC`,
    package: address('4'),
    registry: address('5'),
    network: 'localnet',
    price: '10',
    salt: '6'.repeat(64),
    sessionKey,
    gracePeriodMs: 900_000,
    deposit: '1000000',
    signed: '0',
    spent: '0',
    state: 'open',
    openedAt: 0,
  }
  await book.put(entry)
  const vouchers = createChannelVouchers(book)
  const publicKey = ed25519.getPublicKey(Buffer.from(sessionKey, 'hex'))
  /** A voucher for the next amount, checked against the session key. */
  const next = async (price?: bigint) => {
    const { amount } = await vouchers.nextAmount(entry, price === undefined ? {} : { price })
    const voucher = await vouchers.voucher(entry, amount, 10n)
    const valid = verifyVoucher(
      {
        channelId: entry.channelId,
        cumulativeAmount: BigInt(voucher.cumulativeAmount),
        signature: Buffer.from(voucher.signature.slice(2), 'hex'),
      },
      publicKey,
    )
    return { amount, cumulative: voucher.cumulativeAmount, valid }
  }
  return { next }
}

describe('buyer vouchers', () => {
  it('signs each amount it sends, whether its signature was made ahead or not', async () => {
    const { next } = await setUp()
    // One after another, a turn apart: the next amount's signature is made ahead.
    for (const amount of [10n, 20n, 30n]) {
      expect(await next()).toEqual({ amount, cumulative: amount.toString(), valid: true })
      await turn()
    }
    // Another step than the one signed ahead (40): the amount sent is signed for itself.
    expect(await next(25n)).toEqual({ amount: 55n, cumulative: '55', valid: true })
    await turn()
    // Two calls in the same turn: no signature ahead is used for an amount it was not made for.
    const both = await Promise.all([next(), next()])
    expect(both).toEqual([
      { amount: 65n, cumulative: '65', valid: true },
      { amount: 75n, cumulative: '75', valid: true },
    ])
    await turn()
    expect(await next()).toEqual({ amount: 85n, cumulative: '85', valid: true })
  })
})
