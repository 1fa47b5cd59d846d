/**
 * The seller's settler on the local ledger: settlement on the schedule takes what was spent (never
 * the voucher's whole amount), a buyer's close request is settled at once and stops further calls,
 * and the buyer withdraws the rest after the grace period — every unit of money accounted for (the
 * test ledger checks conservation after every transaction).
 */
import { describe, expect, it } from 'vitest'
import { MIN_GRACE_MS } from '../testing/ledger/channel.js'
import { useCheckedLedger } from '../testing/ledger/testSetup.js'
import { buildRequestClose, buildWithdraw, readChannel } from './channelTx.js'
import { type ChannelSettlement, createSessionSettler } from './settler.js'
import { sessionBuyer, useSessionSeller } from './testing/sessionSeller.js'

const chain = useCheckedLedger()
const seller = useSessionSeller(chain)

async function execute(
  signer: ReturnType<typeof chain.createTestWallet>,
  built: Promise<{ build(o: object): Promise<Uint8Array> }>,
) {
  const bytes = await (await built).build({ client: chain.client })
  const { signature } = await signer.signTransaction(bytes)
  const result = await chain.client.core.executeTransaction({
    transaction: bytes,
    signatures: [signature],
  })
  expect(result.$kind).toBe('Transaction')
}

describe('createSessionSettler', () => {
  it('settles what was spent on schedule, settles at once on a close request, and the buyer withdraws the rest', async () => {
    const { wallet, sessions } = await sessionBuyer(chain)
    const told: ChannelSettlement[] = []
    const settler = createSessionSettler({
      client: chain.client,
      signer: seller.payee,
      package: chain.modulesPackage,
      store: seller.channels,
      schedule: { amount: 30_000n },
      onSettled: (settlement) => told.push(settlement),
    })
    const payee = seller.payee.toSuiAddress()
    const payeeBefore = await chain.usdcBalance(payee)

    for (let i = 0; i < 5; i++)
      expect((await sessions.fetch(`${seller.base}/call`)).status).toBe(200)
    const [channel] = await sessions.list()
    const channelId = channel?.channelId ?? ''
    // The buyer signed 32 calls ahead in its book; the seller takes only the 5 served.
    const first = await settler.runOnce()
    expect(first).toEqual([
      expect.objectContaining({ channelId, settled: 50_000n, trigger: 'schedule' }),
    ])
    expect((await readChannel(chain.client, channelId)).settled).toBe(50_000n)
    expect((await chain.usdcBalance(payee)) - payeeBefore).toBe(50_000n)

    for (let i = 0; i < 2; i++)
      expect((await sessions.fetch(`${seller.base}/call`)).status).toBe(200)
    // 20 000 unsettled: below the schedule's amount, nothing to do.
    expect(await settler.runOnce()).toEqual([])

    // The buyer asks to close on the ledger: the next pass settles what was spent, at once.
    const ref = await readChannel(chain.client, channelId)
    await execute(
      wallet,
      buildRequestClose({
        client: chain.client,
        package: chain.modulesPackage,
        sender: wallet.toSuiAddress(),
        channel: ref,
      }),
    )
    expect(await settler.runOnce()).toEqual([
      expect.objectContaining({ channelId, settled: 70_000n, trigger: 'close_requested' }),
    ])
    expect(await seller.channels.get(channelId)).toMatchObject({
      state: 'closing',
      settled: 70_000n,
    })
    // Each settlement told as made: who paid, and what each transaction moved.
    const payer = wallet.toSuiAddress()
    expect(told).toEqual([
      expect.objectContaining({ channelId, payer, settled: 50_000n, amount: 50_000n }),
      expect.objectContaining({ channelId, payer, settled: 70_000n, amount: 20_000n }),
    ])
    // A closing channel takes no more calls.
    expect((await sessions.fetch(`${seller.base}/call`)).status).toBe(410)

    // After the grace period the buyer takes the rest back: 5 USDC less the 70 000 served.
    chain.advanceClock(Number(MIN_GRACE_MS) + 1)
    await execute(
      wallet,
      buildWithdraw({
        client: chain.client,
        package: chain.modulesPackage,
        sender: wallet.toSuiAddress(),
        channel: ref,
      }),
    )
    expect(await chain.usdcBalance(wallet.toSuiAddress())).toBe(5_000_000n - 70_000n)
    expect((await chain.usdcBalance(payee)) - payeeBefore).toBe(70_000n)
  })
})
